import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { createFrameReader, encodeWebSocketFrame, handleUpgrade } from "./node-websocket.ts";
import { upgradeToWebSocket } from "./websocket.ts";

/** A client frame: masked, as RFC 6455 requires of clients. */
function clientFrame(opcode: number, payload: Uint8Array, fin = true): Buffer {
  const mask = Buffer.from([1, 2, 3, 4]);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | payload.length]), mask, masked]);
}

test("server frames are unmasked, with 7-bit, 16-bit and 64-bit lengths", () => {
  expect([...encodeWebSocketFrame(2, new Uint8Array(3)).subarray(0, 2)]).toEqual([0x82, 3]);
  expect([...encodeWebSocketFrame(1, new Uint8Array(300)).subarray(0, 4)]).toEqual([0x81, 126, 1, 44]);
  const big = encodeWebSocketFrame(2, new Uint8Array(70_000));
  expect([big[1], big.readBigUInt64BE(2)]).toEqual([127, 70_000n]);
});

test("client frames are unmasked, fragments joined across chunks, pings answered, a close ends", () => {
  const seen: string[] = [];
  const read = createFrameReader({
    message: (data) => seen.push(`message ${Buffer.from(data)}`),
    ping: (data) => seen.push(`ping ${Buffer.from(data)}`),
    close: () => seen.push("close"),
    error: (why) => seen.push(`error ${why}`),
  });
  const stream = Buffer.concat([
    clientFrame(2, Buffer.from("he"), false),
    clientFrame(0, Buffer.from("llo")),
    clientFrame(9, Buffer.from("p")),
    clientFrame(8, new Uint8Array(0)),
  ]);
  read(stream.subarray(0, 5));
  read(stream.subarray(5));
  expect(seen).toEqual(["message hello", "ping p", "close"]);
  const refused: string[] = [];
  createFrameReader({ message() {}, ping() {}, close() {}, error: (why) => refused.push(why) })(
    Buffer.from([0x82, 1, 0]),
  );
  expect(refused).toEqual(["client frames must be masked"]);
});

/** A client frame of any length, masked unless told, with the first byte's bits given whole. */
function rawFrame(first: number, payload: Uint8Array, options: { masked?: boolean } = {}): Buffer {
  const masked = options.masked ?? true;
  const length = payload.length;
  const size =
    length < 126
      ? Buffer.from([length])
      : length < 65_536
        ? Buffer.from([126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([127]), bigEndian(length)]);
  size[0]! |= masked ? 0x80 : 0;
  const mask = masked ? Buffer.from([9, 8, 7, 6]) : Buffer.alloc(0);
  const body = masked ? Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!)) : Buffer.from(payload);
  return Buffer.concat([Buffer.from([first]), size, mask, body]);
}

function bigEndian(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

const KEY = "dGhlIHNhbXBsZSBub25jZQ==";
const HANDSHAKE: Record<string, string> = {
  Upgrade: "websocket",
  Connection: "Upgrade",
  "Sec-WebSocket-Version": "13",
  "Sec-WebSocket-Key": KEY,
  "Sec-WebSocket-Protocol": "v4.channel.k8s.io",
};

describe("the WebSocket server against a raw socket", () => {
  const messages: string[] = [];
  let server: Server;
  let port: number;

  beforeAll(async () => {
    const fetch = async () =>
      upgradeToWebSocket(new Response("no upgrade here", { status: 501 }), {
        protocol: "v4.channel.k8s.io",
        open() {},
        message: (data) => void messages.push(`${data.length} bytes`),
        close() {},
      });
    server = createServer((_, response) => response.end());
    server.on("upgrade", (request, socket, head) => void handleUpgrade(fetch, request, socket, head));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => server.close());

  /** Sends a request with `headers` and collects everything the server sends until it closes. */
  function exchange(headers: Record<string, string>, frames: Buffer[] = []) {
    const socket = connect(port, "127.0.0.1");
    const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`GET /exec HTTP/1.1\r\nHost: localhost\r\n${head.join("")}\r\n`);
    for (const frame of frames) socket.write(frame);
    const received: Buffer[] = [];
    socket.on("data", (d: Buffer) => received.push(d));
    // A server that neither answers nor closes fails the test in 5 s rather than at the test's timeout.
    socket.setTimeout(5000, () => socket.destroy());
    return new Promise<Buffer>((resolve) => {
      socket.on("close", () => resolve(Buffer.concat(received)));
      socket.on("error", () => {});
    });
  }

  /** The status line and headers of a response, and the close code of the close frame after a 101, if any. */
  function parse(reply: Buffer) {
    const end = reply.indexOf("\r\n\r\n");
    const head = reply.subarray(0, end).toString();
    const rest = reply.subarray(end + 4);
    const closeAt = head.startsWith("HTTP/1.1 101") ? rest.indexOf(Buffer.from([0x88])) : -1;
    return {
      status: head.split(" ")[1],
      head,
      closeCode: closeAt >= 0 && rest[closeAt + 1]! >= 2 ? rest.readUInt16BE(closeAt + 2) : undefined,
    };
  }

  test("a handshake with the headers RFC 6455 asks for is accepted with the key's accept value", async () => {
    const { status, head } = parse(await exchange(HANDSHAKE, [rawFrame(0x88, new Uint8Array(0))]));
    expect(status).toBe("101");
    expect(head).toContain("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  });

  test.each([
    ["no Upgrade: websocket", { Upgrade: "h2c" }, "400"],
    ["no Sec-WebSocket-Key", { "Sec-WebSocket-Key": "" }, "400"],
    ["a Sec-WebSocket-Key that is not 16 bytes in base64", { "Sec-WebSocket-Key": "c2hvcnQ=" }, "400"],
    ["no Sec-WebSocket-Version", { "Sec-WebSocket-Version": "" }, "400"],
  ])("a handshake with %s is refused 400", async (_, change, expected) => {
    const headers = Object.fromEntries(
      Object.entries({ ...HANDSHAKE, ...change }).filter(([, value]) => value !== ""),
    ) as Record<string, string>;
    const { status, head } = parse(await exchange(headers));
    expect(status).toBe(expected);
    expect(head).not.toContain("Sec-WebSocket-Accept");
  });

  test("a handshake for another protocol version is refused 426, naming version 13", async () => {
    const { status, head } = parse(await exchange({ ...HANDSHAKE, "Sec-WebSocket-Version": "8" }));
    expect(status).toBe("426");
    expect(head).toMatch(/^Sec-WebSocket-Version: 13$/im);
  });

  const text = (s: string | Uint8Array) => (typeof s === "string" ? Buffer.from(s) : s);
  test.each([
    ["an unmasked frame", 1002, [rawFrame(0x82, text("hi"), { masked: false })]],
    ["RSV1 set with no extension negotiated", 1002, [rawFrame(0xc2, text("hi"))]],
    ["RSV3 set", 1002, [rawFrame(0x92, text("hi"))]],
    ["a ping of 126 bytes", 1002, [rawFrame(0x89, new Uint8Array(126))]],
    ["a fragmented ping", 1002, [rawFrame(0x09, text("p"))]],
    ["an unknown opcode", 1002, [rawFrame(0x83, text("?"))]],
    ["a continuation with nothing to continue", 1002, [rawFrame(0x80, text("x"))]],
    ["a new message inside a fragmented one", 1002, [rawFrame(0x02, text("a")), rawFrame(0x82, text("b"))]],
    ["a text frame that is not UTF-8", 1007, [rawFrame(0x81, Uint8Array.from([0x68, 0xc3, 0x28]))]],
    [
      "a text message whose fragments join to bad UTF-8",
      1007,
      [rawFrame(0x01, Uint8Array.from([0xe2, 0x82])), rawFrame(0x80, Uint8Array.from([0x41]))],
    ],
    [
      "a message joined from fragments over 16 MiB",
      1009,
      [
        ...Array.from({ length: 16 }, (_, i) => rawFrame(i === 0 ? 0x02 : 0x00, new Uint8Array(2 ** 20))),
        rawFrame(0x80, new Uint8Array(1)),
      ],
    ],
  ])("%s closes the connection with %i", async (_, code, frames) => {
    const { status, closeCode } = parse(await exchange(HANDSHAKE, frames as Buffer[]));
    expect(status).toBe("101");
    expect(closeCode).toBe(code);
  });

  test("a text message split inside a character, and a 10 MB message in 64 KB fragments, arrive whole", async () => {
    messages.length = 0;
    const euro = Buffer.from("€");
    const fragments = Array.from({ length: 160 }, (_, i) =>
      rawFrame(i === 0 ? 0x02 : i === 159 ? 0x80 : 0x00, new Uint8Array(65_536)),
    );
    const { closeCode } = parse(
      await exchange(HANDSHAKE, [
        rawFrame(0x01, euro.subarray(0, 1)),
        rawFrame(0x80, euro.subarray(1)),
        ...fragments,
        rawFrame(0x88, Buffer.from([0x03, 0xe8])),
      ]),
    );
    expect(messages).toEqual(["3 bytes", `${160 * 65_536} bytes`]);
    expect(closeCode).toBeUndefined();
  });
});

describe("reading stays linear in the bytes read", () => {
  /** Bytes the reader copied to read `message` fed in `chunk`-byte reads. */
  function copiedFor(frames: Buffer[], chunk: number) {
    const stats = { copied: 0 };
    let total = 0;
    const read = createFrameReader(
      { message: (data) => void (total += data.length), ping() {}, close() {}, error() {} },
      { stats },
    );
    const stream = Buffer.concat(frames);
    for (let at = 0; at < stream.length; at += chunk) read(stream.subarray(at, at + chunk));
    return { copied: stats.copied, total };
  }

  test("a 10 MB message in 64 KB fragments, read 16 KB at a time, is copied at most twice", () => {
    const fragments = Array.from({ length: 160 }, (_, i) =>
      rawFrame(i === 0 ? 0x02 : i === 159 ? 0x80 : 0x00, new Uint8Array(65_536)),
    );
    const { copied, total } = copiedFor(fragments, 16_384);
    expect(total).toBe(160 * 65_536);
    expect(copied).toBeLessThanOrEqual(2 * total);
  });

  test("a single 10 MB frame read 64 KB at a time is copied at most twice, not once per read", () => {
    const { copied, total } = copiedFor([rawFrame(0x82, new Uint8Array(160 * 65_536))], 65_536);
    expect(total).toBe(160 * 65_536);
    expect(copied).toBeLessThanOrEqual(2 * total);
  });
});
