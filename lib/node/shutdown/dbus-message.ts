// D-Bus messages on the wire (https://dbus.freedesktop.org/doc/dbus-specification.html#message-protocol):
// marshalling of the basic and container types (y b n q i u x t d s o g h v a(…) a{…} (…), each aligned to
// its size from the start of the message) and of the header with its a(yv) fields; reading both byte orders
// (a peer may send big-endian) and framing (a read may hold part of a message, or several).
import { KubeletError } from "../../api/types.ts";

/** A D-Bus value: y n q i u h d → number, x t → bigint, b → boolean, s o g → string, v → Variant, a (…) {…} → array. */
export type DbusValue = number | bigint | boolean | string | Variant | DbusValue[];
/** A value with its own signature ('v'). */
export interface Variant {
  signature: string;
  value: DbusValue;
}

export const MessageType = { MethodCall: 1, MethodReturn: 2, Error: 3, Signal: 4 } as const;
/** Header flag: the sender wants no reply. */
export const NO_REPLY_EXPECTED = 0x1;

/** One message; the header fields a method call, a reply or a signal carries. */
export interface Message {
  type: number;
  flags?: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  sender?: string;
  /** The body's signature, "" (or absent) for none. */
  signature?: string;
  body?: DbusValue[];
}

/** Header field codes and their types (a(yv): code, variant). */
const FIELDS = [
  ["path", 1, "o"],
  ["interface", 2, "s"],
  ["member", 3, "s"],
  ["errorName", 4, "s"],
  ["replySerial", 5, "u"],
  ["destination", 6, "s"],
  ["sender", 7, "s"],
  ["signature", 8, "g"],
] as const;
const FIELD_BY_CODE = new Map<number, (typeof FIELDS)[number]>(FIELDS.map((f) => [f[1], f]));

/** One complete type of a signature: its code and, for a (…) {…} and arrays, its members. */
interface Type {
  code: string;
  members: Type[];
}

/** Each type code's alignment (and, for the fixed-size ones, size). */
const ALIGN: Record<string, number> = {
  y: 1,
  b: 4,
  n: 2,
  q: 2,
  i: 4,
  u: 4,
  x: 8,
  t: 8,
  d: 8,
  h: 4,
  s: 4,
  o: 4,
  g: 1,
  v: 1,
  a: 4,
  "(": 8,
  "{": 8,
};
/** The specification's longest message. */
const MAX_MESSAGE = 128 * 1024 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const malformed = (message: string) => new KubeletError("DbusMalformed", `malformed D-Bus message: ${message}`);

/** Parses a signature into its complete types; throws DbusMalformed naming the signature. */
export function parseSignature(signature: string): Type[] {
  let at = 0;
  const one = (): Type => {
    const code = signature[at++];
    if (code === undefined) throw malformed(`signature "${signature}" ends inside a type`);
    if (code === "a") return { code, members: [one()] };
    if (code === "(" || code === "{") {
      const close = code === "(" ? ")" : "}";
      const members: Type[] = [];
      while (signature[at] !== close) members.push(one());
      at++;
      if (members.length === 0 || (code === "{" && members.length !== 2))
        throw malformed(`signature "${signature}" has an empty struct or a dict entry without key and value`);
      return { code, members };
    }
    if (!(code in ALIGN)) throw malformed(`signature "${signature}" has an unknown type code "${code}"`);
    return { code, members: [] };
  };
  const types: Type[] = [];
  while (at < signature.length) types.push(one());
  return types;
}

/** Writes values little-endian into a growing buffer, aligned from its start. */
class Writer {
  bytes = new Uint8Array(256);
  view = new DataView(this.bytes.buffer);
  length = 0;

  private room(size: number) {
    if (this.length + size <= this.bytes.length) return;
    const bigger = new Uint8Array(Math.max(this.bytes.length * 2, this.length + size));
    bigger.set(this.bytes);
    this.bytes = bigger;
    this.view = new DataView(bigger.buffer);
  }

  align(to: number) {
    const padded = Math.ceil(this.length / to) * to;
    this.room(padded - this.length);
    this.bytes.fill(0, this.length, padded);
    this.length = padded;
  }

  fixed(code: string, value: DbusValue) {
    const size = ALIGN[code]!;
    this.align(size);
    this.room(size);
    const at = this.length;
    const view = this.view;
    if (code === "y") view.setUint8(at, Number(value));
    else if (code === "b") view.setUint32(at, value ? 1 : 0, true);
    else if (code === "n") view.setInt16(at, Number(value), true);
    else if (code === "q") view.setUint16(at, Number(value), true);
    else if (code === "i") view.setInt32(at, Number(value), true);
    else if (code === "u" || code === "h") view.setUint32(at, Number(value), true);
    else if (code === "x") view.setBigInt64(at, BigInt(value as number | bigint), true);
    else if (code === "t") view.setBigUint64(at, BigInt(value as number | bigint), true);
    else view.setFloat64(at, Number(value), true);
    this.length += size;
  }

  string(code: string, value: string) {
    const text = encoder.encode(value);
    if (code === "g") this.fixed("y", text.length);
    else this.fixed("u", text.length);
    this.room(text.length + 1);
    this.bytes.set(text, this.length);
    this.bytes[this.length + text.length] = 0;
    this.length += text.length + 1;
  }

  value(type: Type, value: DbusValue): void {
    const { code, members } = type;
    if (code === "s" || code === "o" || code === "g") return this.string(code, String(value));
    if (code === "v") {
      const variant = value as Variant;
      this.string("g", variant.signature);
      return this.value(one(variant.signature), variant.value);
    }
    if (code === "a") {
      this.fixed("u", 0);
      const lengthAt = this.length - 4;
      this.align(ALIGN[members[0]!.code]!);
      const start = this.length;
      for (const item of value as DbusValue[]) this.value(members[0]!, item);
      this.view.setUint32(lengthAt, this.length - start, true);
      return;
    }
    if (code === "(" || code === "{") {
      this.align(8);
      const items = value as DbusValue[];
      if (items.length !== members.length)
        throw malformed(`a struct of ${members.length} values given ${items.length}`);
      members.forEach((member, i) => this.value(member, items[i]!));
      return;
    }
    this.fixed(code, value);
  }
}

/** The single complete type a variant's signature must hold. */
function one(signature: string): Type {
  const types = parseSignature(signature);
  if (types.length !== 1) throw malformed(`a variant's signature "${signature}" is not one complete type`);
  return types[0]!;
}

/** Reads values in one byte order from a message, aligned from its start; past its end throws DbusMalformed. */
class Reader {
  private readonly view: DataView;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly little: boolean,
    public at = 0,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private take(size: number) {
    if (this.at + size > this.bytes.length) throw malformed(`a value runs past the end (${this.bytes.length} bytes)`);
    const at = this.at;
    this.at += size;
    return at;
  }

  align(to: number) {
    this.take((to - (this.at % to)) % to);
  }

  fixed(code: string): DbusValue {
    const size = ALIGN[code]!;
    this.align(size);
    const at = this.take(size);
    const view = this.view;
    const little = this.little;
    if (code === "y") return view.getUint8(at);
    if (code === "b") return view.getUint32(at, little) !== 0;
    if (code === "n") return view.getInt16(at, little);
    if (code === "q") return view.getUint16(at, little);
    if (code === "i") return view.getInt32(at, little);
    if (code === "u" || code === "h") return view.getUint32(at, little);
    if (code === "x") return view.getBigInt64(at, little);
    if (code === "t") return view.getBigUint64(at, little);
    return view.getFloat64(at, little);
  }

  string(code: string): string {
    const length = Number(this.fixed(code === "g" ? "y" : "u"));
    const at = this.take(length + 1);
    return decoder.decode(this.bytes.subarray(at, at + length));
  }

  value(type: Type): DbusValue {
    const { code, members } = type;
    if (code === "s" || code === "o" || code === "g") return this.string(code);
    if (code === "v") {
      const signature = this.string("g");
      return { signature, value: this.value(one(signature)) };
    }
    if (code === "a") {
      const length = Number(this.fixed("u"));
      this.align(ALIGN[members[0]!.code]!);
      const end = this.at + length;
      if (end > this.bytes.length) throw malformed(`an array of ${length} bytes runs past the end`);
      const items: DbusValue[] = [];
      while (this.at < end) items.push(this.value(members[0]!));
      return items;
    }
    if (code === "(" || code === "{") {
      this.align(8);
      return members.map((member) => this.value(member));
    }
    return this.fixed(code);
  }
}

/** Marshals values of `signature` alone (as a body is, from an 8-aligned start), little-endian. */
export function marshal(signature: string, values: DbusValue[]): Uint8Array {
  const types = parseSignature(signature);
  if (types.length !== values.length)
    throw malformed(`signature "${signature}" has ${types.length} values, ${values.length} given`);
  const writer = new Writer();
  types.forEach((type, i) => writer.value(type, values[i]!));
  return writer.bytes.slice(0, writer.length);
}

/** Unmarshals values of `signature` from `bytes` (a body, from an 8-aligned start) in the byte order given. */
export function unmarshal(signature: string, bytes: Uint8Array, littleEndian = true): DbusValue[] {
  const reader = new Reader(bytes, littleEndian);
  return parseSignature(signature).map((type) => reader.value(type));
}

const HEADER_FIELDS = parseSignature("a(yv)")[0]!;

/** A message as bytes: little-endian ('l'), protocol version 1. */
export function encodeMessage(message: Message): Uint8Array {
  const body = marshal(message.signature ?? "", message.body ?? []);
  const fields: DbusValue[] = [];
  for (const [key, code, signature] of FIELDS) {
    const value = message[key];
    if (value !== undefined && value !== "") fields.push([code, { signature, value }]);
  }
  const header = new Writer();
  header.fixed("y", "l".charCodeAt(0));
  header.fixed("y", message.type);
  header.fixed("y", message.flags ?? 0);
  header.fixed("y", 1);
  header.fixed("u", body.length);
  header.fixed("u", message.serial);
  header.value(HEADER_FIELDS, fields);
  header.align(8);
  const bytes = new Uint8Array(header.length + body.length);
  bytes.set(header.bytes.subarray(0, header.length));
  bytes.set(body, header.length);
  return bytes;
}

/** The byte order of a message from its first byte; anything but 'l' or 'B' is malformed. */
function littleEndian(first: number | undefined): boolean {
  if (first === 0x6c) return true;
  if (first === 0x42) return false;
  throw malformed(`endianness byte ${first} is neither 'l' nor 'B'`);
}

/** The length of the message at the start of `bytes` once its fixed header is there (16 bytes), else undefined. */
function messageLength(bytes: Uint8Array): number | undefined {
  if (bytes.length < 16) return undefined;
  const reader = new Reader(bytes, littleEndian(bytes[0]), 4);
  const bodyLength = Number(reader.fixed("u"));
  reader.at = 12;
  const fieldsLength = Number(reader.fixed("u"));
  const length = Math.ceil((16 + fieldsLength) / 8) * 8 + bodyLength;
  if (length > MAX_MESSAGE) throw malformed(`a message of ${length} bytes is longer than the ${MAX_MESSAGE} allowed`);
  return length;
}

/** Decodes one whole message (either byte order). */
export function decodeMessage(bytes: Uint8Array): Message {
  const little = littleEndian(bytes[0]);
  const reader = new Reader(bytes, little, 1);
  const type = Number(reader.fixed("y"));
  const flags = Number(reader.fixed("y"));
  reader.fixed("y"); // protocol version
  const bodyLength = Number(reader.fixed("u"));
  const message: Message = { type, flags, serial: Number(reader.fixed("u")) };
  for (const [code, variant] of reader.value(HEADER_FIELDS) as Array<[number, Variant]>) {
    const field = FIELD_BY_CODE.get(code);
    if (field) Object.assign(message, { [field[0]]: variant.value });
  }
  reader.align(8);
  const body = bytes.subarray(reader.at, reader.at + bodyLength);
  if (body.length !== bodyLength) throw malformed(`a body of ${bodyLength} bytes has ${body.length}`);
  message.body = unmarshal(message.signature ?? "", body, little);
  return message;
}

/** Cuts a byte stream into messages: `push` each chunk as read, get back the messages it completes. */
export function createMessageFramer(): { push(chunk: Uint8Array): Message[] } {
  let pending = new Uint8Array(0);
  return {
    push(chunk) {
      const joined = new Uint8Array(pending.length + chunk.length);
      joined.set(pending);
      joined.set(chunk, pending.length);
      pending = joined;
      const messages: Message[] = [];
      for (;;) {
        const length = messageLength(pending);
        if (length === undefined || pending.length < length) return messages;
        messages.push(decodeMessage(pending.subarray(0, length)));
        pending = pending.subarray(length);
      }
    },
  };
}
