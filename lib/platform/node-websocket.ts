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

/** What a frame reader reports. */
export interface FrameEvents {
  /** A whole message (fragments joined; text checked to be UTF-8). */
  message(data: Uint8Array): void;
  ping(data: Uint8Array): void;
  close(): void;
  /** A protocol violation: why, and the close code to answer with (RFC 6455 7.4.1); nothing is read after it. */
  error(why: string, code: number): void;
}

export interface FrameReaderOptions {
  /** Largest message, joined from its fragments (default 16 MiB); a larger one is closed with 1009. */
  maxMessageBytes?: number;
  /** Counts the bytes copied while buffering and joining: a test's measure that reading stays linear. */
  stats?: { copied: number };
}

/**
 * Parses client frames from a byte stream: whole messages (fragments joined) and control frames. Reads are kept as
 * a list and each payload copied out once (unmasked on the way), so a frame spread over many reads costs linear time.
 */
export function createFrameReader(on: FrameEvents, options: FrameReaderOptions = {}) {
  const max = options.maxMessageBytes ?? MAX_MESSAGE;
  const stats = options.stats ?? { copied: 0 };
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  /** The reads not consumed yet; the first from `offset`. */
  const chunks: Buffer[] = [];
  let offset = 0;
  let buffered = 0;
  /** The message being joined: its first frame's opcode (0: none), its fragments and their length. */
  let opcode = 0;
  let fragments: Buffer[] = [];
  let fragmentBytes = 0;
  let failed = false;

  /** Copies `n` buffered bytes from `skip` on into `into` (without consuming them). */
  const copy = (into: Buffer, skip: number, n: number) => {
    let at = offset + skip;
    let written = 0;
    for (const chunk of chunks) {
      if (at >= chunk.length) {
        at -= chunk.length;
        continue;
      }
      written += chunk.copy(into, written, at, Math.min(chunk.length, at + n - written));
      at = 0;
      if (written === n) break;
    }
    return into;
  };
  /** Drops `n` buffered bytes. */
  const consume = (n: number) => {
    buffered -= n;
    offset += n;
    while (chunks.length && offset >= chunks[0]!.length) offset -= chunks.shift()!.length;
  };
  const fail = (code: number, why: string) => {
    failed = true;
    chunks.length = 0;
    fragments = [];
    on.error(why, code);
  };

  return (chunk: Buffer) => {
    if (failed) return;
    chunks.push(chunk);
    buffered += chunk.length;
    const header = Buffer.alloc(14);
    for (;;) {
      if (buffered < 2) return;
      copy(header, 0, Math.min(14, buffered));
      const fin = (header[0]! & 0x80) !== 0;
      const frameOpcode = header[0]! & 0x0f;
      const masked = (header[1]! & 0x80) !== 0;
      let length = header[1]! & 0x7f;
      let at = 2;
      if (length === 126) {
        if (buffered < 4) return;
        length = header.readUInt16BE(2);
        at = 4;
      } else if (length === 127) {
        if (buffered < 10) return;
        length = Number(header.readBigUInt64BE(2));
        at = 10;
      }
      if (header[0]! & 0x70) return fail(1002, "RSV bits set, but no extension was negotiated");
      if (!masked) return fail(1002, "client frames must be masked");
      if (frameOpcode >= 8) {
        if (frameOpcode > OP.pong) return fail(1002, `unknown control opcode ${frameOpcode}`);
        if (!fin) return fail(1002, "a control frame must not be fragmented");
        if (length > 125) return fail(1002, `a control frame of ${length} bytes is over the 125 allowed`);
      } else {
        if (frameOpcode > OP.binary) return fail(1002, `unknown data opcode ${frameOpcode}`);
        if (frameOpcode === OP.continuation && !opcode)
          return fail(1002, "a continuation frame with nothing to continue");
        if (frameOpcode !== OP.continuation && opcode)
          return fail(1002, "a new message began before the fragmented one ended");
        if (fragmentBytes + length > max)
          return fail(1009, `a message of over ${fragmentBytes + length} bytes is over the ${max} limit`);
      }
      if (buffered < at + 4 + length) return;
      const mask = header.subarray(at, at + 4);
      const payload = copy(Buffer.allocUnsafe(length), at + 4, length);
      stats.copied += length;
      for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i & 3]!;
      consume(at + 4 + length);
      if (frameOpcode === OP.close) {
        failed = true; // nothing is read after a close
        return on.close();
      }
      if (frameOpcode === OP.ping) on.ping(payload);
      if (frameOpcode >= 8) continue;
      opcode ||= frameOpcode;
      fragments.push(payload);
      fragmentBytes += length;
      if (!fin) continue;
      const data = fragments.length === 1 ? fragments[0]! : Buffer.concat(fragments, fragmentBytes);
      if (fragments.length > 1) stats.copied += fragmentBytes;
      const text = opcode === OP.text;
      opcode = 0;
      fragments = [];
      fragmentBytes = 0;
      if (text)
        try {
          utf8.decode(data);
        } catch {
          return fail(1007, "a text message is not valid UTF-8");
        }
      on.message(data);
    }
  };
}

/**
 * Why a request cannot be upgraded as RFC 6455 4.2.1 asks (GET, Upgrade: websocket, Connection: Upgrade, a
 * Sec-WebSocket-Key of 16 bytes in base64, Sec-WebSocket-Version 13), with the status to answer; undefined when it can.
 */
export function handshakeProblem(incoming: IncomingMessage): { status: 400 | 426; why: string } | undefined {
  const header = (name: string) => String(incoming.headers[name] ?? "");
  const tokens = (name: string) =>
    header(name)
      .toLowerCase()
      .split(",")
      .map((t) => t.trim());
  if (incoming.method !== "GET") return { status: 400, why: `a WebSocket handshake is a GET, not ${incoming.method}` };
  if (!tokens("upgrade").includes("websocket"))
    return { status: 400, why: "the Upgrade header does not name websocket" };
  if (!tokens("connection").includes("upgrade"))
    return { status: 400, why: "the Connection header does not name Upgrade" };
  if (!/^[A-Za-z0-9+/]{21}[AQgw]==$/.test(header("sec-websocket-key")))
    return { status: 400, why: "Sec-WebSocket-Key is not 16 bytes in base64" };
  const version = header("sec-websocket-version");
  if (!version) return { status: 400, why: "Sec-WebSocket-Version is missing" };
  if (version !== "13") return { status: 426, why: `WebSocket version ${version} is not supported: only 13 is` };
  return undefined;
}

/** A plain HTTP response on a socket that was asked to upgrade; the connection is closed after it. */
function answer(socket: Duplex, status: number, statusText: string, headers: Array<[string, string]>, body: Buffer) {
  const lines = [`HTTP/1.1 ${status} ${statusText}`, ...headers.map(([name, value]) => `${name}: ${value}`)];
  lines.push(`content-length: ${body.length}`, "connection: close", "", "");
  socket.end(Buffer.concat([Buffer.from(lines.join("\r\n")), body]));
}

/** Serves an 'upgrade' request: the handler's session on the socket, or its plain response when it makes none. */
export async function handleUpgrade(
  fetch: FetchHandler,
  incoming: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const problem = handshakeProblem(incoming);
  if (problem) {
    const { status, why } = problem;
    const extra: Array<[string, string]> = status === 426 ? [["Sec-WebSocket-Version", "13"]] : [];
    answer(
      socket,
      status,
      status === 426 ? "Upgrade Required" : "Bad Request",
      [...extra, ["content-type", "text/plain; charset=utf-8"]],
      Buffer.from(`${why}\n`),
    );
    return;
  }
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
    const headers: Array<[string, string]> = [];
    response.headers.forEach((value, name) => headers.push([name, value]));
    answer(socket, response.status, response.statusText || "Error", headers, Buffer.from(await response.arrayBuffer()));
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
  const closeWith = (code: number, reason: string) => {
    const payload = Buffer.concat([Buffer.from([code >> 8, code & 0xff]), Buffer.from(reason)]);
    void write(encodeWebSocketFrame(OP.close, payload)).then(() => socket.end());
  };
  const read = createFrameReader({
    message: (data) => session.message(data),
    ping: (data) => void write(encodeWebSocketFrame(OP.pong, data)),
    close: () => {
      void write(encodeWebSocketFrame(OP.close, new Uint8Array(0))).then(() => socket.end());
      finish();
    },
    error: (why, code) => {
      closeWith(code, why.slice(0, 123)); // a close frame's payload is at most 125 bytes
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
    close: (code = 1000, reason = "") => closeWith(code, reason),
  });
  if (head.length) read(head);
}
