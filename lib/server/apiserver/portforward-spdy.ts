// The server side of kubectl's port forward: SPDY/3.1 (lib/container/spdy-frames.ts) carried in binary WebSocket
// messages (subprotocol SPDY/3.1+portforward.k8s.io, client-go's tunneling dialer). Each forwarded connection is a
// pair of client-opened streams sharing a requestID header, an error stream and a data stream; once both exist the
// data stream is joined to a connection to the pod's port, and a failure is written on the error stream, as
// pkg/kubelet/cri/streaming/portforward/httpstream.go does.
import type { PortForwardStream } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import type { ServerSocket, WebSocketSession } from "../../platform/websocket.ts";
import {
  createFrameReader,
  createHeaderCompressor,
  createHeaderDecompressor,
  controlFrame,
  decodeHeaderBlock,
  encodeFrame,
  encodeHeaderBlock,
  words,
  FLAG_FIN,
  FRAME,
  MAX_DATA_CHUNK,
  RST,
  type SpdyFrame,
} from "../../container/spdy-frames.ts";

/** The WebSocket subprotocol client-go asks for: SPDY tunnelled, speaking portforward.k8s.io inside. */
export const SPDY_TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io";

export interface SpdyPortForwardOptions {
  /** Opens a connection to `port` in the pod (the runtime's PortForward). */
  forward(port: number): Promise<PortForwardStream>;
  /** "pod web, uid …", for the error stream's message and the log. */
  target: string;
  log?: Logger;
}

/** One stream pair of a forwarded connection and where it stands. */
interface Pair {
  requestId: string;
  port: number;
  data?: number;
  error?: number;
  connection?: PortForwardStream;
  /** Client bytes that came before the connection to the pod was open, or while those were being written. */
  pending: Uint8Array[];
  /** Whether `pending` is written out, so the client's bytes go straight to the connection. */
  flushed: boolean;
  clientFinished: boolean;
  closed: boolean;
}

/** The WebSocket session of one `kubectl port-forward`. */
export function spdyPortForwardSession(options: SpdyPortForwardOptions): WebSocketSession {
  const reader = createFrameReader();
  const decompressor = createHeaderDecompressor();
  const compress = createHeaderCompressor();
  const pairs = new Map<string, Pair>();
  const byStream = new Map<number, Pair>();
  let socket: ServerSocket | undefined;
  let inbound = Promise.resolve();
  let gone = false;

  const send = (frame: SpdyFrame) => (gone || !socket ? Promise.resolve() : socket.send(encodeFrame(frame)));
  const data = (streamId: number, bytes: Uint8Array, flags = 0) =>
    send({ control: false, streamId, flags, data: bytes });
  const reset = (streamId: number, status: number) =>
    send(controlFrame(FRAME.rstStream, words(streamId & 0x7fffffff, status)));

  function end(pair: Pair) {
    if (pair.closed) return;
    pair.closed = true;
    pair.connection?.close();
    pairs.delete(pair.requestId);
    if (pair.data !== undefined) byStream.delete(pair.data);
    if (pair.error !== undefined) byStream.delete(pair.error);
  }

  /** Writes the bytes that came before `connection` was open; frames arriving meanwhile queue behind them, in order. */
  async function flush(pair: Pair, connection: PortForwardStream) {
    while (pair.pending.length && !pair.closed) await connection.write(pair.pending.shift()!);
    pair.flushed = true;
    if (pair.clientFinished) connection.closeWrite();
  }

  async function run(pair: Pair) {
    const failure = async (message: string) => {
      options.log?.warn(`port forward: ${message}`);
      if (pair.error !== undefined) await data(pair.error, new TextEncoder().encode(message));
    };
    try {
      pair.connection = await options.forward(pair.port);
    } catch (error) {
      await failure(`error forwarding port ${pair.port} to ${options.target}: ${(error as Error).message}`);
    }
    const connection = pair.connection;
    if (connection) {
      if (pair.closed) connection.close();
      // The pod's answer is read while the early bytes are written: reading only after them deadlocks once they
      // are more than the pipe holds (the pod blocks writing an answer nobody reads, so takes no more input).
      void flush(pair, connection).catch((error: Error) => {
        options.log?.warn(`port forward to ${options.target}: writing to port ${pair.port}: ${error.message}`);
        connection.close();
      });
      try {
        for await (const chunk of connection.output) {
          if (pair.closed || gone) break;
          for (let at = 0; at < chunk.length; at += MAX_DATA_CHUNK)
            await data(pair.data!, chunk.subarray(at, at + MAX_DATA_CHUNK));
        }
        await connection.done;
      } catch (error) {
        await failure(`error forwarding port ${pair.port} to ${options.target}: ${(error as Error).message}`);
      }
    }
    if (!pair.closed) {
      await data(pair.data!, new Uint8Array(0), FLAG_FIN);
      await data(pair.error!, new Uint8Array(0), FLAG_FIN);
    }
    end(pair);
  }

  async function synStream(frame: Extract<SpdyFrame, { control: true }>) {
    const view = new DataView(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
    const streamId = view.getUint32(0) & 0x7fffffff;
    const headers = decodeHeaderBlock(await decompressor.decompress(frame.data.subarray(10)));
    const portText = headers.port?.[0] ?? "";
    const type = headers.streamtype?.[0] ?? "";
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535 || (type !== "data" && type !== "error")) {
      options.log?.warn(`port forward: refused stream ${streamId}: port "${portText}", streamType "${type}"`);
      return reset(streamId, RST.protocolError);
    }
    // Old clients sent no requestID: upstream pairs an error stream N with the data stream N+2.
    const requestId = headers.requestid?.[0] ?? String(type === "error" ? streamId : streamId - 2);
    let pair = pairs.get(requestId);
    if (!pair) {
      pair = { requestId, port, pending: [], flushed: false, clientFinished: false, closed: false };
      pairs.set(requestId, pair);
    }
    if (pair[type] !== undefined) return reset(streamId, RST.protocolError);
    pair[type] = streamId;
    byStream.set(streamId, pair);
    await send(controlFrame(FRAME.synReply, new Uint8Array([...words(streamId), ...compress(encodeHeaderBlock({}))])));
    if (pair.data !== undefined && pair.error !== undefined) void run(pair);
  }

  async function handle(frame: SpdyFrame) {
    if (!frame.control) {
      const pair = byStream.get(frame.streamId);
      // The client's error stream carries nothing; its data stream carries the bytes for the pod.
      if (!pair || frame.streamId !== pair.data) return;
      if (frame.data.length) {
        if (pair.flushed) await pair.connection!.write(frame.data);
        else pair.pending.push(frame.data);
      }
      if (frame.flags & FLAG_FIN) {
        pair.clientFinished = true;
        if (pair.flushed) pair.connection!.closeWrite();
      }
      return;
    }
    const view = new DataView(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
    switch (frame.type) {
      case FRAME.synStream:
        return synStream(frame);
      case FRAME.rstStream: {
        const pair = byStream.get(view.getUint32(0) & 0x7fffffff);
        if (pair) end(pair);
        return;
      }
      case FRAME.ping:
        // The client's pings (odd ids) are echoed; it times the connection out without answers.
        return send(frame);
      case FRAME.goAway:
        return close();
      default:
        // SETTINGS, WINDOW_UPDATE, HEADERS: spdystream sends no flow control that needs an answer.
        return;
    }
  }

  function close() {
    gone = true;
    for (const pair of [...pairs.values()]) end(pair);
    decompressor.close();
  }

  return {
    protocol: SPDY_TUNNEL_PROTOCOL,
    open(opened) {
      socket = opened;
    },
    message(bytes) {
      const frames = reader.push(bytes);
      inbound = inbound
        .then(async () => {
          for (const frame of frames) await handle(frame);
        })
        .catch((error: Error) => {
          options.log?.warn(`port forward to ${options.target}: ${error.message}; closing the connection`);
          socket?.close(1011, "protocol error");
          close();
        });
    },
    close,
  };
}
