// Fleet serve's pods/log, pods/exec, pods/attach and pods/portforward: proxied to the pod's node over its authenticated port,
// as kube-apiserver proxies them to a kubelet (/containerLogs/…, /exec/…, /attach/…, /portForward/…), the node's address from its record in etcd.
// Exec's, attach's and port forward's WebSockets are relayed message by message in the subprotocol the client asked for.
//
// Decision: this file is the one user of the WebSocket client global (Bun's, which takes headers and a CA):
// fleet serve runs as the compiled binary, and the node's exec needs a bearer token or a client certificate.
import { Hono, type Context } from "hono";
import type { Pod, V1Node } from "../../api/types.ts";
import { negotiateProtocol, CHANNEL_PROTOCOLS } from "../../container/channel-protocol.ts";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import { upgradeToWebSocket, type ServerSocket } from "../../platform/websocket.ts";
import type { EtcdClient } from "../../sources/etcd-client.ts";
import { httpError } from "../server-support.ts";
import { FLEET_PLACED } from "./fleet-pods.ts";
import { chooseProtocol } from "./portforward-routes.ts";
import type { PodCache } from "./watch.ts";

/** How fleet serve authenticates to nodes and checks their serving certificates. */
export interface KubeletClientCredentials {
  /** PEM of the CA the nodes' serving certificates are signed by (--kubelet-certificate-authority). */
  ca?: string;
  /** A client certificate and key (--kubelet-client-certificate / --kubelet-client-key). */
  cert?: string;
  key?: string;
  /** A bearer token (--kubelet-token-file). */
  token?: string;
}

export interface FleetProxyDeps {
  cache: PodCache;
  client: Pick<EtcdClient, "get">;
  credentials: KubeletClientCredentials;
  /** Connect to every node at this address instead of its record's InternalIP (nodes sharing one host). */
  addressOverride?: string;
}

/** The node's authenticated port as https://ip:port, from its record. */
export function nodeUrl(node: V1Node, override?: string): string | undefined {
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  const address = override || node.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
  if (!port || !address) return undefined;
  return `https://${address.includes(":") ? `[${address}]` : address}:${port}`;
}

/** pods/exec's stream options (stdin, stdout, stderr, tty) → the kubelet's (input, output, error, tty), as
 *  kube-apiserver's ExecLocation translates them; the command's arguments pass as they are. */
const EXEC_PARAMS: Record<string, string> = { stdin: "input", stdout: "output", stderr: "error", tty: "tty" };

export function execQuery(query: URLSearchParams): string {
  const params = new URLSearchParams();
  for (const [key, value] of query) {
    if (key === "command") params.append(key, value);
    else if (EXEC_PARAMS[key] && (value === "true" || value === "1")) params.set(EXEC_PARAMS[key]!, "1");
  }
  return `?${params}`;
}

export function createFleetProxyRoutes(deps: FleetProxyDeps): Hono {
  const { credentials } = deps;
  const headers = (): Record<string, string> =>
    credentials.token ? { authorization: `Bearer ${credentials.token}` } : {};
  const tls = { ...(credentials.ca ? { ca: credentials.ca } : {}), cert: credentials.cert, key: credentials.key };

  /** The pod, its node's URL, the name the node knows it by and the container asked for (or its only one; none for
   *  a port forward, which is to the pod). */
  const target = async (c: Context, perContainer = true) => {
    const { namespace, name } = c.req.param() as Record<"namespace" | "name", string>;
    const pod: Pod | undefined = deps.cache.get(namespace, name);
    if (!pod) throw httpError(404, `pods "${name}" not found`);
    const containers = pod.spec.containers.map((x) => x.name);
    const container = c.req.query("container") ?? (containers.length === 1 ? containers[0] : undefined);
    if (perContainer && !container)
      throw httpError(
        400,
        `a container name must be specified for pod ${name}, choose one of: [${containers.join(" ")}]`,
      );
    const nodeName = pod.spec.nodeName ?? "";
    const { entry } = await deps.client.get(fleetKeys.node(nodeName));
    const url = entry ? nodeUrl(JSON.parse(entry.value) as V1Node, deps.addressOverride) : undefined;
    if (!url)
      throw httpError(
        503,
        `node "${nodeName}" of pod ${namespace}/${name} has no address in etcd (its lease expired, or it never registered)`,
      );
    const placed = pod.metadata.annotations?.[FLEET_PLACED]?.split("/")[1] ?? name;
    return { url, path: perContainer ? `${namespace}/${placed}/${container}` : `${namespace}/${placed}`, nodeName };
  };
  /** The query without `container` (the node takes it in the path). */
  const query = (c: Context) => {
    const params = new URL(c.req.url).searchParams;
    params.delete("container");
    const text = params.toString();
    return text ? `?${text}` : "";
  };

  /** The client's WebSocket relayed message by message to the node's, in the subprotocol the client asked for. */
  const relay = (upstreamUrl: string, protocol: string) => {
    let upstream: WebSocket | undefined;
    const pending: Uint8Array[] = [];
    return upgradeToWebSocket(
      new Response("streams need a WebSocket server: run the compiled binary", { status: 501 }),
      {
        protocol,
        open(socket: ServerSocket) {
          // The subprotocol goes as a header: Bun's `protocols` refuses kubectl's "SPDY/3.1+portforward.k8s.io" (a "/"
          // is no token character), which kube-apiserver and the kubelet accept.
          const ws = new WebSocket(upstreamUrl, {
            headers: { ...headers(), "sec-websocket-protocol": protocol },
            tls,
          } as never);
          ws.binaryType = "arraybuffer";
          upstream = ws;
          ws.onopen = () => {
            for (const message of pending.splice(0)) ws.send(message as Uint8Array<ArrayBuffer>);
          };
          ws.onmessage = (event) =>
            void socket.send(typeof event.data === "string" ? event.data : new Uint8Array(event.data as ArrayBuffer));
          ws.onclose = (event) => socket.close(event.code === 1005 ? 1000 : event.code, event.reason);
          ws.onerror = () => socket.close(1011, `cannot reach the node at ${new URL(upstreamUrl).host}`);
        },
        message(data) {
          if (upstream?.readyState === WebSocket.OPEN) upstream.send(data as Uint8Array<ArrayBuffer>);
          else pending.push(data);
        },
        close() {
          upstream?.close();
        },
      },
    );
  };

  const app = new Hono();
  app.get("/api/v1/namespaces/:namespace/pods/:name/log", async (c) => {
    const { url, path, nodeName } = await target(c);
    const response = await fetch(`${url}/containerLogs/${path}${query(c)}`, {
      headers: headers(),
      signal: c.req.raw.signal,
      tls,
    } as RequestInit).catch((error: Error) => {
      throw httpError(502, `cannot reach node "${nodeName}" at ${url}: ${error.message}`);
    });
    return new Response(response.body, {
      status: response.status,
      headers: { "content-type": response.headers.get("content-type") ?? "text/plain" },
    });
  });
  // exec and attach: one relay, to the node's /exec or /attach (attach has no command; the node takes the tty from the
  // container's spec, as the Go kubelet does).
  const stream = (kind: "exec" | "attach") => async (c: Context) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
      throw httpError(
        400,
        `${c.req.path} is proxied over WebSocket only: send Upgrade: websocket with Sec-WebSocket-Protocol ${CHANNEL_PROTOCOLS.join(" or ")} (SPDY is not served)`,
      );
    const protocol = negotiateProtocol(c.req.header("sec-websocket-protocol") ?? null);
    if (!protocol)
      throw httpError(
        400,
        `none of the requested subprotocols [${c.req.header("sec-websocket-protocol") ?? ""}] is supported: use ${CHANNEL_PROTOCOLS.join(" or ")}`,
      );
    const { url, path } = await target(c);
    return relay(
      `${url.replace(/^https/, "wss")}/${kind}/${path}${execQuery(new URL(c.req.url).searchParams)}`,
      protocol,
    );
  };
  for (const kind of ["exec", "attach"] as const) {
    app.get(`/api/v1/namespaces/:namespace/pods/:name/${kind}`, stream(kind));
    app.post(`/api/v1/namespaces/:namespace/pods/:name/${kind}`, stream(kind));
  }
  // kubectl port-forward: its SPDY-over-WebSocket tunnel (or a client library's channel protocol) relayed to the
  // node's /portForward, `ports` renamed `port` as kube-apiserver's PortForwardLocation does.
  const portForward = async (c: Context) => {
    // The node's own choice and wording: the same subprotocols are served at both ends of the relay.
    const protocol = chooseProtocol(c);
    const { url, path } = await target(c, false);
    const query = new URLSearchParams();
    for (const ports of [...(c.req.queries("ports") ?? []), ...(c.req.queries("port") ?? [])])
      query.append("port", ports);
    const text = query.toString();
    return relay(`${url.replace(/^https/, "wss")}/portForward/${path}${text ? `?${text}` : ""}`, protocol);
  };
  app.get("/api/v1/namespaces/:namespace/pods/:name/portforward", portForward);
  app.post("/api/v1/namespaces/:namespace/pods/:name/portforward", portForward);
  return app;
}
