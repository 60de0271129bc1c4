// The kubelet's port forward route, GET /portForward/{namespace}/{pod} (pkg/kubelet/server's), over WebSocket:
// kubectl's SPDY tunnel (SPDY/3.1+portforward.k8s.io) or the client libraries' channel protocol with ?port=. Each
// forwarded connection goes to the pod's newest ready sandbox through the runtime's PortForward.
import { Hono, type Context } from "hono";
import type { Pod } from "../../api/types.ts";
import type { Runtime } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import { upgradeToWebSocket } from "../../platform/websocket.ts";
import { httpError, status } from "../server-support.ts";
import { SPDY_TUNNEL_PROTOCOL, spdyPortForwardSession } from "./portforward-spdy.ts";
import { PORT_FORWARD_PROTOCOLS, parsePorts, webSocketPortForwardSession } from "./portforward-websocket.ts";

export interface PortForwardRouteDeps {
  runtime: Runtime;
  pods(): Pod[];
  log?: Logger;
}

const SERVED = [SPDY_TUNNEL_PROTOCOL, ...PORT_FORWARD_PROTOCOLS];

/** What node:http (node, deno) answers instead: it cannot upgrade to WebSocket. */
const notUpgradable = () =>
  new Response(
    JSON.stringify(
      status(501, "NotImplemented", "port forwarding needs a WebSocket server: run the compiled binary (bun)"),
    ),
    { status: 501, headers: { "content-type": "application/json" } },
  );

/** The subprotocol to speak: the first offered that is served; a 400 naming the served ones otherwise. */
export function chooseProtocol(c: Context): string {
  const upgrade = c.req.header("upgrade");
  if (upgrade?.toLowerCase() !== "websocket")
    throw httpError(
      400,
      `port forwarding is served over WebSocket only (kubectl 1.31 or later, or a client library): send Upgrade: websocket with Sec-WebSocket-Protocol ${SERVED.join(" or ")}${upgrade ? ` (this request asked to upgrade to "${upgrade}")` : ""}`,
    );
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
  const chosen = offered.find((p) => SERVED.includes(p));
  if (!chosen)
    throw httpError(
      400,
      `none of the requested subprotocols [${offered.join(", ")}] is supported for port forwarding: use ${SERVED.join(" or ")}`,
    );
  return chosen;
}

export function createPortForwardRoutes(deps: PortForwardRouteDeps): Hono {
  const app = new Hono();
  app.get("/portForward/:namespace/:pod", async (c) => {
    const { namespace, pod: name } = c.req.param();
    const protocol = chooseProtocol(c);
    const pod = deps.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
    if (!pod) throw httpError(404, `pods "${name}" not found in namespace "${namespace}"`);
    const uid = pod.metadata.uid ?? "";
    const sandbox = (await deps.runtime.listPodSandboxes({ podUid: uid, state: "ready" })).sort(
      (a, b) => b.createdAt - a.createdAt,
    )[0];
    if (!sandbox)
      throw httpError(
        400,
        `unable to forward port because pod "${name}" in namespace "${namespace}" is not running (it has no ready sandbox)`,
      );
    const target = `pod ${name}, uid ${uid}`;
    const forward = (port: number) => deps.runtime.portForward(sandbox.id, port);
    deps.log?.debug(`${c.req.path}: port forward (${protocol}) to ${target}`);
    if (protocol === SPDY_TUNNEL_PROTOCOL)
      return upgradeToWebSocket(notUpgradable(), spdyPortForwardSession({ forward, target, log: deps.log }));
    const ports = parsePorts([...(c.req.queries("port") ?? []), ...(c.req.queries("ports") ?? [])]);
    if (typeof ports === "string") throw httpError(400, ports);
    return upgradeToWebSocket(
      notUpgradable(),
      webSocketPortForwardSession({ protocol, ports, forward, target, log: deps.log }),
    );
  });
  return app;
}
