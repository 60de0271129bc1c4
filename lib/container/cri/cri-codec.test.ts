import { expect, test } from "bun:test";
import { type CriSchema, createCriCodecs } from "./cri-codec.ts";
import { CRI_SCHEMA } from "./cri-schema.ts";
import { criSchemaOf, referenceCodec } from "../../../scripts/cri-schema-gen.ts";

const codecs = createCriCodecs(CRI_SCHEMA);
const types = Object.keys(CRI_SCHEMA.messages);

/** A value for every field of a message (two of each repeated, two map entries; nested messages to depth 3). */
function sample(schema: CriSchema, type: string, depth = 0): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [id, name, declared] of schema.messages[type]!) {
    const repeated = declared.startsWith("repeated ");
    const t = repeated ? declared.slice(9) : declared;
    const one = (i: number): unknown => {
      if (schema.enums[t]) return schema.enums[t]![(id + i) % schema.enums[t]!.length]![0];
      if (schema.messages[t]) return depth < 3 ? sample(schema, t, depth + 1) : {};
      switch (t) {
        case "string":
          return `${name}-${i}-é`;
        case "bytes":
          return Buffer.from(`out ${i}\n`);
        case "bool":
          return (id + i) % 2 === 0;
        case "int32":
          return i ? -997 : 2_000_000_000;
        case "uint32":
          return 4_000_000_000 + i;
        case "int64":
          // A negative number, one past 2^32, and nanoseconds since 1970 (past 2^53: rounded, as before).
          return [-998, 2 ** 32 + id, 1_764_100_000_123_456_789][(id + i) % 3];
        case "uint64":
          return 2 ** 40 + id + i;
      }
      throw new Error(`no sample for ${t}`);
    };
    if (t === "map<string, string>") value[name] = { a: `${name}-a`, "b/c": "" };
    else value[name] = repeated ? [one(0), one(1)] : one(0);
  }
  return value;
}

test("the checked-in schema is what cri-proto.ts declares (else run bun scripts/cri-schema.ts)", () => {
  expect(CRI_SCHEMA).toEqual(criSchemaOf());
});

test("every message with no fields set decodes to the defaults protobufjs's toObject gave", () => {
  for (const type of types)
    expect([type, codecs.codec(type).decode(new Uint8Array())]).toEqual([
      type,
      referenceCodec(type).decode(new Uint8Array()),
    ]);
});

test("every field of every message decodes as protobufjs decoded it", () => {
  for (const type of types) {
    const reference = referenceCodec(type);
    const bytes = reference.encode(sample(CRI_SCHEMA, type));
    expect([type, codecs.codec(type).decode(bytes)]).toEqual([type, reference.decode(bytes)]);
  }
});

test("every field of every message is encoded so protobufjs reads back what was sent", () => {
  for (const type of types) {
    const reference = referenceCodec(type);
    const value = sample(CRI_SCHEMA, type);
    expect([type, reference.decode(codecs.codec(type).encode(value))]).toEqual([
      type,
      reference.decode(reference.encode(value)),
    ]);
  }
});

test("absent fields are left out and enums are taken by number too", () => {
  const codec = codecs.codec("PortMapping");
  expect(codec.encode({ container_port: 80, host_ip: null, host_port: undefined }).length).toBe(2);
  expect(codec.decode(codec.encode({ protocol: 1 }))).toMatchObject({ protocol: "UDP" });
  expect(() => codec.encode({ protocol: "ICMP" })).toThrow(/"ICMP" is not one of TCP, UDP, SCTP/);
});

test("an enum number the schema does not know decodes as the number, as protobufjs left it", () => {
  const bytes = Uint8Array.from([3 * 8, 9]); // ContainerStatus.state = 9
  expect(codecs.codec("ContainerStatus").decode(bytes).state).toBe(9);
  expect(referenceCodec("ContainerStatus").decode(bytes)).toMatchObject({ state: 9 });
});

test("fields the schema does not name are skipped, whatever their wire type", () => {
  const known = [...codecs.codec("VersionResponse").encode({ version: "0.1.0" })];
  const text = [...Buffer.from("a newer field")];
  // field 9 length-delimited, 10 varint (10 bytes), 11 fixed64, 12 fixed32, then runtime_name (2).
  const unknown = [(9 << 3) | 2, text.length, ...text, 10 << 3, ...Array(9).fill(0xff), 1];
  const fixed = [(11 << 3) | 1, ...Array(8).fill(7), (12 << 3) | 5, 1, 2, 3, 4];
  const bytes = Uint8Array.from([...known, ...unknown, ...fixed, (2 << 3) | 2, 2, ...Buffer.from("cd")]);
  expect(codecs.codec("VersionResponse").decode(bytes)).toEqual(referenceCodec("VersionResponse").decode(bytes));
  expect(codecs.codec("VersionResponse").decode(bytes)).toMatchObject({ version: "0.1.0", runtime_name: "cd" });
});

test("a truncated message is an error, not a partial object", () => {
  const bytes = codecs.codec("VersionResponse").encode({ version: "0.1.0", runtime_name: "containerd" });
  expect(() => codecs.codec("VersionResponse").decode(bytes.subarray(0, bytes.length - 3))).toThrow(/truncated/);
});

test("a label map is built in key order whatever order the runtime wrote it, the last of a repeated key winning", () => {
  const codec = codecs.codec("Container");
  // Go writes a map in random order; the encoder writes the object's order, so these bytes are unsorted.
  const bytes = codec.encode({ id: "c", labels: { zone: "1", app: "web", io: "x" } });
  const repeated = Buffer.concat([bytes, codec.encode({ labels: { app: "api" } })]);
  const labels = codec.decode(repeated).labels as Record<string, string>;
  expect(Object.entries(labels)).toEqual([
    ["app", "api"],
    ["io", "x"],
    ["zone", "1"],
  ]);
});
