// SPDY/3.1 framing as moby/spdystream speaks it, for both ends the kubelet plays: the server of kubectl's port
// forward (tunnelled in binary WebSocket messages) and the client of a CRI runtime's streaming server (exec and
// attach over a raw upgraded connection): frames read from a byte stream and written to one, and header blocks.
// Go's framer compresses header blocks with zlib and SPDY/3's dictionary, one zlib stream per connection; ours go
// out as stored (uncompressed) deflate blocks in a zlib stream without a dictionary, which every zlib reader takes
// and which needs no state.
import { createInflate, constants as zlibConstants, type Inflate } from "node:zlib";

/** Control frame types (SPDY/3 section 2.6). */
export const FRAME = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

/** FLAG_FIN: the sender's last frame on the stream (data and SYN frames). */
export const FLAG_FIN = 0x01;

/** RST_STREAM status codes used here. */
export const RST = { protocolError: 1, invalidStream: 2, refusedStream: 3, cancel: 5, internalError: 6 } as const;

/** The largest DATA payload we send (a frame allows 2^24 - 1). */
export const MAX_DATA_CHUNK = 32 * 1024;

/** A data frame, or a control frame with its type, flags and payload (header blocks still compressed). */
export type SpdyFrame =
  | { control: false; streamId: number; flags: number; data: Uint8Array }
  | { control: true; version: number; type: number; flags: number; data: Uint8Array };

/** A frame's bytes: 8 bytes of header (control bit, version and type, or the stream id; flags; length), the payload. */
export function encodeFrame(frame: SpdyFrame): Uint8Array {
  const out = new Uint8Array(8 + frame.data.length);
  const view = new DataView(out.buffer);
  if (frame.control) view.setUint32(0, 0x80000000 | (frame.version << 16) | frame.type);
  else view.setUint32(0, frame.streamId & 0x7fffffff);
  view.setUint32(4, ((frame.flags & 0xff) << 24) | frame.data.length);
  out.set(frame.data, 8);
  return out;
}

/** Splits a byte stream into frames: push() what arrives, get the frames it completes. */
export function createFrameReader(): { push(bytes: Uint8Array): SpdyFrame[] } {
  let buffer = new Uint8Array(0);
  return {
    push(bytes) {
      const joined = new Uint8Array(buffer.length + bytes.length);
      joined.set(buffer);
      joined.set(bytes, buffer.length);
      const frames: SpdyFrame[] = [];
      let at = 0;
      while (joined.length - at >= 8) {
        const view = new DataView(joined.buffer, joined.byteOffset + at);
        const first = view.getUint32(0);
        const flagsAndLength = view.getUint32(4);
        const length = flagsAndLength & 0xffffff;
        if (joined.length - at < 8 + length) break;
        const data = joined.slice(at + 8, at + 8 + length);
        const flags = flagsAndLength >>> 24;
        frames.push(
          first & 0x80000000
            ? { control: true, version: (first >>> 16) & 0x7fff, type: first & 0xffff, flags, data }
            : { control: false, streamId: first & 0x7fffffff, flags, data },
        );
        at += 8 + length;
      }
      buffer = joined.slice(at);
      return frames;
    },
  };
}

/** A control frame of SPDY/3 of `type` with `flags` and `data`. */
export const controlFrame = (type: number, data: Uint8Array, flags = 0): SpdyFrame => ({
  control: true,
  version: 3,
  type,
  flags,
  data,
});

/** Big-endian 32-bit words. */
export function words(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((value, i) => view.setUint32(i * 4, value >>> 0));
  return out;
}

/** Header names (lower case) and their values, as a SPDY header block carries them. */
export type SpdyHeaders = Record<string, string[]>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A header block, uncompressed: the pair count, then each name and its values (joined by NUL), length-prefixed. */
export function encodeHeaderBlock(headers: SpdyHeaders): Uint8Array {
  const parts: Uint8Array[] = [words(Object.keys(headers).length)];
  for (const [name, values] of Object.entries(headers)) {
    const n = encoder.encode(name.toLowerCase());
    const v = encoder.encode(values.join("\0"));
    parts.push(words(n.length), n, words(v.length), v);
  }
  return concat(parts);
}

/** An uncompressed header block's headers; throws on a block cut short. */
export function decodeHeaderBlock(block: Uint8Array): SpdyHeaders {
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
  let at = 0;
  const take = () => {
    if (at + 4 > block.length) throw new Error("SPDY header block cut short");
    const length = view.getUint32(at);
    if (at + 4 + length > block.length) throw new Error("SPDY header block cut short");
    const text = decoder.decode(block.subarray(at + 4, at + 4 + length));
    at += 4 + length;
    return text;
  };
  if (block.length < 4) throw new Error("SPDY header block cut short");
  const count = view.getUint32(0);
  at = 4;
  const headers: SpdyHeaders = {};
  for (let i = 0; i < count; i++) {
    const name = take().toLowerCase();
    headers[name] = take().split("\0");
  }
  return headers;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * SPDY/3's header dictionary (draft 3, section 2.6.10.1), as Go's spdy package has it. Some implementations append
 * a NUL byte; a client's zlib header names the dictionary it used by checksum, so both are accepted.
 */
export const SPDY3_DICTIONARY = new Uint8Array(
  Buffer.from(
    "AAAAB29wdGlvbnMAAAAEaGVhZAAAAARwb3N0AAAAA3B1dAAAAAZkZWxldGUAAAAFdHJhY2UAAAAGYWNjZXB0AAAADmFjY2VwdC1jaGFyc2V0AAAAD2FjY2VwdC1lbmNvZGluZwAAAA9hY2NlcHQtbGFuZ3VhZ2UAAAANYWNjZXB0LXJhbmdlcwAAAANhZ2UAAAAFYWxsb3cAAAANYXV0aG9yaXphdGlvbgAAAA1jYWNoZS1jb250cm9sAAAACmNvbm5lY3Rpb24AAAAMY29udGVudC1iYXNlAAAAEGNvbnRlbnQtZW5jb2RpbmcAAAAQY29udGVudC1sYW5ndWFnZQAAAA5jb250ZW50LWxlbmd0aAAAABBjb250ZW50LWxvY2F0aW9uAAAAC2NvbnRlbnQtbWQ1AAAADWNvbnRlbnQtcmFuZ2UAAAAMY29udGVudC10eXBlAAAABGRhdGUAAAAEZXRhZwAAAAZleHBlY3QAAAAHZXhwaXJlcwAAAARmcm9tAAAABGhvc3QAAAAIaWYtbWF0Y2gAAAARaWYtbW9kaWZpZWQtc2luY2UAAAANaWYtbm9uZS1tYXRjaAAAAAhpZi1yYW5nZQAAABNpZi11bm1vZGlmaWVkLXNpbmNlAAAADWxhc3QtbW9kaWZpZWQAAAAIbG9jYXRpb24AAAAMbWF4LWZvcndhcmRzAAAABnByYWdtYQAAABJwcm94eS1hdXRoZW50aWNhdGUAAAATcHJveHktYXV0aG9yaXphdGlvbgAAAAVyYW5nZQAAAAdyZWZlcmVyAAAAC3JldHJ5LWFmdGVyAAAABnNlcnZlcgAAAAJ0ZQAAAAd0cmFpbGVyAAAAEXRyYW5zZmVyLWVuY29kaW5nAAAAB3VwZ3JhZGUAAAAKdXNlci1hZ2VudAAAAAR2YXJ5AAAAA3ZpYQAAAAd3YXJuaW5nAAAAEHd3dy1hdXRoZW50aWNhdGUAAAAGbWV0aG9kAAAAA2dldAAAAAZzdGF0dXMAAAAGMjAwIE9LAAAAB3ZlcnNpb24AAAAISFRUUC8xLjEAAAADdXJsAAAABnB1YmxpYwAAAApzZXQtY29va2llAAAACmtlZXAtYWxpdmUAAAAGb3JpZ2luMTAwMTAxMjAxMjAyMjA1MjA2MzAwMzAyMzAzMzA0MzA1MzA2MzA3NDAyNDA1NDA2NDA3NDA4NDA5NDEwNDExNDEyNDEzNDE0NDE1NDE2NDE3NTAyNTA0NTA1MjAzIE5vbi1BdXRob3JpdGF0aXZlIEluZm9ybWF0aW9uMjA0IE5vIENvbnRlbnQzMDEgTW92ZWQgUGVybWFuZW50bHk0MDAgQmFkIFJlcXVlc3Q0MDEgVW5hdXRob3JpemVkNDAzIEZvcmJpZGRlbjQwNCBOb3QgRm91bmQ1MDAgSW50ZXJuYWwgU2VydmVyIEVycm9yNTAxIE5vdCBJbXBsZW1lbnRlZDUwMyBTZXJ2aWNlIFVuYXZhaWxhYmxlSmFuIEZlYiBNYXIgQXByIE1heSBKdW4gSnVsIEF1ZyBTZXB0IE9jdCBOb3YgRGVjIDAwOjAwOjAwIE1vbiwgVHVlLCBXZWQsIFRodSwgRnJpLCBTYXQsIFN1biwgR01UY2h1bmtlZCx0ZXh0L2h0bWwsaW1hZ2UvcG5nLGltYWdlL2pwZyxpbWFnZS9naWYsYXBwbGljYXRpb24veG1sLGFwcGxpY2F0aW9uL3hodG1sK3htbCx0ZXh0L3BsYWluLHRleHQvamF2YXNjcmlwdCxwdWJsaWNwcml2YXRlbWF4LWFnZT1nemlwLGRlZmxhdGUsc2RjaGNoYXJzZXQ9dXRmLThjaGFyc2V0PWlzby04ODU5LTEsdXRmLSwqLGVucT0wLg==",
    "base64",
  ),
);
const DICTIONARIES = [SPDY3_DICTIONARY, new Uint8Array([...SPDY3_DICTIONARY, 0])];

/** zlib's Adler-32 checksum (the DICTID of a zlib header). */
export function adler32(data: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

const SYNC_MARK = new Uint8Array([0x00, 0x00, 0x00, 0xff, 0xff]);

/** Our side's header compression: one zlib stream of stored blocks (the zlib header goes with the first block). */
export function createHeaderCompressor(): (block: Uint8Array) => Uint8Array {
  let started = false;
  return (block) => {
    const parts: Uint8Array[] = [];
    if (!started) parts.push(new Uint8Array([0x78, 0x01]));
    started = true;
    for (let at = 0; at === 0 || at < block.length; at += 0xffff) {
      const piece = block.subarray(at, at + 0xffff);
      const n = piece.length;
      parts.push(new Uint8Array([0x00, n & 0xff, n >> 8, ~n & 0xff, (~n >> 8) & 0xff]), piece);
    }
    // An empty stored block, as Z_SYNC_FLUSH ends a block: Go's inflater hands out what it has at that mark; without
    // it, it reads on for the next block header, past the frame, and fails every later block.
    parts.push(SYNC_MARK);
    return concat(parts);
  };
}

/** The length of the header block at the start of `bytes` once all of it is there, else undefined. */
function headerBlockLength(bytes: Uint8Array): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 4) return undefined;
  let at = 4;
  for (let i = 0, count = view.getUint32(0) * 2; i < count; i++) {
    if (at + 4 > bytes.length) return undefined;
    at += 4 + view.getUint32(at);
  }
  return at <= bytes.length ? at : undefined;
}

/**
 * The peer's header decompression: one inflate stream for the connection, fed each block in order. A block's
 * output is complete when it parses as a whole header block (the format gives every length), however the inflate
 * stream times its output events against the flush.
 */
export function createHeaderDecompressor(): { decompress(block: Uint8Array): Promise<Uint8Array>; close(): void } {
  let inflate: Inflate | undefined;
  let output: Uint8Array = new Uint8Array(0);
  let waiting: { resolve(block: Uint8Array): void; reject(error: Error): void } | undefined;
  const settle = () => {
    const length = headerBlockLength(output);
    if (!waiting || length === undefined) return;
    const block = output.slice(0, length);
    output = output.slice(length);
    const { resolve } = waiting;
    waiting = undefined;
    resolve(block);
  };
  return {
    decompress(block) {
      if (!inflate) {
        // The zlib header's DICTID says which dictionary the client compressed with.
        const dictId = block.length >= 6 ? new DataView(block.buffer, block.byteOffset + 2, 4).getUint32(0) : 0;
        const dictionary = DICTIONARIES.find((d) => adler32(d) === dictId) ?? SPDY3_DICTIONARY;
        inflate = createInflate({ dictionary: Buffer.from(dictionary) });
        inflate.on("data", (chunk: Buffer) => {
          output = concat([output, chunk]);
          settle();
        });
        inflate.on("error", (error: Error) =>
          waiting?.reject(new Error(`SPDY header block does not inflate: ${error.message}`)),
        );
      }
      const stream = inflate;
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
        stream.write(block);
        // A block that flushes short of a whole header block waits for the rest (no client sends one).
        stream.flush(zlibConstants.Z_SYNC_FLUSH, settle);
      });
    },
    close: () => inflate?.destroy(),
  };
}
