// Exec and attach on a CRI runtime: its Exec/Attach calls answer with a URL of the runtime's own
// streaming server (containerd's listens on 127.0.0.1), which speaks the channel protocol over
// WebSocket; this client turns that connection into the port's StreamSession. The only WebSocket client.
import { runtimeError } from "../runtime.ts";
import {
  CHANNEL,
  CHANNEL_PROTOCOLS,
  CLOSE_SIGNAL,
  V5_PROTOCOL,
  decodeFrame,
  encodeFrame,
  encodeResize,
  readStatus,
} from "../channel-protocol.ts";
import type { StreamSession } from "../runtime.ts";
import { createStreamEnding, type StreamOutcome } from "./stream-ending.ts";

/** The WebSocket constructor (the runtime's global; tests may hand in another). */
export type WebSocketConstructor = new (url: string, protocols: string[]) => WebSocket;

export interface ChannelStreamOptions {
  /** "exec [sh -c …] in container abc123": how messages name the call. */
  action: string;
  /** An exec ends with its exit code; an attach has none, and a stream without status is no error for it. */
  kind: "exec" | "attach";
  webSocket?: WebSocketConstructor;
}

/** Connects to a streaming server URL (http://127.0.0.1:port/exec/token) and resolves once it is open. */
export function openChannelStream(url: string, options: ChannelStreamOptions): Promise<StreamSession> {
  const Socket = options.webSocket ?? (globalThis.WebSocket as WebSocketConstructor | undefined);
  if (!Socket)
    return Promise.reject(
      runtimeError("RuntimeError", `cannot ${options.action}: this JavaScript runtime has no WebSocket client`),
    );
  const socket = new Socket(url.replace(/^http/, "ws"), [...CHANNEL_PROTOCOLS]);
  socket.binaryType = "arraybuffer";

  const ending = createStreamEnding(options);
  let outcome: StreamOutcome;

  socket.onmessage = (event: MessageEvent) => {
    const frame = decodeFrame(new Uint8Array(event.data as ArrayBuffer));
    if (!frame) return;
    if ((frame.channel === CHANNEL.stdout || frame.channel === CHANNEL.stderr) && frame.data.length) {
      ending.push({ stream: frame.channel, data: frame.data.slice() });
    } else if (frame.channel === CHANNEL.error && frame.data.length) outcome = readStatus(frame.data);
  };

  return new Promise<StreamSession>((resolve, reject) => {
    let opened = false;
    socket.onerror = () => {
      if (!opened)
        reject(
          runtimeError(
            "RuntimeError",
            `cannot ${options.action}: the runtime's streaming server at ${url} refused the WebSocket connection`,
          ),
        );
    };
    socket.onclose = (event: CloseEvent) =>
      ending.finish(outcome, `the streaming server closed the stream (code ${event.code}) without an exit status`);
    socket.onopen = () => {
      opened = true;
      const send = (channel: number, data?: Uint8Array) => {
        if (socket.readyState === socket.OPEN) socket.send(encodeFrame(channel, data) as Uint8Array<ArrayBuffer>);
      };
      resolve({
        output: ending.output(),
        write: (data) => send(CHANNEL.stdin, data),
        // v4 has no way to close one channel: the process sees end of file only when the stream closes.
        closeStdin: () => {
          if (socket.protocol === V5_PROTOCOL) send(CLOSE_SIGNAL, new Uint8Array([CHANNEL.stdin]));
        },
        resize: (size) => send(CHANNEL.resize, encodeResize(size)),
        exit: ending.exit,
        close() {
          if (ending.stop()) socket.close(1000);
        },
      });
    };
  });
}
