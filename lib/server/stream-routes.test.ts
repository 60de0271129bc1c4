// /exec and /attach on a fake runtime: served for real by the platform adapter (bun) to a WebSocket
// client, and through app.request() for what is refused before any upgrade.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { serve } from "../platform/serve.ts";
import type { RunningServer } from "../platform/types.ts";
import { connectChannels } from "../testing/channel-client.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testPod } from "../testing/pods.ts";
import { createStreamRoutes } from "./stream-routes.ts";

const runtime = new FakeRuntime();
const pod = testPod("web");
runtime.seedRunning(pod);
const app = new Hono();
// Errors render as onError would in the info server; these tests look at status codes and messages.
app.onError((error, c) => c.json({ message: error.message }, (error as { status?: 400 }).status ?? 500));
app.route("/", createStreamRoutes({ runtime, pods: () => [pod] }));

let server: RunningServer;
beforeAll(async () => {
  server = await serve(app, { hostname: "127.0.0.1", port: 0 });
});
afterAll(() => server.stop());
const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
const upgradeHeaders = {
  upgrade: "websocket",
  connection: "Upgrade",
  "sec-websocket-protocol": "v5.channel.k8s.io",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  "sec-websocket-version": "13",
};

describe("exec and attach routes", () => {
  test("exec bridges stdin to the command, and its stdout, stderr and exit code to channels 1, 2 and 3", async () => {
    runtime.execStreamHandler = (_id, cmd) => async (io) => {
      const line = await io.readLine();
      io.stdout(`${cmd.join(" ")} got ${line}\n`);
      io.stderr("err\n");
      return 3;
    };
    const client = await connectChannels(url("/exec/default/web/app?command=sh&command=-c&input=1&output=1&error=1"));
    client.send(0, "hello\n");
    const { status, code } = await client.finished;
    expect(client.messages).toEqual([
      { channel: 1, text: "" },
      { channel: 1, text: "sh -c got hello\n" },
      { channel: 2, text: "err\n" },
      { channel: 3, text: JSON.stringify(status) },
    ]);
    expect(status).toMatchObject({ status: "Failure", reason: "NonZeroExitCode" });
    expect(code).toBe(1000);
  });

  test("stdin lines sent back to back all reach the command, in order", async () => {
    runtime.execStreamHandler = () => async (io) => {
      io.stdout(`${await io.readLine()} ${await io.readLine()}\n`);
      return 0;
    };
    const client = await connectChannels(url("/exec/default/web/app?command=cat&input=1&output=1"));
    client.send(0, "one\n");
    client.send(0, "two\n");
    await client.finished;
    expect(client.text(1)).toBe("one two\n");
  });

  test("resize messages reach a TTY exec's session, and closing stdin ends its input", async () => {
    let seen: unknown;
    runtime.execStreamHandler = () => async (io) => {
      while ((await io.readLine()) !== undefined);
      seen = [...io.resizes];
      return 0;
    };
    const client = await connectChannels(url("/exec/default/web/app?command=sh&input=1&output=1&tty=1"));
    client.send(4, JSON.stringify({ Width: 100, Height: 30 }));
    client.closeChannel(0);
    const { status } = await client.finished;
    expect(status?.status).toBe("Success");
    expect(seen).toEqual([{ width: 100, height: 30 }]);
  });

  test("a session the runtime fails reports an InternalError Status on channel 3", async () => {
    runtime.execStreamHandler = () => async () => {
      throw new Error("the shim went away");
    };
    const client = await connectChannels(url("/exec/default/web/app?command=true&output=1"));
    const { status } = await client.finished;
    expect(status).toMatchObject({
      status: "Failure",
      reason: "InternalError",
      message: "Internal error occurred: error executing command in container: the shim went away",
    });
  });

  test("attach connects to the container with the tty of its spec, and the client leaving closes the session", async () => {
    let closed!: () => void;
    const sessionClosed = new Promise<void>((resolve) => (closed = resolve));
    runtime.attachHandler = () => async (io) => {
      io.stdout("attached\n");
      await new Promise((resolve) => io.closed.addEventListener("abort", resolve));
      closed();
      return undefined;
    };
    const client = await connectChannels(url("/attach/default/web/app?output=1&error=1"));
    await client.waitFor(1, /attached\n/);
    client.close();
    await sessionClosed;
    expect(runtime.calls.filter((c) => c.method === "attach").at(-1)?.args[1]).toEqual({
      stdin: false,
      stdout: true,
      stderr: true,
      tty: false,
    });
  });

  test("what cannot become a stream is refused with 400 before any upgrade, saying what to send", async () => {
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ["/exec/default/web/app?command=true&output=1", {}, /served over WebSocket only/],
      [
        "/exec/default/web/app?command=true&output=1",
        { upgrade: "SPDY/3.1", connection: "Upgrade" },
        /asked to upgrade to "SPDY\/3.1"; SPDY is not served/,
      ],
      [
        "/exec/default/web/app?command=true&output=1",
        { ...upgradeHeaders, "sec-websocket-version": "8" },
        /malformed WebSocket upgrade: it needs Sec-WebSocket-Key and Sec-WebSocket-Version: 13/,
      ],
      ["/exec/default/web/app?output=1", upgradeHeaders, /missing command/],
      ["/exec/default/web/app?command=true", upgradeHeaders, /at least 1 of stdin, stdout, stderr/],
      [
        "/attach/default/web/app?output=1",
        { ...upgradeHeaders, "sec-websocket-protocol": "v2.channel.k8s.io" },
        /none of the requested subprotocols \[v2.channel.k8s.io\] is supported: use v5.channel.k8s.io or v4.channel.k8s.io or base64.channel.k8s.io or channel.k8s.io/,
      ],
    ];
    for (const [path, headers, message] of cases) {
      const response = await app.request(path, { headers });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
  });

  test("a platform that cannot upgrade (node:http under node and deno) answers 501 naming what to run instead", async () => {
    const response = await app.request("/attach/default/web/app?output=1", { headers: upgradeHeaders });
    expect(response.status).toBe(501);
    expect(await response.json()).toMatchObject({
      kind: "Status",
      reason: "NotImplemented",
      message: expect.stringContaining("run the compiled binary"),
    });
  });
});
