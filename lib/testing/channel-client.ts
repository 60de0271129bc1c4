// A channel-protocol WebSocket client for tests of /exec and /attach: collects what arrives per
// channel, waits on it, and reads the closing Status. Uses Bun's WebSocket (it takes headers).
import { CHANNEL, CLOSE_SIGNAL, decodeFrame, encodeFrame, type ChannelStatus } from "../container/channel-protocol.ts";

export interface ChannelClient {
  /** The subprotocol the server agreed to. */
  protocol: string;
  /** Every message as received: channel and text (the "connected" message has empty text). */
  messages: Array<{ channel: number; text: string }>;
  /** Everything received on a channel so far, as text. */
  text(channel: number): string;
  /** Resolves once the channel's text matches, with that text; rejects if the socket closes first. */
  waitFor(channel: number, pattern: RegExp): Promise<string>;
  send(channel: number, data: string | Uint8Array): void;
  /** v5's close of one channel (stdin: end of file). */
  closeChannel(channel: number): void;
  /** The error channel's Status once the server closed the socket (undefined when none came). */
  finished: Promise<{ status?: ChannelStatus; code: number }>;
  close(): void;
}

/** Opens `url` (http:// or ws://) with the channel subprotocols; rejects when the upgrade is refused. */
export function connectChannels(
  url: string,
  options: { protocols?: string[]; headers?: Record<string, string> } = {},
): Promise<ChannelClient> {
  const Socket = WebSocket as unknown as new (url: string, options: object) => WebSocket;
  const socket = new Socket(url.replace(/^http/, "ws"), {
    protocols: options.protocols ?? ["v5.channel.k8s.io", "v4.channel.k8s.io"],
    headers: options.headers ?? {},
  });
  socket.binaryType = "arraybuffer";
  const decoder = new TextDecoder();
  const messages: ChannelClient["messages"] = [];
  const listeners = new Set<() => void>();
  let closedCode: number | undefined;
  const text = (channel: number) =>
    messages
      .filter((m) => m.channel === channel)
      .map((m) => m.text)
      .join("");
  socket.onmessage = (event: MessageEvent) => {
    const frame = decodeFrame(new Uint8Array(event.data as ArrayBuffer));
    if (frame) messages.push({ channel: frame.channel, text: decoder.decode(frame.data) });
    for (const listener of listeners) listener();
  };
  const finished = new Promise<{ status?: ChannelStatus; code: number }>((resolve) => {
    socket.addEventListener("close", (event) => {
      closedCode = event.code;
      for (const listener of listeners) listener();
      const status = text(CHANNEL.error);
      resolve({ status: status ? (JSON.parse(status) as ChannelStatus) : undefined, code: event.code });
    });
  });
  return new Promise((resolve, reject) => {
    socket.onerror = () => reject(new Error(`WebSocket ${url} failed to open`));
    socket.onopen = () =>
      resolve({
        protocol: socket.protocol,
        messages,
        text,
        waitFor: (channel, pattern) =>
          new Promise((done, fail) => {
            const check = () => {
              const got = text(channel);
              if (pattern.test(got)) {
                listeners.delete(check);
                done(got);
              } else if (closedCode !== undefined) {
                listeners.delete(check);
                fail(
                  new Error(
                    `the socket closed (${closedCode}) before channel ${channel} matched ${pattern}: ${JSON.stringify(messages)}`,
                  ),
                );
              }
            };
            listeners.add(check);
            check();
          }),
        send: (channel, data) =>
          socket.send(
            encodeFrame(
              channel,
              typeof data === "string" ? new TextEncoder().encode(data) : data,
            ) as Uint8Array<ArrayBuffer>,
          ),
        closeChannel: (channel) => socket.send(new Uint8Array([CLOSE_SIGNAL, channel])),
        finished,
        close: () => socket.close(1000),
      });
  });
}
