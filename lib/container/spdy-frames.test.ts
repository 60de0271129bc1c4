import { describe, expect, test } from "bun:test";
import { createDeflate, createInflateRaw, constants as zlibConstants, inflateSync } from "node:zlib";
import {
  FLAG_FIN,
  FRAME,
  SPDY3_DICTIONARY,
  adler32,
  controlFrame,
  createFrameReader,
  createHeaderCompressor,
  createHeaderDecompressor,
  decodeHeaderBlock,
  encodeFrame,
  encodeHeaderBlock,
  words,
} from "./spdy-frames.ts";

/** A client's header compression as Go's spdy framer does it: one zlib stream with the dictionary, sync-flushed per block. */
function goLikeCompressor(dictionary: Uint8Array) {
  const deflate = createDeflate({ dictionary: Buffer.from(dictionary), level: 9 });
  const out: Buffer[] = [];
  deflate.on("data", (chunk: Buffer) => out.push(chunk));
  return (block: Uint8Array) =>
    new Promise<Uint8Array>((resolve) => {
      deflate.write(block);
      deflate.flush(zlibConstants.Z_SYNC_FLUSH, () => resolve(new Uint8Array(Buffer.concat(out.splice(0)))));
    });
}

describe("SPDY/3.1 frames", () => {
  test("a data frame and a control frame round-trip through encode and the reader", () => {
    const data = { control: false as const, streamId: 5, flags: FLAG_FIN, data: new TextEncoder().encode("hello") };
    const ping = controlFrame(FRAME.ping, words(7));
    const reader = createFrameReader();
    expect(reader.push(new Uint8Array([...encodeFrame(data), ...encodeFrame(ping)]))).toEqual([
      data,
      { control: true, version: 3, type: FRAME.ping, flags: 0, data: words(7) },
    ]);
  });

  test("the reader holds a frame split across messages until its last byte arrives", () => {
    const bytes = encodeFrame({ control: false, streamId: 3, flags: 0, data: new Uint8Array(300).fill(7) });
    const reader = createFrameReader();
    expect(reader.push(bytes.subarray(0, 5))).toEqual([]);
    expect(reader.push(bytes.subarray(5, 200))).toEqual([]);
    const [frame] = reader.push(bytes.subarray(200));
    expect(frame).toEqual({ control: false, streamId: 3, flags: 0, data: new Uint8Array(300).fill(7) });
  });

  test("the control bit, version and type sit in the first word, flags and length in the second", () => {
    const bytes = encodeFrame(controlFrame(FRAME.synReply, new Uint8Array(4), FLAG_FIN));
    expect([...bytes.subarray(0, 8)]).toEqual([0x80, 0x03, 0x00, 0x02, 0x01, 0x00, 0x00, 0x04]);
  });
});

describe("SPDY header blocks", () => {
  test("headers round-trip, names lower-cased and several values joined by NUL", () => {
    const block = encodeHeaderBlock({ StreamType: ["data"], port: ["8080"], multi: ["a", "b"] });
    expect(decodeHeaderBlock(block)).toEqual({ streamtype: ["data"], port: ["8080"], multi: ["a", "b"] });
  });

  test("a block cut short is an error, not a partial header set", () => {
    const block = encodeHeaderBlock({ port: ["8080"] });
    expect(() => decodeHeaderBlock(block.subarray(0, block.length - 2))).toThrow("cut short");
  });

  test("the dictionary is SPDY/3's: 1423 bytes with Go's checksum", () => {
    expect(SPDY3_DICTIONARY.length).toBe(1423);
    expect(adler32(SPDY3_DICTIONARY).toString(16)).toBe("e3c6a7c2");
    expect(adler32(new TextEncoder().encode("Wikipedia"))).toBe(0x11e60398);
  });

  test("blocks a client compressed with the dictionary, in one zlib stream, decompress in order", async () => {
    const compress = goLikeCompressor(SPDY3_DICTIONARY);
    const decompressor = createHeaderDecompressor();
    const first = { streamtype: ["error"], port: ["80"], requestid: ["0"] };
    const second = { streamtype: ["data"], port: ["80"], requestid: ["0"] };
    const a = await compress(encodeHeaderBlock(first));
    const b = await compress(encodeHeaderBlock(second));
    expect(decodeHeaderBlock(await decompressor.decompress(a))).toEqual(first);
    // The second block refers back to the first: it inflates only with the stream's state.
    expect(decodeHeaderBlock(await decompressor.decompress(b))).toEqual(second);
    decompressor.close();
  });

  test("a client's dictionary with a trailing NUL is recognised by its checksum", async () => {
    const compress = goLikeCompressor(new Uint8Array([...SPDY3_DICTIONARY, 0]));
    const decompressor = createHeaderDecompressor();
    const headers = { port: ["9000"], streamtype: ["data"] };
    expect(decodeHeaderBlock(await decompressor.decompress(await compress(encodeHeaderBlock(headers))))).toEqual(
      headers,
    );
    decompressor.close();
  });

  test("our blocks form one zlib stream any reader inflates, block by block, without the dictionary", async () => {
    const compress = createHeaderCompressor();
    const one = compress(encodeHeaderBlock({}));
    const two = compress(encodeHeaderBlock({ a: ["b"] }));
    expect([...one.subarray(0, 2)]).toEqual([0x78, 0x01]);
    // Each block ends with a sync flush's empty stored block: Go's inflater returns a block's bytes at that mark
    // (without it, it reads on past the frame, and every later SYN_REPLY fails: kubectl's "lost connection to pod").
    for (const block of [one, two]) expect([...block.subarray(-5)]).toEqual([0x00, 0x00, 0x00, 0xff, 0xff]);
    // A reader of the raw deflate data after the 2-byte zlib header, fed one block at a time.
    const inflate = createInflateRaw();
    const out: Buffer[] = [];
    inflate.on("data", (chunk: Buffer) => out.push(chunk));
    const feed = (bytes: Uint8Array) =>
      new Promise<Uint8Array>((resolve) => {
        inflate.write(bytes);
        inflate.flush(zlibConstants.Z_SYNC_FLUSH, () => resolve(new Uint8Array(Buffer.concat(out.splice(0)))));
      });
    expect(decodeHeaderBlock(await feed(one.subarray(2)))).toEqual({});
    expect(decodeHeaderBlock(await feed(two))).toEqual({ a: ["b"] });
    // And the whole, as zlib data.
    const whole = inflateSync(Buffer.from([...one, ...two]), { finishFlush: zlibConstants.Z_SYNC_FLUSH });
    expect(whole.length).toBe(encodeHeaderBlock({}).length + encodeHeaderBlock({ a: ["b"] }).length);
  });
});
