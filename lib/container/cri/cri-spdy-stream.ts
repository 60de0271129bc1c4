// Exec and attach on a CRI runtime over SPDY/3.1 (client-go's remotecommand v4 as containerd's streaming server
// serves it): one upgraded connection, one client-opened stream per channel, and stdin closed alone by a FIN on its
// stream, which the WebSocket v4 protocol cannot say (so `tar` reading stdin to its end can finish).
import { connect, type Socket } from "node:net";
import { readStatus, encodeResize } from "../channel-protocol.ts";
import { runtimeError, type StreamSession } from "../runtime.ts";
import { createStreamEnding } from "./stream-ending.ts";
import * as spdy from "../spdy-frames.ts";

/** The remote-command protocol asked for inside SPDY: the newest upstream serves over SPDY (v5 is WebSocket only). */
export const SPDY_STREAM_PROTOCOL = "v4.channel.k8s.io";

export interface SpdyStreamOptions {
  /** "exec [sh -c …] in container abc123": how messages name the call. */
  action: string;
  /** An exec ends with its exit code; an attach has none, and a stream without status is no error for it. */
  kind: "exec" | "attach";
  /** The channels the Exec/Attach call asked for: the server waits for exactly these streams (and error). */
  streams: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean };
}

type Channel = "error" | "stdin" | "stdout" | "stderr" | "resize";

/** Reads the HTTP response head off `socket`: its status line, headers and the bytes after it (the first frames). */
function readResponseHead(
  socket: Socket,
): Promise<{ status: number; headers: Map<string, string[]>; rest: Buffer; text: string }> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("end", onEnd);
      const [statusLine = "", ...lines] = buffer.subarray(0, end).toString("latin1").split("\r\n");
      const headers = new Map<string, string[]>();
      for (const line of lines) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
      }
      resolve({ status: Number(statusLine.split(" ")[1]), headers, rest: buffer.subarray(end + 4), text: statusLine });
    };
    const onError = (error: Error) => reject(error);
    const onEnd = () => reject(new Error(`the connection closed after ${buffer.length} bytes of the response head`));
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("end", onEnd);
  });
}

/** Connects to a streaming server URL (http://127.0.0.1:port/exec/token), upgrades to SPDY and opens the streams. */
export async function openSpdyStream(url: string, options: SpdyStreamOptions): Promise<StreamSession> {
  const fail = (why: string) => runtimeError("RuntimeError", `cannot ${options.action}: ${why}`);
  const target = new URL(url);
  if (target.protocol !== "http:")
    throw fail(`the runtime's streaming server URL ${url} is not plain http, which is all this client speaks`);
  const socket = connect({ host: target.hostname.replace(/^\[|\]$/g, ""), port: Number(target.port || 80) });
  socket.setNoDelay(true);
  const connected = new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  try {
    await connected;
  } catch (error) {
    throw fail(`cannot connect to the runtime's streaming server at ${url}: ${(error as Error).message}`);
  }
  const head = readResponseHead(socket);
  socket.write(
    [
      `POST ${target.pathname}${target.search} HTTP/1.1`,
      `Host: ${target.host}`,
      "Connection: Upgrade",
      "Upgrade: SPDY/3.1",
      `X-Stream-Protocol-Version: ${SPDY_STREAM_PROTOCOL}`,
      "Content-Length: 0",
      "",
      "",
    ].join("\r\n"),
  );
  let response: Awaited<typeof head>;
  try {
    response = await head;
  } catch (error) {
    socket.destroy();
    throw fail(`the runtime's streaming server at ${url} did not answer the upgrade: ${(error as Error).message}`);
  }
  if (response.status !== 101) {
    // The body says why (an expired token: 404 "token not found"): read it to its length or the connection's end.
    const length = Number(response.headers.get("content-length")?.[0] ?? Number.POSITIVE_INFINITY);
    const body = await new Promise<string>((resolve) => {
      let text = response.rest;
      const done = () => resolve(text.subarray(0, 4096).toString("utf8"));
      if (text.length >= length) return done();
      socket.on("data", (chunk: Buffer) => {
        text = Buffer.concat([text, chunk]);
        if (text.length >= length) done();
      });
      socket.once("close", done);
    });
    socket.destroy();
    throw fail(`the runtime's streaming server at ${url} refused the SPDY upgrade: ${response.text} ${body.trim()}`);
  }
  const agreed = response.headers.get("x-stream-protocol-version")?.[0];
  if (agreed !== SPDY_STREAM_PROTOCOL) {
    socket.destroy();
    throw fail(
      `the runtime's streaming server at ${url} agreed to protocol "${agreed ?? ""}", not ${SPDY_STREAM_PROTOCOL}`,
    );
  }
  return spdySession(socket, response.rest, options);
}

/** The StreamSession over an upgraded connection; resolves once the server has answered every stream it opened. */
function spdySession(socket: Socket, first: Uint8Array, options: SpdyStreamOptions): Promise<StreamSession> {
  const reader = spdy.createFrameReader();
  const compress = spdy.createHeaderCompressor();
  const decompressor = spdy.createHeaderDecompressor();
  const wanted: Channel[] = ["error"];
  if (options.streams.stdin) wanted.push("stdin");
  if (options.streams.stdout) wanted.push("stdout");
  if (options.streams.stderr) wanted.push("stderr");
  if (options.streams.tty) wanted.push("resize");
  // Client streams have odd ids, opened in order: error 1, then the others.
  const ids = new Map<Channel, number>(wanted.map((channel, i) => [channel, 1 + 2 * i]));
  const channelOf = new Map<number, Channel>([...ids].map(([channel, id]) => [id, channel]));
  const unanswered = new Set(ids.values());

  const ending = createStreamEnding(options);
  let errorText = "";
  const errorDecoder = new TextDecoder();
  let stdinClosed = false;
  let answered!: () => void;
  let refused!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => ((answered = resolve), (refused = reject)));

  const send = (frame: spdy.SpdyFrame) => {
    if (!socket.destroyed) socket.write(spdy.encodeFrame(frame));
  };
  const data = (channel: Channel, bytes: Uint8Array, flags = 0) => {
    const streamId = ids.get(channel);
    if (streamId !== undefined) send({ control: false, streamId, flags, data: bytes });
  };

  async function handle(frame: spdy.SpdyFrame) {
    if (!frame.control) {
      const channel = channelOf.get(frame.streamId);
      if ((channel === "stdout" || channel === "stderr") && frame.data.length) {
        ending.push({ stream: channel === "stdout" ? 1 : 2, data: frame.data });
      } else if (channel === "error") errorText += errorDecoder.decode(frame.data, { stream: true });
      return;
    }
    const view = new DataView(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
    switch (frame.type) {
      case spdy.FRAME.synReply:
      case spdy.FRAME.headers:
        // Every header block goes through the one inflate stream in order, read or not.
        spdy.decodeHeaderBlock(await decompressor.decompress(frame.data.subarray(4)));
        if (frame.type === spdy.FRAME.synReply) {
          unanswered.delete(view.getUint32(0) & 0x7fffffff);
          if (unanswered.size === 0) answered();
        }
        return;
      case spdy.FRAME.synStream:
        // The server opens no streams in this protocol: refuse any, but keep the inflate stream in step.
        await decompressor.decompress(frame.data.subarray(10));
        return send(
          spdy.controlFrame(spdy.FRAME.rstStream, spdy.words(view.getUint32(0) & 0x7fffffff, spdy.RST.refusedStream)),
        );
      case spdy.FRAME.rstStream: {
        const channel = channelOf.get(view.getUint32(0) & 0x7fffffff);
        if (unanswered.size) refused(new Error(`the server reset the ${channel ?? "unknown"} stream`));
        return;
      }
      case spdy.FRAME.ping:
        return send(frame);
      default:
        // SETTINGS, WINDOW_UPDATE, GOAWAY: spdystream keeps no flow-control window, and the close follows GOAWAY.
        return;
    }
  }

  let inbound = Promise.resolve();
  const receive = (bytes: Uint8Array) => {
    const frames = reader.push(bytes);
    inbound = inbound
      .then(async () => {
        for (const frame of frames) await handle(frame);
      })
      .catch((error: Error) => {
        errorText ||= `SPDY protocol error from the streaming server: ${error.message}`;
        socket.destroy();
      });
  };
  socket.on("data", (chunk: Buffer) => receive(new Uint8Array(chunk)));
  socket.on("error", () => {});
  socket.on("close", () => {
    // The last frames may still be inflating their headers: settle after them.
    void inbound.then(() => {
      decompressor.close();
      refused(new Error("the streaming server closed the connection before answering every stream"));
      const outcome = errorText ? readStatus(new TextEncoder().encode(errorText)) : undefined;
      ending.finish(outcome, "the streaming server closed the connection without an exit status");
    });
  });

  for (const [channel, streamId] of ids) {
    const block = compress(spdy.encodeHeaderBlock({ streamtype: [channel] }));
    send(spdy.controlFrame(spdy.FRAME.synStream, new Uint8Array([...spdy.words(streamId, 0), 0, 0, ...block])));
  }
  if (first.length) receive(first);

  const session: StreamSession = {
    output: ending.output(),
    write(bytes) {
      if (stdinClosed) return;
      for (let at = 0; at < bytes.length; at += spdy.MAX_DATA_CHUNK)
        data("stdin", bytes.subarray(at, at + spdy.MAX_DATA_CHUNK));
    },
    closeStdin() {
      if (stdinClosed) return;
      stdinClosed = true;
      // A FIN on the stdin stream: the server's read of stdin ends, and the process reads end of file.
      data("stdin", new Uint8Array(0), spdy.FLAG_FIN);
    },
    resize: (size) => data("resize", encodeResize(size)),
    exit: ending.exit,
    close() {
      if (ending.stop()) socket.destroy();
    },
  };
  return ready.then(
    () => session,
    (error: Error) => {
      socket.destroy();
      throw runtimeError("RuntimeError", `cannot ${options.action}: ${error.message}`);
    },
  );
}
