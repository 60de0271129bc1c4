// The SPDY exec/attach client against a stand-in streaming server on a raw TCP socket that upgrades and frames as
// containerd's (k8s.io/apimachinery httpstream/spdy over moby/spdystream) does, so each ending can be staged.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { exitStatus } from "../channel-protocol.ts";
import type { StreamSession } from "../runtime.ts";
import * as spdy from "../spdy-frames.ts";
import { openSpdyStream } from "./cri-spdy-stream.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

/** What the stand-in saw of one connection, and how to answer on it. */
interface Connection {
  head: string;
  /** Stream type by id, in the order the client opened them. */
  streams: Map<number, string>;
  /** Bytes the client sent per stream type, and whether it finished (FIN) that stream. */
  received: Record<string, Uint8Array[]>;
  finished: Set<string>;
  pings: number[];
  /** Settles when the client's side of the connection is gone. */
  gone: Promise<void>;
  send(type: string, data: Uint8Array, flags?: number): void;
  raw(frame: spdy.SpdyFrame): void;
  end(): void;
}

/** How the stand-in answers the upgrade, and what it does once every stream exists and on each client frame. */
let upgrade: (head: string) => string = () =>
  "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n";
let expectedStreams = 4;
let onReady: (c: Connection) => void = () => {};
let onData: (c: Connection, type: string, data: Uint8Array, fin: boolean) => void = () => {};
let last: Connection | undefined;

function serveConnection(socket: Socket) {
  let head = "";
  const reader = spdy.createFrameReader();
  const decompressor = spdy.createHeaderDecompressor();
  const compress = spdy.createHeaderCompressor();
  const connection: Connection = {
    head: "",
    streams: new Map(),
    received: {},
    finished: new Set(),
    pings: [],
    gone: new Promise((resolve) => socket.once("close", () => resolve())),
    send(type, data, flags = 0) {
      const streamId = [...this.streams].find(([, t]) => t === type)![0];
      socket.write(spdy.encodeFrame({ control: false, streamId, flags, data }));
    },
    raw: (frame) => socket.write(spdy.encodeFrame(frame)),
    end: () => socket.end(),
  };
  last = connection;
  let inbound = Promise.resolve();
  const handle = async (frame: spdy.SpdyFrame) => {
    if (!frame.control) {
      const type = connection.streams.get(frame.streamId)!;
      (connection.received[type] ??= []).push(frame.data);
      if (frame.flags & spdy.FLAG_FIN) connection.finished.add(type);
      return onData(connection, type, frame.data, !!(frame.flags & spdy.FLAG_FIN));
    }
    const id = new DataView(frame.data.buffer, frame.data.byteOffset).getUint32(0) & 0x7fffffff;
    if (frame.type === spdy.FRAME.ping) return void connection.pings.push(id);
    if (frame.type !== spdy.FRAME.synStream) return;
    const headers = spdy.decodeHeaderBlock(await decompressor.decompress(frame.data.subarray(10)));
    connection.streams.set(id, headers.streamtype![0]!);
    socket.write(
      spdy.encodeFrame(
        spdy.controlFrame(
          spdy.FRAME.synReply,
          new Uint8Array([...spdy.words(id), ...compress(spdy.encodeHeaderBlock({}))]),
        ),
      ),
    );
    if (connection.streams.size === expectedStreams) onReady(connection);
  };
  const onBytes = (chunk: Buffer) => {
    if (!connection.head) {
      head += chunk.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      connection.head = head.slice(0, end);
      const answer = upgrade(connection.head);
      if (!answer.startsWith("HTTP/1.1 101")) {
        // The body a moment after the head, so the client must read on past the head for the server's reason.
        const cut = answer.indexOf("\r\n\r\n") + 4;
        socket.write(answer.slice(0, cut));
        return void setTimeout(() => socket.end(answer.slice(cut)), 20);
      }
      socket.write(answer);
      chunk = Buffer.from(head.slice(end + 4), "latin1");
    }
    const frames = reader.push(new Uint8Array(chunk));
    inbound = inbound.then(async () => {
      for (const frame of frames) await handle(frame);
    });
  };
  socket.on("data", onBytes);
  socket.on("error", () => {});
}

let server: Server;
let port = 0;
beforeAll(async () => {
  server = createServer(serveConnection);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => server.close());

const all = { stdin: true, stdout: true, stderr: true, tty: false };
const open = (kind: "exec" | "attach" = "exec", streams = all) =>
  openSpdyStream(`http://127.0.0.1:${port}/exec/tok3n`, { kind, action: `${kind} in container abc`, streams });

async function collect(session: StreamSession): Promise<{ stdout: string; stderr: string }> {
  const out = { stdout: "", stderr: "" };
  for await (const chunk of session.output) out[chunk.stream === 1 ? "stdout" : "stderr"] += text(chunk.data);
  return out;
}

/** A `cat`: stdin back on stdout; once stdin ends, a Success status and the connection closed. */
const cat = () => {
  expectedStreams = 4;
  onReady = () => {};
  onData = (c, type, data, fin) => {
    if (type !== "stdin") return;
    if (data.length) c.send("stdout", data);
    if (fin) {
      c.send("error", bytes(JSON.stringify(exitStatus(0))));
      c.end();
    }
  };
};

describe("exec and attach over SPDY/3.1 to a CRI streaming server", () => {
  test("the client upgrades to SPDY/3.1 asking for v4.channel.k8s.io and opens error, stdin, stdout, stderr in order", async () => {
    cat();
    const session = await open();
    expect(last!.head).toStartWith("POST /exec/tok3n HTTP/1.1\r\n");
    expect(last!.head).toContain("\r\nUpgrade: SPDY/3.1");
    expect(last!.head).toContain("\r\nX-Stream-Protocol-Version: v4.channel.k8s.io");
    expect([...last!.streams]).toEqual([
      [1, "error"],
      [3, "stdin"],
      [5, "stdout"],
      [7, "stderr"],
    ]);
    session.close();
  });

  test("closing stdin half-closes its stream: a command reading to end of file ends, every byte back, exit code 0", async () => {
    cat();
    const session = await open();
    const input = "0123456789".repeat(10_000);
    session.write(bytes(input));
    const output = collect(session);
    session.closeStdin();
    expect(await output).toEqual({ stdout: input, stderr: "" });
    expect(await session.exit).toBe(0);
    expect(last!.finished).toEqual(new Set(["stdin"]));
    // 100,000 bytes went out in DATA frames of at most 32 KiB.
    expect(last!.received.stdin!.map((d) => d.length)).toEqual([32768, 32768, 32768, 1696, 0]);
  });

  test("stdout and stderr arrive on their own streams, and a NonZeroExitCode status settles exit with that code", async () => {
    expectedStreams = 4;
    onReady = (c) => {
      c.send("stdout", bytes("out\n"));
      c.send("stderr", bytes("oops\n"));
      c.send("error", bytes(JSON.stringify(exitStatus(3))));
      c.end();
    };
    const session = await open();
    expect(await collect(session)).toEqual({ stdout: "out\n", stderr: "oops\n" });
    expect(await session.exit).toBe(3);
  });

  test("a TTY session opens stdout and resize only, and a resize goes out as a TerminalSize JSON", async () => {
    expectedStreams = 3;
    onReady = () => {};
    onData = (c, type) => {
      if (type === "resize") {
        c.send("error", bytes(JSON.stringify(exitStatus(0))));
        c.end();
      }
    };
    const session = await open("exec", { stdin: false, stdout: true, stderr: false, tty: true });
    expect([...last!.streams.values()]).toEqual(["error", "stdout", "resize"]);
    session.resize({ width: 80, height: 24 });
    expect(await session.exit).toBe(0);
    expect(text(last!.received.resize![0]!)).toBe('{"Width":80,"Height":24}');
  });

  test("the server's pings are answered with the same id", async () => {
    cat();
    onReady = (c) => c.raw(spdy.controlFrame(spdy.FRAME.ping, spdy.words(2)));
    const session = await open();
    const started = Date.now();
    while (!last!.pings.length && Date.now() - started < 5000) await new Promise((r) => setImmediate(r));
    expect(last!.pings).toEqual([2]);
    session.close();
  });

  test("a connection closed without a status fails an exec, naming the call, and ends an attach quietly", async () => {
    expectedStreams = 4;
    onReady = (c) => c.end();
    const exec = await open();
    await collect(exec);
    await expect(exec.exit).rejects.toThrow(
      "cannot exec in container abc: the streaming server closed the connection without an exit status",
    );
    const attach = await open("attach");
    await collect(attach);
    expect(await attach.exit).toBeUndefined();
  });

  test("a failure status on the error stream rejects exit with the runtime's message", async () => {
    expectedStreams = 4;
    onReady = (c) => {
      c.send("error", bytes(JSON.stringify({ metadata: {}, status: "Failure", message: "container not running" })));
      c.end();
    };
    const session = await open();
    await collect(session);
    await expect(session.exit).rejects.toThrow("cannot exec in container abc: container not running");
  });

  test("a refused upgrade (an expired token) fails with the server's status and body", async () => {
    const saved = upgrade;
    upgrade = () => "HTTP/1.1 404 Not Found\r\nContent-Length: 16\r\nConnection: close\r\n\r\ntoken not found\n";
    try {
      await expect(open()).rejects.toThrow(
        `cannot exec in container abc: the runtime's streaming server at http://127.0.0.1:${port}/exec/tok3n refused the SPDY upgrade: HTTP/1.1 404 Not Found token not found`,
      );
    } finally {
      upgrade = saved;
    }
  });

  test("a server that agrees to another protocol is refused, naming the one it chose", async () => {
    const saved = upgrade;
    upgrade = () =>
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v2.channel.k8s.io\r\n\r\n";
    try {
      await expect(open()).rejects.toThrow(
        `cannot exec in container abc: the runtime's streaming server at http://127.0.0.1:${port}/exec/tok3n agreed to protocol "v2.channel.k8s.io", not v4.channel.k8s.io`,
      );
    } finally {
      upgrade = saved;
    }
  });

  test("a streaming server that is not listening fails the call with the address", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const free = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(
      openSpdyStream(`http://127.0.0.1:${free}/exec/x`, {
        kind: "exec",
        action: "exec in container abc",
        streams: all,
      }),
    ).rejects.toThrow(
      `cannot exec in container abc: cannot connect to the runtime's streaming server at http://127.0.0.1:${free}/exec/x: `,
    );
  });

  test("closing the session early settles exit with no code, ends the output and drops the connection", async () => {
    cat();
    const session = await open();
    const output = collect(session);
    session.close();
    expect(await output).toEqual({ stdout: "", stderr: "" });
    expect(await session.exit).toBeUndefined();
    await last!.gone;
  });
});
