// Encodes and decodes runtime.v1 messages from the tables of cri-schema.ts, at the wire level, with no
// protobuf library: the CRI client's start-up parses no .proto text and builds no generated code.
// Objects are what protobufjs's toObject gave with { keepCase, longs: Number, enums: String, defaults: true }:
// snake_case keys, 64-bit integers as numbers, enums by name (a number the schema does not know stays a
// number), every field present (scalars at their zero value, messages null, lists [], maps {}).
// Requests are encoded as protobufjs's fromObject + encode did: absent (null or undefined) fields are left
// out, enums are taken by name or number, repeated numbers are packed.

/** A message field: number, name, and type (a scalar, an enum or message name, `repeated <type>`, or `map<string, string>`). */
export type CriField = [number, string, string];

/** runtime.v1 as tables (cri-schema.ts, generated from cri-proto.ts). */
export interface CriSchema {
  messages: Record<string, CriField[]>;
  enums: Record<string, Array<[string, number]>>;
  /** Each service's methods: [name, request message, response message ("stream X": a server stream)]. */
  services: Record<string, Array<[string, string, string]>>;
}

/** One message type's codec. */
export interface MessageCodec {
  encode(value: object): Buffer;
  decode(bytes: Uint8Array): any;
}

type Scalar = "string" | "bytes" | "bool" | "int32" | "uint32" | "int64" | "uint64";
const SCALARS = new Set<string>(["string", "bytes", "bool", "int32", "uint32", "int64", "uint64"]);
const EMPTY = Buffer.alloc(0);

interface Field {
  id: number;
  name: string;
  repeated: boolean;
  map: boolean;
  scalar?: Scalar;
  /** Enum: number → name, and name → number. */
  enumNames?: Map<number, string>;
  enumValues?: Map<string, number>;
  message?: string;
}

interface Message {
  name: string;
  fields: Field[];
  byId: Array<Field | undefined>;
}

/** Codecs for the messages of a schema, each built on first use. */
export function createCriCodecs(schema: CriSchema): {
  codec(type: string): MessageCodec;
  fieldId(type: string, field: string): number;
} {
  const messages = new Map<string, Message>();
  const message = (name: string): Message => {
    let compiled = messages.get(name);
    if (compiled) return compiled;
    const fields = schema.messages[name];
    if (!fields) throw new Error(`runtime.v1 has no message ${name}`);
    compiled = { name, fields: [], byId: [] };
    messages.set(name, compiled);
    for (const [id, fieldName, declared] of fields) {
      const repeated = declared.startsWith("repeated ");
      const type = repeated ? declared.slice("repeated ".length) : declared;
      const field: Field = { id, name: fieldName, repeated, map: type === "map<string, string>" };
      if (field.map) field.scalar = "string";
      else if (SCALARS.has(type)) field.scalar = type as Scalar;
      else if (schema.enums[type]) {
        field.enumNames = new Map(schema.enums[type]!.map(([n, v]) => [v, n]));
        field.enumValues = new Map(schema.enums[type]);
      } else if (schema.messages[type]) field.message = type;
      else throw new Error(`runtime.v1 ${name}.${fieldName}: unknown type ${type}`);
      compiled.fields.push(field);
      compiled.byId[id] = field;
    }
    return compiled;
  };
  return {
    codec(type) {
      const m = message(type);
      return {
        encode: (value) => {
          const writer = new Writer();
          encodeMessage(writer, m, value as Record<string, unknown>, message);
          return writer.finish();
        },
        decode: (bytes) => decodeMessage(asBuffer(bytes), 0, bytes.length, m, message),
      };
    },
    fieldId: (type, field) => {
      const found = message(type).fields.find((f) => f.name === field);
      if (!found) throw new Error(`runtime.v1 ${type} has no field ${field}`);
      return found.id;
    },
  };
}

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

// ---- encoding

class Writer {
  private buf = Buffer.allocUnsafe(256);
  private at = 0;

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }

  /** An unsigned varint of up to 32 bits. */
  uint32(value: number): void {
    this.room(5);
    while (value > 127) {
      this.buf[this.at++] = (value & 127) | 128;
      value >>>= 7;
    }
    this.buf[this.at++] = value;
  }

  /** A 64-bit varint of a number (two's complement when negative, ten bytes, as int32 and int64 are). */
  int64(value: number): void {
    if (value >= 0 && value <= 0xffffffff) return this.uint32(value);
    const negative = value < 0;
    if (negative) value = -value;
    let lo = value >>> 0;
    let hi = ((value - lo) / 4294967296) >>> 0;
    if (negative) {
      hi = ~hi >>> 0;
      lo = ~lo >>> 0;
      if (++lo > 4294967295) {
        lo = 0;
        if (++hi > 4294967295) hi = 0;
      }
    }
    this.room(10);
    while (hi) {
      this.buf[this.at++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    this.uint32(lo);
  }

  bytes(value: Uint8Array): void {
    this.uint32(value.length);
    this.room(value.length);
    this.buf.set(value, this.at);
    this.at += value.length;
  }

  string(value: string): void {
    const length = Buffer.byteLength(value);
    this.uint32(length);
    this.room(length);
    this.at += this.buf.write(value, this.at, "utf8");
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.at);
  }
}

const WIRE_VARINT = 0;
const WIRE_LENGTH = 2;

function encodeMessage(
  w: Writer,
  m: Message,
  value: Record<string, unknown>,
  message: (name: string) => Message,
): void {
  for (const field of m.fields) {
    const v = value[field.name];
    if (v === null || v === undefined) continue;
    if (field.map) {
      for (const [key, entry] of Object.entries(v as Record<string, unknown>)) {
        const inner = new Writer();
        inner.uint32((1 << 3) | WIRE_LENGTH);
        inner.string(key);
        inner.uint32((2 << 3) | WIRE_LENGTH);
        inner.string(String(entry));
        w.uint32((field.id << 3) | WIRE_LENGTH);
        w.bytes(inner.finish());
      }
    } else if (field.repeated) {
      const items = v as unknown[];
      if (!items.length) continue;
      if (field.message || field.scalar === "string" || field.scalar === "bytes")
        for (const item of items) encodeValue(w, field, item, message);
      else {
        // proto3 packs repeated numbers: one length-delimited run of varints.
        const packed = new Writer();
        for (const item of items) writeVarintValue(packed, field, item);
        w.uint32((field.id << 3) | WIRE_LENGTH);
        w.bytes(packed.finish());
      }
    } else encodeValue(w, field, v, message);
  }
}

function encodeValue(w: Writer, field: Field, v: unknown, message: (name: string) => Message): void {
  if (field.message) {
    const inner = new Writer();
    encodeMessage(inner, message(field.message), v as Record<string, unknown>, message);
    w.uint32((field.id << 3) | WIRE_LENGTH);
    w.bytes(inner.finish());
  } else if (field.scalar === "string") {
    w.uint32((field.id << 3) | WIRE_LENGTH);
    w.string(String(v));
  } else if (field.scalar === "bytes") {
    w.uint32((field.id << 3) | WIRE_LENGTH);
    w.bytes(typeof v === "string" ? Buffer.from(v, "base64") : (v as Uint8Array));
  } else {
    w.uint32((field.id << 3) | WIRE_VARINT);
    writeVarintValue(w, field, v);
  }
}

function writeVarintValue(w: Writer, field: Field, v: unknown): void {
  if (field.enumValues) {
    const number = typeof v === "number" ? v : field.enumValues.get(String(v));
    if (number === undefined)
      throw new Error(
        `runtime.v1 field ${field.name}: "${v}" is not one of ${[...field.enumValues.keys()].join(", ")}`,
      );
    return w.int64(number);
  }
  if (field.scalar === "bool") return w.byte(v ? 1 : 0);
  const n = Math.trunc(Number(v));
  if (field.scalar === "uint32") return w.uint32(n >>> 0);
  w.int64(field.scalar === "int32" ? n | 0 : n);
}

// ---- decoding

/** The object of a message with every field at its proto3 default, as toObject({ defaults: true }) gave. */
function defaults(m: Message): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const field of m.fields) {
    if (field.map) object[field.name] = {};
    else if (field.repeated) object[field.name] = [];
    else if (field.message) object[field.name] = null;
    else if (field.enumNames) object[field.name] = field.enumNames.get(0) ?? 0;
    else if (field.scalar === "string") object[field.name] = "";
    else if (field.scalar === "bool") object[field.name] = false;
    else if (field.scalar === "bytes") object[field.name] = EMPTY;
    else object[field.name] = 0;
  }
  return object;
}

/** A varint from `buf` at `state.at` as the 32 low and high bits, moving `state.at` past it. */
function readVarint(buf: Buffer, state: { at: number; hi: number }): number {
  let lo = 0;
  let hi = 0;
  let b: number;
  for (let i = 0; i < 4; i++) {
    b = byteAt(buf, state.at++);
    lo = (lo | ((b & 127) << (i * 7))) >>> 0;
    if (b < 128) {
      state.hi = 0;
      return lo;
    }
  }
  b = byteAt(buf, state.at++);
  lo = (lo | ((b & 127) << 28)) >>> 0;
  hi = (b & 127) >> 4;
  if (b < 128) {
    state.hi = hi;
    return lo;
  }
  for (let i = 0; i < 5; i++) {
    b = byteAt(buf, state.at++);
    hi = (hi | ((b & 127) << (i * 7 + 3))) >>> 0;
    if (b < 128) {
      state.hi = hi;
      return lo;
    }
  }
  throw new Error("cannot decode a CRI message: varint longer than 10 bytes");
}

function byteAt(buf: Buffer, at: number): number {
  if (at >= buf.length) throw new Error("cannot decode a CRI message: truncated");
  return buf[at]!;
}

/** lo/hi bits as a number: int64 in two's complement, uint64 as is (both rounded past 2^53). */
function longToNumber(lo: number, hi: number, signed: boolean): number {
  if (signed && hi >>> 31) {
    lo = (~lo + 1) >>> 0;
    hi = ~hi >>> 0;
    if (!lo) hi = (hi + 1) >>> 0;
    return -(lo + hi * 4294967296);
  }
  return lo + hi * 4294967296;
}

function decodeMessage(
  buf: Buffer,
  start: number,
  end: number,
  m: Message,
  message: (name: string) => Message,
): Record<string, unknown> {
  const object = defaults(m);
  let maps: Map<string, Array<[string, string]>> | undefined;
  const state = { at: start, hi: 0 };
  while (state.at < end) {
    const tag = readVarint(buf, state);
    const id = tag >>> 3;
    const wire = tag & 7;
    const field = m.byId[id];
    if (!field) {
      skip(buf, state, wire);
      continue;
    }
    if (wire === WIRE_LENGTH) {
      const length = readVarint(buf, state);
      const from = state.at;
      state.at += length;
      if (state.at > end) throw new Error(`cannot decode a CRI ${m.name}: field ${field.name} truncated`);
      if (field.map) {
        maps ??= new Map();
        const entries = maps.get(field.name) ?? maps.set(field.name, []).get(field.name)!;
        entries.push(mapEntry(buf, from, state.at));
      } else if (field.message) {
        const value = decodeMessage(buf, from, state.at, message(field.message), message);
        if (field.repeated) (object[field.name] as unknown[]).push(value);
        else object[field.name] = value;
      } else if (field.scalar === "string" || field.scalar === "bytes") {
        const value =
          field.scalar === "string" ? buf.toString("utf8", from, state.at) : Buffer.from(buf.subarray(from, state.at));
        if (field.repeated) (object[field.name] as unknown[]).push(value);
        else object[field.name] = value;
      } else {
        // A packed run of varints.
        const run = { at: from, hi: 0 };
        while (run.at < state.at)
          (object[field.name] as unknown[]).push(varintValue(field, readVarint(buf, run), run.hi));
      }
    } else if (wire === WIRE_VARINT) {
      const value = varintValue(field, readVarint(buf, state), state.hi);
      if (field.repeated) (object[field.name] as unknown[]).push(value);
      else object[field.name] = value;
    } else skip(buf, state, wire);
  }
  // Keys in order, not as Go's random map order wrote them: JSC gives objects whose keys were added in the same order
  // one shape: 440 maps of 10 labels made 3,640 Structures and 632 KiB of heap in random order, 153 and 236 KiB sorted.
  if (maps) for (const [name, entries] of maps) object[name] = Object.fromEntries(entries.sort(byKey));
  return object;
}

/** Sorts map entries by key, stably: of repeated keys the last written still wins, as protobuf says. */
const byKey = (a: [string, string], b: [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

function varintValue(field: Field, lo: number, hi: number): unknown {
  if (field.enumNames) return field.enumNames.get(lo | 0) ?? lo | 0;
  switch (field.scalar) {
    case "bool":
      return lo !== 0 || hi !== 0;
    case "int32":
      return lo | 0;
    case "uint32":
      return lo;
    case "uint64":
      return longToNumber(lo, hi, false);
    default:
      return longToNumber(lo, hi, true);
  }
}

/** A map<string, string> entry: key 1, value 2. */
function mapEntry(buf: Buffer, start: number, end: number): [string, string] {
  const entry: [string, string] = ["", ""];
  const state = { at: start, hi: 0 };
  while (state.at < end) {
    const tag = readVarint(buf, state);
    if ((tag & 7) !== WIRE_LENGTH || (tag >>> 3 !== 1 && tag >>> 3 !== 2)) {
      skip(buf, state, tag & 7);
      continue;
    }
    const length = readVarint(buf, state);
    entry[(tag >>> 3) - 1] = buf.toString("utf8", state.at, state.at + length);
    state.at += length;
  }
  return entry;
}

/** Moves past a field this schema does not name. */
function skip(buf: Buffer, state: { at: number; hi: number }, wire: number): void {
  if (wire === 0) readVarint(buf, state);
  else if (wire === 1) state.at += 8;
  else if (wire === 2) {
    const length = readVarint(buf, state);
    state.at += length;
  } else if (wire === 5) state.at += 4;
  else throw new Error(`cannot decode a CRI message: unsupported wire type ${wire}`);
}
