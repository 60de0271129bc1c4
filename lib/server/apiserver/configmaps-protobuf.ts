// ConfigMaps and Secrets sent as Kubernetes protobuf (application/vnd.kubernetes.protobuf), as kubectl's typed
// client sends `kubectl create configmap` and `kubectl create secret`: the "k8s\0" envelope (runtime.Unknown),
// then k8s.io/api/core/v1's ConfigMap or Secret, decoded at the wire level into the JSON shape the routes take.
// Only these two kinds and the ObjectMeta fields a create carries are read; anything else is skipped.

/** The media type of Kubernetes protobuf. */
export const PROTOBUF = "application/vnd.kubernetes.protobuf";

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Value = number | Buffer;

/** A message's fields by number, each occurrence in order (varints as numbers, length-delimited as bytes). */
function fields(bytes: Buffer): Map<number, Value[]> {
  const out = new Map<number, Value[]>();
  let at = 0;
  const varint = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (at >= bytes.length) throw new Error("protobuf body ends inside a varint");
      const b = bytes[at++]!;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
    }
  };
  while (at < bytes.length) {
    const tag = varint();
    const [id, wire] = [Math.floor(tag / 8), tag % 8];
    let value: Value;
    if (wire === 0) value = varint();
    else if (wire === 2) {
      const length = varint();
      if (at + length > bytes.length) throw new Error("protobuf body ends inside a field");
      value = bytes.subarray(at, at + length);
      at += length;
    } else if (wire === 1) {
      value = 0;
      at += 8;
    } else if (wire === 5) {
      value = 0;
      at += 4;
    } else throw new Error(`protobuf wire type ${wire} is not supported`);
    out.set(id, [...(out.get(id) ?? []), value]);
  }
  return out;
}

const text = (v: Value | undefined) => (Buffer.isBuffer(v) ? v.toString("utf8") : undefined);

/** A map<string, string|bytes> field: its entries (key 1, value 2). */
function map(values: Value[] | undefined, decode: (b: Buffer) => string): Record<string, string> | undefined {
  if (!values) return undefined;
  return Object.fromEntries(
    values.filter(Buffer.isBuffer).map((entry) => {
      const f = fields(entry);
      const value = f.get(2)?.[0];
      return [text(f.get(1)?.[0]) ?? "", Buffer.isBuffer(value) ? decode(value) : ""];
    }),
  );
}

const utf8 = (b: Buffer) => b.toString("utf8");
const base64 = (b: Buffer) => b.toString("base64");

/** The ConfigMap or Secret a protobuf body holds, as its JSON form; throws naming what it cannot read. */
export function decodeConfigProtobuf(body: Uint8Array): Record<string, unknown> {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (!bytes.subarray(0, 4).equals(MAGIC)) throw new Error('the protobuf body does not start with "k8s\\0"');
  const unknown = fields(bytes.subarray(4));
  const typeMeta = fields((unknown.get(1)?.[0] as Buffer | undefined) ?? Buffer.alloc(0));
  const kind = text(typeMeta.get(2)?.[0]);
  const raw = unknown.get(2)?.[0];
  if (!Buffer.isBuffer(raw)) throw new Error("the protobuf body holds no object");
  const object = fields(raw);
  const meta = fields((object.get(1)?.[0] as Buffer | undefined) ?? Buffer.alloc(0));
  const metadata = {
    name: text(meta.get(1)?.[0]),
    generateName: text(meta.get(2)?.[0]),
    namespace: text(meta.get(3)?.[0]),
    labels: map(meta.get(11), utf8),
    annotations: map(meta.get(12), utf8),
  };
  const defined = <T extends object>(o: T) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== "")) as Partial<T>;
  if (kind === "ConfigMap")
    return defined({
      apiVersion: "v1",
      kind,
      metadata: defined(metadata),
      data: map(object.get(2), utf8),
      binaryData: map(object.get(3), base64),
      immutable: object.has(4) ? object.get(4)![0] === 1 : undefined,
    });
  if (kind === "Secret")
    return defined({
      apiVersion: "v1",
      kind,
      metadata: defined(metadata),
      data: map(object.get(2), base64),
      type: text(object.get(3)?.[0]),
      stringData: map(object.get(4), utf8),
      immutable: object.has(5) ? object.get(5)![0] === 1 : undefined,
    });
  throw new Error(`a protobuf ${kind ?? "object"} is not read here: send ConfigMaps and Secrets, or JSON`);
}
