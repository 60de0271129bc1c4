// The bridge on a hand-held socket and a runtime session whose opening the test controls.
import { describe, expect, test } from "bun:test";
import { encodeFrame } from "../container/channel-protocol.ts";
import type { StreamSession } from "../container/runtime.ts";
import type { ServerSocket } from "../platform/websocket.ts";
import { scriptedSession, type StreamScript } from "../container/memory/scripted-session.ts";
import { bridgeStream } from "./stream-bridge.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** A socket recording what the bridge sends (binary messages as [channel, text], text messages as they are). */
function recordingSocket() {
  const sent: Array<[number, string] | string> = [];
  let closed!: (code?: number) => void;
  const closedWith = new Promise<number | undefined>((resolve) => (closed = resolve));
  const socket: ServerSocket = {
    send: async (data) =>
      void sent.push(typeof data === "string" ? data : [data[0]!, new TextDecoder().decode(data.subarray(1))]),
    close: (code) => closed(code),
  };
  return { socket, sent, closedWith };
}

/** A session that opens only when the test says so. */
function gatedOpen(script: StreamScript) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let session: StreamSession | undefined;
  return {
    open: async () => {
      await gate;
      return (session = scriptedSession(script));
    },
    release,
    session: () => session,
  };
}

describe("stream bridge", () => {
  test("client messages that arrive while the runtime's session is still opening reach it once open, in order", async () => {
    const gated = gatedOpen(async (io) => {
      io.stdout(`${await io.readLine()}+${await io.readLine()}\n`);
      return 0;
    });
    const bridge = bridgeStream({
      protocol: "v5.channel.k8s.io",
      streams: { stdin: true, stdout: true },
      open: gated.open,
      action: "exec",
    });
    const { socket, sent, closedWith } = recordingSocket();
    bridge.open(socket);
    bridge.message(encodeFrame(0, bytes("one\n")));
    bridge.message(encodeFrame(0, bytes("two\n")));
    gated.release();
    expect(await closedWith).toBe(1000);
    expect(sent).toEqual([
      [1, ""],
      [1, "one+two\n"],
      [3, JSON.stringify({ metadata: {}, status: "Success" })],
    ]);
  });

  test("a client gone before the session opened gets the session closed as soon as it opens, and nothing sent", async () => {
    let closedSeen!: () => void;
    const sessionClosed = new Promise<void>((resolve) => (closedSeen = resolve));
    const gated = gatedOpen(async (io) => {
      await new Promise((resolve) => io.closed.addEventListener("abort", resolve));
      closedSeen();
      return undefined;
    });
    const bridge = bridgeStream({
      protocol: "v4.channel.k8s.io",
      streams: { stdout: true },
      open: gated.open,
      action: "attach",
    });
    const { socket, sent } = recordingSocket();
    bridge.open(socket);
    bridge.close();
    gated.release();
    await sessionClosed;
    expect(sent).toEqual([]);
  });

  test("under v4, a [255, 0] message is not a close of stdin (only v5 has that signal)", async () => {
    const gated = gatedOpen(async (io) => {
      io.stdout(`${await io.readLine()}\n`);
      return 0;
    });
    const bridge = bridgeStream({
      protocol: "v4.channel.k8s.io",
      streams: { stdin: true, stdout: true },
      open: gated.open,
      action: "exec",
    });
    const { socket, sent, closedWith } = recordingSocket();
    bridge.open(socket);
    gated.release();
    bridge.message(new Uint8Array([255, 0]));
    bridge.message(encodeFrame(0, bytes("still open\n")));
    await closedWith;
    expect(sent[1]).toEqual([1, "still open\n"]);
  });

  test("a session that cannot be opened is an InternalError Status naming the action, then the close", async () => {
    const bridge = bridgeStream({
      protocol: "v5.channel.k8s.io",
      streams: { stdout: true },
      open: async () => {
        throw new Error("container is in CONTAINER_EXITED state");
      },
      action: 'exec ["sh"] in container abc',
    });
    const { socket, sent, closedWith } = recordingSocket();
    bridge.open(socket);
    expect(await closedWith).toBe(1000);
    expect(sent.map(([channel]) => channel)).toEqual([3]);
    expect(JSON.parse((sent[0] as [number, string])[1])).toMatchObject({
      status: "Failure",
      reason: "InternalError",
      message: 'Internal error occurred: exec ["sh"] in container abc: container is in CONTAINER_EXITED state',
    });
  });

  test("base64.channel.k8s.io frames are text: the channel digit, then base64; a success sends no status", async () => {
    const gated = gatedOpen(async (io) => {
      io.stdout(`got ${await io.readLine()}\n`);
      return 0;
    });
    const bridge = bridgeStream({
      protocol: "base64.channel.k8s.io",
      streams: { stdin: true, stdout: true },
      open: gated.open,
      action: "exec",
    });
    const { socket, sent, closedWith } = recordingSocket();
    bridge.open(socket);
    bridge.message(bytes(`0${Buffer.from("hi\n").toString("base64")}`));
    gated.release();
    expect(await closedWith).toBe(1000);
    expect(sent).toEqual(["1", `1${Buffer.from("got hi\n").toString("base64")}`]);
  });

  test("channel.k8s.io carries a failure's text on the error channel, not a Status", async () => {
    const bridge = bridgeStream({
      protocol: "channel.k8s.io",
      streams: { stdout: true },
      open: async () => scriptedSession(async () => 3),
      action: "exec",
    });
    const { socket, sent, closedWith } = recordingSocket();
    bridge.open(socket);
    await closedWith;
    expect(sent).toEqual([
      [1, ""],
      [3, "command terminated with non-zero exit code: exit status 3"],
    ]);
  });
});
