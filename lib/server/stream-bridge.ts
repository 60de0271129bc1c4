// One /exec or /attach connection: the client's WebSocket, in the channel protocol, joined to a
// runtime StreamSession. Stdin (channel 0) and resizes (4) go to the session, output goes out on 1 and
// 2, and the end goes out as a metav1.Status on 3 before the socket closes, as the Go kubelet does.
import {
  CHANNEL,
  CLOSE_SIGNAL,
  V5_PROTOCOL,
  channelCodec,
  decodeResize,
  exitStatus,
  internalErrorStatus,
  type ChannelStatus,
} from "../container/channel-protocol.ts";
import type { StreamOptions, StreamSession } from "../container/runtime.ts";
import type { Logger } from "../log.ts";
import type { ServerSocket, WebSocketSession } from "../platform/websocket.ts";

export interface BridgeOptions {
  protocol: string;
  streams: StreamOptions;
  /** Opens the runtime's session; called once the socket is open. */
  open(): Promise<StreamSession>;
  /** "exec [sh -c …] in container abc123", for the error status and the log. */
  action: string;
  log?: Logger;
}

/** The WebSocket session bridging a client to a runtime stream. */
export function bridgeStream(options: BridgeOptions): WebSocketSession {
  let session: StreamSession | undefined;
  let gone = false;
  // Client messages that arrive while the runtime's session is still opening.
  const early: Uint8Array[] = [];
  const codec = channelCodec(options.protocol);

  const deliver = (message: Uint8Array) => {
    const frame = codec.decode(message);
    if (!frame || !session) return;
    if (frame.channel === CHANNEL.stdin && options.streams.stdin) session.write(frame.data);
    else if (frame.channel === CHANNEL.resize) {
      const size = decodeResize(frame.data);
      if (size) session.resize(size);
      else options.log?.warn(`${options.action}: ignored a malformed resize message`);
    } else if (frame.channel === CLOSE_SIGNAL && options.protocol === V5_PROTOCOL && frame.data[0] === CHANNEL.stdin)
      session.closeStdin();
  };

  async function run(socket: ServerSocket): Promise<void> {
    const end = async (status: ChannelStatus) => {
      const message = codec.status(status);
      if (message !== undefined) await socket.send(message);
      socket.close(1000);
    };
    try {
      session = await options.open();
    } catch (error) {
      return end(internalErrorStatus(`${options.action}: ${(error as Error).message}`));
    }
    if (gone) return session.close();
    for (const message of early.splice(0)) deliver(message);
    // The Go servers' "connection established" signal: an empty message on the lowest writable channel.
    const first = options.streams.stdout ? CHANNEL.stdout : options.streams.stderr ? CHANNEL.stderr : CHANNEL.error;
    await socket.send(codec.encode(first));
    for await (const chunk of session.output) {
      if (gone) break;
      await socket.send(codec.encode(chunk.stream, chunk.data));
    }
    let status;
    try {
      status = exitStatus(await session.exit);
    } catch (error) {
      options.log?.warn(`${options.action} failed: ${(error as Error).message}`);
      status = internalErrorStatus(`error executing command in container: ${(error as Error).message}`);
    }
    session.close();
    if (gone) return;
    await end(status);
  }

  return {
    protocol: options.protocol,
    open: (socket) =>
      void run(socket).catch((error: Error) => options.log?.warn(`${options.action}: ${error.message}`)),
    message(data) {
      if (session) deliver(data);
      else early.push(data.slice());
    },
    close() {
      gone = true;
      session?.close();
    },
  };
}
