// The CRI streaming client against a stand-in streaming server (served by the bun adapter) that
// speaks the channel protocol as containerd's does, so each ending can be staged.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { serve } from "../../platform/serve.ts";
import type { RunningServer } from "../../platform/types.ts";
import { upgradeToWebSocket, type ServerSocket } from "../../platform/websocket.ts";
import { decodeFrame, encodeFrame, exitStatus, negotiateProtocol, statusFrame } from "../channel-protocol.ts";
import { openChannelStream } from "./cri-streaming.ts";
import type { StreamSession } from "../runtime.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** What the stand-in server does once a client connected; `received` collects the client's messages. */
let script: (socket: ServerSocket) => Promise<void> = async () => {};
let received: Array<{ channel: number; data: number[] }> = [];
let protocols: string[] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
let onReceived = () => {};
/** Resolves once the server has received `count` messages. */
const receivedCount = (count: number) =>
  new Promise<void>((resolve) => {
    onReceived = () => received.length >= count && resolve();
    onReceived();
  });

const app = new Hono();
app.get("/exec/:token", (c) => {
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
  const protocol = negotiateProtocol(offered.filter((p) => protocols.includes(p)).join(","))!;
  return upgradeToWebSocket(new Response(null, { status: 501 }), {
    protocol,
    open: (socket) => void script(socket),
    message: (data) => {
      const frame = decodeFrame(data);
      if (frame) received.push({ channel: frame.channel, data: [...frame.data] });
      onReceived();
    },
    close: () => {},
  });
});

let server: RunningServer;
beforeAll(async () => {
  server = await serve(app, { hostname: "127.0.0.1", port: 0 });
});
afterAll(() => server.stop());

const open = (kind: "exec" | "attach") =>
  openChannelStream(`http://127.0.0.1:${server.port}/exec/token`, { kind, action: `${kind} in container abc` });

async function drain(session: StreamSession) {
  const out: Array<[number, string]> = [];
  for await (const chunk of session.output) out.push([chunk.stream, new TextDecoder().decode(chunk.data)]);
  return out;
}

describe("CRI streaming client", () => {
  test("reads stdout and stderr frames in order, skips empty ones, and takes the exit code from the Status", async () => {
    script = async (socket) => {
      await socket.send(encodeFrame(1));
      await socket.send(encodeFrame(1, bytes("out\n")));
      await socket.send(encodeFrame(2, bytes("err\n")));
      await socket.send(statusFrame(exitStatus(3)));
      socket.close(1000);
    };
    const session = await open("exec");
    expect(await drain(session)).toEqual([
      [1, "out\n"],
      [2, "err\n"],
    ]);
    expect(await session.exit).toBe(3);
  });

  test("an exec whose stream closes without a Status fails, naming the exec", async () => {
    script = async (socket) => socket.close(1000);
    const session = await open("exec");
    expect(await drain(session)).toEqual([]);
    await expect(session.exit).rejects.toThrow(
      /cannot exec in container abc: the streaming server closed the stream \(code 1000\) without an exit status/,
    );
  });

  test("a failure Status fails the session with its message; an attach that ends has no exit code", async () => {
    script = async (socket) => {
      await socket.send(encodeFrame(3, bytes(JSON.stringify({ status: "Failure", message: "container not running" }))));
      socket.close(1000);
    };
    await expect((await open("exec")).exit).rejects.toThrow("cannot exec in container abc: container not running");
    script = async (socket) => {
      await socket.send(encodeFrame(1, bytes("line\n")));
      socket.close(1000);
    };
    const attach = await open("attach");
    expect(await drain(attach)).toEqual([[1, "line\n"]]);
    expect(await attach.exit).toBeUndefined();
  });

  test("stdin, resizes and v5's close of stdin go out as channel messages", async () => {
    received = [];
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    script = async (socket) => {
      await finished;
      socket.close(1000);
    };
    const session = await open("exec");
    session.write(bytes("hi"));
    session.resize({ width: 80, height: 24 });
    session.closeStdin();
    await receivedCount(3);
    done();
    expect(received).toEqual([
      { channel: 0, data: [...bytes("hi")] },
      { channel: 4, data: [...bytes('{"Width":80,"Height":24}')] },
      { channel: 255, data: [0] },
    ]);
    session.close();
  });

  test("under v4 (containerd 1.6) closing stdin sends nothing: that protocol cannot close one channel", async () => {
    protocols = ["v4.channel.k8s.io"];
    received = [];
    script = async () => {};
    const session = await open("exec");
    session.closeStdin();
    session.write(bytes("after"));
    // One socket keeps order: a close message sent before this write would have arrived first.
    await receivedCount(1);
    expect(received).toEqual([{ channel: 0, data: [...bytes("after")] }]);
    session.close();
    expect(await session.exit).toBeUndefined();
    protocols = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
  });

  test("a streaming server that refuses the connection is an error naming its URL", async () => {
    const url = `http://127.0.0.1:${server.port}/nothing-here`;
    await expect(openChannelStream(url, { kind: "exec", action: "exec in container abc" })).rejects.toThrow(
      `cannot exec in container abc: the runtime's streaming server at ${url} refused the WebSocket connection`,
    );
  });
});
