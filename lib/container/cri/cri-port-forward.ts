// One forwarded connection on a CRI runtime: its PortForward call answers with a URL of the runtime's streaming
// server, which speaks the WebSocket port-forward protocol (portforward/websocket.go): per port a data channel 0 and
// an error channel 1, each opened by the port as two little-endian bytes, then the bytes and the failure's text.
import { runtimeError, type PortForwardStream } from "../runtime.ts";
import type { WebSocketConstructor } from "./cri-streaming.ts";

/** The port forward protocol over WebSocket, binary (v4.channel.k8s.io with one data and one error channel per port). */
export const PORT_FORWARD_WEBSOCKET_PROTOCOL = "v4.channel.k8s.io";

/**
 * Bytes sent but not yet on the wire past which a write waits: the client WebSocket has no drain event, so without
 * this a pod that reads slower than kubectl sends would grow the send buffer without bound.
 */
export const SEND_BUFFER_HIGH_WATER = 4 * 1024 * 1024;
/** How often a waiting write looks at the send buffer again (only while it is above the high water mark). */
const SEND_BUFFER_RECHECK_MS = 5;

/** Connects to a streaming server's port forward URL for one port; resolves once the socket is open. */
export function openPortForwardStream(
  url: string,
  options: { action: string; webSocket?: WebSocketConstructor },
): Promise<PortForwardStream> {
  const Socket = options.webSocket ?? (globalThis.WebSocket as WebSocketConstructor | undefined);
  if (!Socket)
    return Promise.reject(
      runtimeError("RuntimeError", `cannot ${options.action}: this JavaScript runtime has no WebSocket client`),
    );
  const socket = new Socket(url.replace(/^http/, "ws"), [PORT_FORWARD_WEBSOCKET_PROTOCOL]);
  socket.binaryType = "arraybuffer";
  const queue: Uint8Array[] = [];
  // The first message of each channel is its port, not data.
  const opened = [false, false];
  let failure = "";
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  let settle!: () => void;
  let fail!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((settle = resolve), (fail = reject)));
  done.catch(() => {});

  socket.onmessage = (event: MessageEvent) => {
    const message = new Uint8Array(event.data as ArrayBuffer);
    const channel = message[0];
    if (channel !== 0 && channel !== 1) return;
    if (!opened[channel]) opened[channel] = true;
    else if (channel === 0 && message.length > 1) {
      queue.push(message.slice(1));
      notify();
    } else if (channel === 1) failure += new TextDecoder().decode(message.subarray(1));
  };
  return new Promise<PortForwardStream>((resolve, reject) => {
    let open = false;
    socket.onerror = () => {
      if (!open)
        reject(
          runtimeError(
            "RuntimeError",
            `cannot ${options.action}: the runtime's streaming server at ${url} refused the WebSocket connection`,
          ),
        );
    };
    socket.onclose = () => {
      ended = true;
      notify();
      if (failure) fail(runtimeError("RuntimeError", failure));
      else settle();
    };
    socket.onopen = () => {
      open = true;
      resolve({
        output: (async function* () {
          for (;;) {
            const chunk = queue.shift();
            if (chunk) yield chunk;
            else if (ended) return;
            else await new Promise<void>((wakeUp) => (wake = wakeUp));
          }
        })(),
        async write(data) {
          if (socket.readyState !== socket.OPEN) return;
          const frame = new Uint8Array(data.length + 1);
          frame.set(data, 1);
          socket.send(frame);
          while (socket.readyState === socket.OPEN && socket.bufferedAmount > SEND_BUFFER_HIGH_WATER)
            await new Promise((resume) => setTimeout(resume, SEND_BUFFER_RECHECK_MS));
        },
        // The protocol cannot close one direction: the pod's side sees its end when the stream closes.
        closeWrite: () => {},
        done,
        close() {
          if (ended) return;
          ended = true;
          notify();
          settle();
          socket.close(1000);
        },
      });
    };
  });
}
