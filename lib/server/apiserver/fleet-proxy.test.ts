import { describe, expect, test } from "bun:test";
import type { Pod, V1Node } from "../../api/types.ts";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import { createFleetProxyRoutes, execQuery, nodeUrl } from "./fleet-proxy.ts";
import type { PodCache } from "./watch.ts";

const node = (address: string, port?: number): V1Node => ({
  metadata: { name: "a" },
  status: {
    addresses: [{ type: "InternalIP", address }],
    ...(port ? { daemonEndpoints: { kubeletEndpoint: { Port: port } } } : {}),
  },
});

const pod = (containers: string[]): Pod =>
  ({
    metadata: { name: "web", namespace: "default", annotations: {} },
    spec: { nodeName: "a", containers: containers.map((name) => ({ name, image: "busybox" })) },
  }) as unknown as Pod;

/** The proxy over one pod on node "a", whose record is `record` (undefined: not in etcd). */
const routes = (containers: string[], record?: V1Node) =>
  createFleetProxyRoutes({
    cache: { get: (_ns: string, name: string) => (name === "web" ? pod(containers) : undefined) } as PodCache,
    client: {
      get: async (key: string) => ({
        entry:
          key === fleetKeys.node("a") && record
            ? { key, value: JSON.stringify(record), lease: "0", modRevision: 1 }
            : undefined,
        revision: 1,
      }),
    },
    credentials: {},
  });

describe("fleet serve's proxy to the pod's node", () => {
  test("the node's authenticated port is its record's InternalIP and kubelet port, or the override's address", () => {
    expect(nodeUrl(node("10.0.0.5", 10250))).toBe("https://10.0.0.5:10250");
    expect(nodeUrl(node("fd00::5", 10250))).toBe("https://[fd00::5]:10250");
    expect(nodeUrl(node("10.0.0.5", 10250), "127.0.0.1")).toBe("https://127.0.0.1:10250");
    expect(nodeUrl(node("10.0.0.5"))).toBeUndefined();
  });

  test("exec's stdin/stdout/stderr/tty become the kubelet's input/output/error/tty; the command passes as it is", () => {
    const query = new URLSearchParams(
      "command=sh&command=-c&command=echo%20a%26b&container=main&stdin=true&stdout=true&stderr=false&tty=false",
    );
    expect(execQuery(query)).toBe("?command=sh&command=-c&command=echo+a%26b&input=1&output=1");
  });

  test("logs of an unknown pod are 404; of a pod with several containers and none named, 400 listing them", async () => {
    const app = routes(["app", "sidecar"], node("127.0.0.1", 1));
    expect((await app.request("/api/v1/namespaces/default/pods/nope/log")).status).toBe(404);
    const ambiguous = await app.request("/api/v1/namespaces/default/pods/web/log");
    expect(ambiguous.status).toBe(400);
    expect(await ambiguous.text()).toContain(
      "a container name must be specified for pod web, choose one of: [app sidecar]",
    );
  });

  test("a pod whose node has no record in etcd is 503 naming the node", async () => {
    const response = await routes(["app"]).request("/api/v1/namespaces/default/pods/web/log");
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('node "a" of pod default/web has no address in etcd');
  });

  test("exec without a WebSocket upgrade is 400 naming the subprotocols served", async () => {
    const response = await routes(["app"], node("127.0.0.1", 1)).request(
      "/api/v1/namespaces/default/pods/web/exec?command=ls",
    );
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("is proxied over WebSocket only");
  });

  test("attach is relayed as exec is: 400 without a WebSocket upgrade, then to the named container's node", async () => {
    const plain = await routes(["app"], node("127.0.0.1", 1)).request("/api/v1/namespaces/default/pods/web/attach");
    expect(plain.status).toBe(400);
    expect(await plain.text()).toContain("is proxied over WebSocket only");
    const upgrade = { upgrade: "websocket", "sec-websocket-protocol": "v5.channel.k8s.io" };
    const ambiguous = await routes(["app", "sidecar"]).request("/api/v1/namespaces/default/pods/web/attach", {
      headers: upgrade,
    });
    expect(ambiguous.status).toBe(400);
    expect(await ambiguous.text()).toContain("choose one of: [app sidecar]");
    const unplaced = await routes(["app", "sidecar"]).request(
      "/api/v1/namespaces/default/pods/web/attach?container=sidecar&stdout=true",
      { headers: upgrade },
    );
    expect(unplaced.status).toBe(503);
    expect(await unplaced.text()).toContain('node "a" of pod default/web has no address in etcd');
  });

  test("port forward without a WebSocket upgrade, or in a subprotocol not served, is 400 naming kubectl's tunnel", async () => {
    const app = routes(["app"], node("127.0.0.1", 1));
    const plain = await app.request("/api/v1/namespaces/default/pods/web/portforward?ports=80");
    expect(plain.status).toBe(400);
    expect(await plain.text()).toContain("SPDY/3.1+portforward.k8s.io");
    const other = await app.request("/api/v1/namespaces/default/pods/web/portforward?ports=80", {
      headers: { upgrade: "websocket", "sec-websocket-protocol": "v5.channel.k8s.io" },
    });
    expect(other.status).toBe(400);
    expect(await other.text()).toContain("none of the requested subprotocols [v5.channel.k8s.io]");
  });

  test("a port forward is to the pod, not a container: a pod of several containers goes on to its node", async () => {
    const response = await routes(["app", "sidecar"]).request("/api/v1/namespaces/default/pods/web/portforward", {
      headers: { upgrade: "websocket", "sec-websocket-protocol": "SPDY/3.1+portforward.k8s.io" },
    });
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('node "a" of pod default/web has no address in etcd');
  });
});
