// Turns cri-proto.ts's runtime.v1 text into the tables of cri-schema.ts, which the CRI client encodes and
// decodes with (cri-codec.ts): the .proto is parsed here, when the file is regenerated
// (`bun scripts/cri-schema.ts`) and by its test, never when the kubelet starts; also reads a compiled descriptor
// (a runtime's own api.proto) into the same tables, for the test that compares the two. The only protobufjs import.
import protobuf from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";
import type { CriSchema } from "../lib/container/cri/cri-codec.ts";
import { CRI_PROTO } from "../lib/container/cri/cri-proto.ts";

/** The name a type is known by in the schema: its full name without the package. */
const schemaName = (type: protobuf.ReflectionObject) => type.fullName.replace(/^\.runtime\.v1\./, "");

/** The tables of the given .proto text (cri-proto.ts's by default), as cri-schema.ts holds them. */
export function criSchemaOf(protoText = CRI_PROTO): CriSchema {
  // keepCase: the schema names fields as the .proto does (snake_case), as the CRI client's requests do.
  const root = protobuf.parse(protoText, { keepCase: true }).root;
  root.resolveAll();
  const schema: CriSchema = { messages: {}, enums: {}, services: {} };
  const visit = (ns: protobuf.NamespaceBase) => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Type)
        schema.messages[schemaName(nested)] = nested.fieldsArray.map((field) => {
          const type = field.resolvedType ? schemaName(field.resolvedType) : field.type;
          if (field instanceof protobuf.MapField) {
            if (field.keyType !== "string" || type !== "string")
              throw new Error(`${nested.name}.${field.name}: only map<string, string> is supported`);
            return [field.id, field.name, "map<string, string>"];
          }
          return [field.id, field.name, field.repeated ? `repeated ${type}` : type];
        });
      else if (nested instanceof protobuf.Enum) schema.enums[schemaName(nested)] = Object.entries(nested.values);
      else if (nested instanceof protobuf.Service)
        schema.services[nested.name] = nested.methodsArray.map((m) => [
          m.name,
          m.requestType,
          m.responseStream ? `stream ${m.responseType}` : m.responseType,
        ]);
      if (nested instanceof protobuf.Namespace) visit(nested);
    }
  };
  visit(root.lookup("runtime.v1") as protobuf.Namespace);
  return schema;
}

/** google.protobuf.FieldDescriptorProto.Type → the .proto scalar name (message and enum fields name their type). */
const SCALAR_TYPES: Record<string, string> = {
  TYPE_DOUBLE: "double",
  TYPE_FLOAT: "float",
  TYPE_INT64: "int64",
  TYPE_UINT64: "uint64",
  TYPE_INT32: "int32",
  TYPE_FIXED64: "fixed64",
  TYPE_FIXED32: "fixed32",
  TYPE_BOOL: "bool",
  TYPE_STRING: "string",
  TYPE_BYTES: "bytes",
  TYPE_UINT32: "uint32",
  TYPE_SFIXED32: "sfixed32",
  TYPE_SFIXED64: "sfixed64",
  TYPE_SINT32: "sint32",
  TYPE_SINT64: "sint64",
};

interface FieldProto {
  name: string;
  number: number;
  label?: string;
  type: string;
  typeName?: string;
}
interface MessageProto {
  name: string;
  field?: FieldProto[];
  nestedType?: MessageProto[];
  enumType?: Array<{ name: string; value?: Array<{ name: string; number: number }> }>;
  options?: { mapEntry?: boolean };
}
interface FileProto {
  package: string;
  messageType?: MessageProto[];
  enumType?: MessageProto["enumType"];
  service?: Array<{
    name: string;
    method?: Array<{ name: string; inputType: string; outputType: string; serverStreaming?: boolean }>;
  }>;
}

/**
 * The tables of a serialized google.protobuf.FileDescriptorProto of runtime.v1 (as a runtime's binary holds
 * cri-api's api.proto), named as criSchemaOf names them: a map is its `…Entry` message turned back into
 * `map<key, value>`, a nested type is `Outer.Inner`.
 */
export function criSchemaOfDescriptor(bytes: Uint8Array): CriSchema {
  const FileDescriptorProto = (descriptor as any).FileDescriptorProto as protobuf.Type;
  const file = FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), { enums: String }) as FileProto;
  const schema: CriSchema = { messages: {}, enums: {}, services: {} };
  const entries = new Map<string, MessageProto>();
  const known = new Set<string>();
  const collect = (scope: string, messages: MessageProto[] = [], enums: FileProto["enumType"] = []) => {
    for (const e of enums) {
      known.add(scope + e.name);
      schema.enums[scope + e.name] = (e.value ?? []).map((v) => [v.name, v.number]);
    }
    for (const m of messages) {
      known.add(scope + m.name);
      if (m.options?.mapEntry) entries.set(scope + m.name, m);
      collect(`${scope}${m.name}.`, m.nestedType, m.enumType);
    }
  };
  collect("", file.messageType, file.enumType);
  // protoc writes `.runtime.v1.Outer.Inner`; protobufjs (the test's round trip) a name relative to the scope.
  const prefix = `.${file.package}.`;
  const resolve = (typeName: string, scope: string) => {
    if (typeName.startsWith(prefix)) return typeName.slice(prefix.length);
    for (let s = scope; ; s = s.slice(0, s.lastIndexOf(".", s.length - 2) + 1)) {
      if (known.has(s + typeName)) return s + typeName;
      if (!s) return typeName;
    }
  };
  const typeOf = (field: FieldProto, scope: string) =>
    field.typeName ? resolve(field.typeName, scope) : SCALAR_TYPES[field.type]!;
  const visit = (scope: string, messages: MessageProto[] = []) => {
    for (const m of messages) {
      if (m.options?.mapEntry) continue;
      const inner = `${scope}${m.name}.`;
      schema.messages[scope + m.name] = (m.field ?? []).map((field) => {
        const entry = field.typeName ? entries.get(typeOf(field, inner)) : undefined;
        if (entry) {
          const [key, value] = [1, 2].map((n) => typeOf(entry.field!.find((f) => f.number === n)!, inner));
          return [field.number, field.name, `map<${key}, ${value}>`];
        }
        const type = typeOf(field, inner);
        return [field.number, field.name, field.label === "LABEL_REPEATED" ? `repeated ${type}` : type];
      });
      visit(inner, m.nestedType);
    }
  };
  visit("", file.messageType);
  for (const service of file.service ?? [])
    schema.services[service.name] = (service.method ?? []).map((m) => [
      m.name,
      resolve(m.inputType, ""),
      m.serverStreaming ? `stream ${resolve(m.outputType, "")}` : resolve(m.outputType, ""),
    ]);
  return schema;
}

/** The serialized FileDescriptorProto of runtime.v1 in the given .proto text (cri-proto.ts's by default). */
export function criDescriptorOf(protoText = CRI_PROTO): Uint8Array {
  const root = protobuf.parse(protoText, { keepCase: true }).root;
  root.resolveAll();
  const set = (root as any).toDescriptor("proto3") as { file: Array<{ package?: string }> };
  const file = set.file.find((f) => f.package === "runtime.v1");
  const FileDescriptorProto = (descriptor as any).FileDescriptorProto as protobuf.Type;
  return FileDescriptorProto.encode(file!).finish();
}

/** The source text of cri-schema.ts (unformatted: the script runs biome over it). */
export function criSchemaSource(schema = criSchemaOf()): string {
  return `// Generated by \`bun scripts/cri-schema.ts\` from cri-proto.ts: do not edit (cri-schema.test.ts checks it is current).
// runtime.v1's messages as tables for cri-codec.ts, so the CRI client parses no .proto text at start-up.
// A field is [number, name, type]: a scalar, an enum or a message named in this file, "repeated <type>" or
// "map<string, string>"; an enum lists its [name, number] pairs; a service its [method, request, response]
// ("stream <type>": a server stream).
import type { CriSchema } from "./cri-codec.ts";

export const CRI_SCHEMA: CriSchema = ${JSON.stringify(schema)};
`;
}

/** protobufjs's own codec of a runtime.v1 message, as the CRI client used before cri-codec.ts: its tests' reference. */
export function referenceCodec(
  type: string,
  protoText = CRI_PROTO,
): { encode(value: object): Uint8Array; decode(bytes: Uint8Array): unknown } {
  const message = protobuf.parse(protoText, { keepCase: true }).root.lookupType(`runtime.v1.${type}`);
  return {
    encode: (value) => message.encode(message.fromObject(value)).finish(),
    decode: (bytes) => message.toObject(message.decode(bytes), { longs: Number, enums: String, defaults: true }),
  };
}
