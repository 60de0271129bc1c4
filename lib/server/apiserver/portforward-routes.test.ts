// /portForward/{namespace}/{pod} on a fake runtime: served for real by the platform adapter (bun) to a WebSocket
// client of the v4 protocol, and through app.request() for what is refused before any upgrade.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { serve } from "../../platform/serve.ts";
import type { RunningServer } from "../../platform/types.ts";
import { testSandboxConfig } from "../../testing/cri-configs.ts";
import { echoPortForward } from "../../testing/echo-port-forward.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { testPod } from "../../testing/pods.ts";
import { createPortForwardRoutes } from "./portforward-routes.ts";

const runtime = new FakeRuntime();
const pod = testPod("web");
const idle = testPod("idle");
const app = new Hono();
app.onError((error, c) => c.json({ message: error.message }, (error as { status?: 400 }).status ?? 500));
app.route("/", createPortForwardRoutes({ runtime, pods: () => [pod, idle] }));

let server: RunningServer;
beforeAll(async () => {
  await runtime.runPodSandbox(testSandboxConfig(pod.metadata.uid ?? "", "web"));
  server = await serve(app, { hostname: "127.0.0.1", port: 0 });
});
afterAll(() => server.stop());
const upgrade = (protocol: string) => ({
  upgrade: "websocket",
  connection: "Upgrade",
  "sec-websocket-protocol": protocol,
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  "sec-websocket-version": "13",
});
const refusal = async (path: string, headers: Record<string, string>) => {
  const response = await app.request(path, { headers });
  return { status: response.status, message: ((await response.json()) as { message: string }).message };
};

describe("the port forward route", () => {
  test("a request without a WebSocket upgrade is refused, naming the protocols served", async () => {
    expect(await refusal("/portForward/default/web?port=80", {})).toEqual({
      status: 400,
      message:
        "port forwarding is served over WebSocket only (kubectl 1.31 or later, or a client library): send Upgrade: websocket with Sec-WebSocket-Protocol SPDY/3.1+portforward.k8s.io or v4.channel.k8s.io or v4.base64.channel.k8s.io",
    });
    expect((await refusal("/portForward/default/web", upgrade("v5.channel.k8s.io"))).message).toStartWith(
      "none of the requested subprotocols [v5.channel.k8s.io] is supported for port forwarding",
    );
  });

  test("an unknown pod is NotFound; a pod without a ready sandbox is not running; ports are required", async () => {
    expect(await refusal("/portForward/default/gone?port=80", upgrade("v4.channel.k8s.io"))).toEqual({
      status: 404,
      message: 'pods "gone" not found in namespace "default"',
    });
    expect((await refusal("/portForward/default/idle?port=80", upgrade("v4.channel.k8s.io"))).message).toBe(
      'unable to forward port because pod "idle" in namespace "default" is not running (it has no ready sandbox)',
    );
    expect((await refusal("/portForward/default/web", upgrade("v4.channel.k8s.io"))).status).toBe(400);
  });

  test("a v4 client gets each port's channels opened and its bytes echoed through the runtime's forward", async () => {
    const connection = echoPortForward();
    runtime.portForwardHandler = () => connection.stream;
    const socket = new WebSocket(`ws://127.0.0.1:${server.port}/portForward/default/web?port=8080`, [
      "v4.channel.k8s.io",
    ]);
    socket.binaryType = "arraybuffer";
    const messages: number[][] = [];
    const closed = new Promise<void>((resolve) => (socket.onclose = () => resolve()));
    socket.onmessage = (event) => {
      messages.push([...new Uint8Array(event.data as ArrayBuffer)]);
      if (messages.length === 2) socket.send(new Uint8Array([0, ...new TextEncoder().encode("ab")]));
      if (messages.length === 3) connection.finish();
    };
    await closed;
    expect(messages).toEqual([
      [0, 0x90, 0x1f],
      [1, 0x90, 0x1f],
      [0, ...new TextEncoder().encode("AB")],
    ]);
  });
});
