// WebSocket upgrades on a node:http(s) server (RFC 6455, server side): the handshake, then frames
// both ways for a WebSocketSession. Used where the kubelet serves through node:http(s) under Bun (a
// client CA: Bun.serve cannot tell a handler whether a client certificate was given; tls-http.ts),
// so exec and attach streams work there as on Bun.serve.
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import { markClientCertificate, peerSubject } from "./client-certificate.ts";
import type { FetchHandler } from "./types.ts";
import { webSocketSessionOf, type WebSocketSession } from "./websocket.ts";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const OP = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;
/** Largest message accepted from a client (stdin and resizes are small). */
const MAX_MESSAGE = 16 * 2 ** 20;

/** One frame, unmasked (servers never mask). */
export function encodeWebSocketFrame(opcode: number, payload: Uint8Array): Buffer {
  const length = payload.byteLength;
  const header =
    length < 126
      ? Buffer.from([0x80 | opcode, length])
      : length < 65_536
        ? Buffer.from([0x80 | opcode, 126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([0x80 | opcode, 127]), bigEndian64(length)]);
  return Buffer.concat([header, payload]);
}

function bigEndian64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** Parses client frames from a byte stream: whole messages (fragments joined) and control frames. */
export function createFrameReader(on: {
  message(data: Uint8Array): void;
  ping(data: Uint8Array): void;
  close(): void;
  error(why: string): void;
}) {
  let buffered = Buffer.alloc(0);
  let fragments: Buffer[] = [];
  return (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      if (buffered.length < 2) return;
      const fin = (buffered[0]! & 0x80) !== 0;
      const opcode = buffered[0]! & 0x0f;
      const masked = (buffered[1]! & 0x80) !== 0;
      let length = buffered[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffered.length < 4) return;
        length = buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffered.length < 10) return;
        length = Number(buffered.readBigUInt64BE(2));
        offset = 10;
      }
      if (!masked) return on.error("client frames must be masked");
      if (length > MAX_MESSAGE) return on.error(`a message of ${length} bytes is over the ${MAX_MESSAGE} limit`);
      if (buffered.length < offset + 4 + length) return;
      const mask = buffered.subarray(offset, offset + 4);
      const payload = Buffer.from(buffered.subarray(offset + 4, offset + 4 + length));
      for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
      buffered = buffered.subarray(offset + 4 + length);
      if (opcode === OP.close) return on.close();
      if (opcode === OP.ping) on.ping(payload);
      else if (opcode === OP.text || opcode === OP.binary || opcode === OP.continuation) {
        fragments.push(payload);
        if (fin) {
          on.message(Buffer.concat(fragments));
          fragments = [];
        }
      }
    }
  };
}

/** Serves an 'upgrade' request: the handler's session on the socket, or its plain response when it makes none. */
export async function handleUpgrade(
  fetch: FetchHandler,
  incoming: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers))
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  const request = new Request(`https://${incoming.headers.host ?? "localhost"}${incoming.url ?? "/"}`, {
    method: incoming.method ?? "GET",
    headers,
  });
  if ((socket as TLSSocket).authorized === true) markClientCertificate(request, peerSubject(socket as TLSSocket));
  const response = await fetch(request);
  const session = webSocketSessionOf(response);
  if (!session) {
    const body = Buffer.from(await response.arrayBuffer());
    const lines = [`HTTP/1.1 ${response.status} ${response.statusText || "Error"}`];
    response.headers.forEach((value, name) => lines.push(`${name}: ${value}`));
    lines.push(`content-length: ${body.length}`, "connection: close", "", "");
    socket.end(Buffer.concat([Buffer.from(lines.join("\r\n")), body]));
    return;
  }
  const accept = createHash("sha1")
    .update(`${incoming.headers["sec-websocket-key"] ?? ""}${GUID}`)
    .digest("base64");
  socket.write(
    [
      "HTTP/1.1 101 Switching Protocols",
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Accept: ${accept}`,
      `Sec-WebSocket-Protocol: ${session.protocol}`,
      "",
      "",
    ].join("\r\n"),
  );
  run(session, socket, head);
}

function run(session: WebSocketSession, socket: Duplex, head: Buffer): void {
  let closed = false;
  const finish = () => {
    if (closed) return;
    closed = true;
    session.close();
  };
  const write = (frame: Buffer) =>
    new Promise<void>((resolve) => {
      if (socket.destroyed || socket.write(frame)) resolve();
      else socket.once("drain", resolve);
    });
  const read = createFrameReader({
    message: (data) => session.message(data),
    ping: (data) => void write(encodeWebSocketFrame(OP.pong, data)),
    close: () => {
      void write(encodeWebSocketFrame(OP.close, new Uint8Array(0))).then(() => socket.end());
      finish();
    },
    error: () => {
      socket.destroy();
      finish();
    },
  });
  socket.on("data", read);
  socket.on("close", finish);
  socket.on("error", finish);
  session.open({
    send: (data) =>
      write(
        typeof data === "string"
          ? encodeWebSocketFrame(OP.text, Buffer.from(data))
          : encodeWebSocketFrame(OP.binary, data),
      ),
    close(code = 1000, reason = "") {
      const payload = Buffer.concat([Buffer.from([code >> 8, code & 0xff]), Buffer.from(reason)]);
      void write(encodeWebSocketFrame(OP.close, payload)).then(() => socket.end());
    },
  });
  if (head.length) read(head);
}
