// The WebSocket port forward protocol (pkg/kubelet/cri/streaming/portforward/websocket.go), which the client
// libraries speak (Python's portforward, JavaScript's PortForward): the ports are fixed by the query, each port i
// has a data channel 2i and an error channel 2i+1, the server opens each channel with the port as two little-endian
// bytes, and the connection to each port lives as long as the WebSocket.
import { BASE64_PROTOCOL, V1_PROTOCOL, channelCodec } from "../../container/channel-protocol.ts";
import type { PortForwardStream } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import type { ServerSocket, WebSocketSession } from "../../platform/websocket.ts";

/** The subprotocols served, binary first (websocket.go's v4 binary and base64 ones). */
export const PORT_FORWARD_PROTOCOLS = ["v4.channel.k8s.io", "v4.base64.channel.k8s.io"] as const;

export interface WebSocketPortForwardOptions {
  protocol: string;
  ports: number[];
  forward(port: number): Promise<PortForwardStream>;
  /** "pod web, uid …", for the error channel's message. */
  target: string;
  log?: Logger;
}

/** The ports of a `ports` (or the kubelet's `port`) query: comma-separated or repeated; an error text when malformed. */
export function parsePorts(values: string[]): number[] | string {
  if (values.length === 0) return 'query parameter "ports" is required: give ?ports=8080 (or several, comma-separated)';
  const ports: number[] = [];
  for (const value of values) {
    for (const part of value.split(",")) {
      if (!/^\d+$/.test(part) || Number(part) > 65535) return `unable to parse "${value}" as a port`;
      if (Number(part) < 1) return `port "${value}" must be > 0`;
      ports.push(Number(part));
    }
  }
  return ports;
}

/** The WebSocket session forwarding `options.ports`. */
export function webSocketPortForwardSession(options: WebSocketPortForwardOptions): WebSocketSession {
  const codec = channelCodec(options.protocol === "v4.base64.channel.k8s.io" ? BASE64_PROTOCOL : V1_PROTOCOL);
  /** Each port's connection once the bytes that came before it are written to it. */
  const connections: Array<PortForwardStream | undefined> = [];
  const opened: PortForwardStream[] = [];
  const pending: Uint8Array[][] = options.ports.map(() => []);
  let gone = false;

  async function forward(socket: ServerSocket, index: number, port: number): Promise<void> {
    const channel = index * 2;
    try {
      const connection = await options.forward(port);
      opened.push(connection);
      if (gone) return connection.close();
      // As the SPDY session: the answer is read while the early bytes are written, and messages that come meanwhile
      // queue behind those (written at once, they would overtake them).
      void (async () => {
        while (pending[index]!.length && !gone) await connection.write(pending[index]!.shift()!);
        connections[index] = connection;
      })().catch((error: Error) => {
        options.log?.warn(`port forward to ${options.target}: writing to port ${port}: ${error.message}`);
        connection.close();
      });
      for await (const chunk of connection.output) {
        if (gone) break;
        await socket.send(codec.encode(channel, chunk));
      }
      await connection.done;
    } catch (error) {
      const message = `error forwarding port ${port} to ${options.target}: ${(error as Error).message}`;
      options.log?.warn(`port forward: ${message}`);
      if (!gone) await socket.send(codec.encode(channel + 1, new TextEncoder().encode(message)));
    }
  }

  return {
    protocol: options.protocol,
    open(socket) {
      const opening = options.ports.flatMap((port, index) => {
        const prefix = new Uint8Array([port & 0xff, port >> 8]);
        return [socket.send(codec.encode(index * 2, prefix)), socket.send(codec.encode(index * 2 + 1, prefix))];
      });
      void Promise.all(opening)
        .then(() => Promise.all(options.ports.map((port, index) => forward(socket, index, port))))
        .finally(() => {
          // As upstream: the WebSocket closes once every port's connection is over.
          if (!gone) socket.close(1000);
        });
    },
    message(bytes) {
      const frame = codec.decode(bytes);
      if (!frame || frame.channel % 2 !== 0 || frame.data.length === 0) return;
      const index = frame.channel / 2;
      if (index >= options.ports.length) return;
      const connection = connections[index];
      if (connection) void connection.write(frame.data.slice());
      else pending[index]!.push(frame.data.slice());
    },
    close() {
      gone = true;
      for (const connection of opened) connection.close();
    },
  };
}
