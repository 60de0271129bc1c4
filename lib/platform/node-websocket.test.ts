import { expect, test } from "bun:test";
import { createFrameReader, encodeWebSocketFrame } from "./node-websocket.ts";

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
