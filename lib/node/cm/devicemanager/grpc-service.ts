// gRPC service definitions for grpc-js built from cri-codec tables (no .proto parsed at run time): the same
// definition serves a server (grpc.Server.addService) and a client (makeGenericClientConstructor).
import type * as GrpcTypes from "@grpc/grpc-js";
import { createCriCodecs, type CriSchema, type MessageCodec } from "../../../container/cri/cri-codec.ts";

const codecsBySchema = new WeakMap<CriSchema, ReturnType<typeof createCriCodecs>>();

/** `/<pkg>.<service>/<method>` for every method of `service`; a response written `stream X` streams. */
export function serviceDefinition(schema: CriSchema, pkg: string, service: string): GrpcTypes.ServiceDefinition {
  let codecs = codecsBySchema.get(schema);
  if (!codecs) codecsBySchema.set(schema, (codecs = createCriCodecs(schema)));
  const methods = schema.services[service];
  if (!methods) throw new Error(`${pkg} has no service ${service}`);
  const definition: Record<string, GrpcTypes.MethodDefinition<object, object>> = {};
  for (const [method, requestType, declared] of methods) {
    const responseStream = declared.startsWith("stream ");
    const responseType = responseStream ? declared.slice("stream ".length) : declared;
    const c = codecs;
    let request: MessageCodec | undefined;
    let response: MessageCodec | undefined;
    definition[method] = {
      path: `/${pkg}.${service}/${method}`,
      requestStream: false,
      responseStream,
      requestSerialize: (value: object) => (request ??= c.codec(requestType)).encode(value),
      requestDeserialize: (bytes: Buffer) => (request ??= c.codec(requestType)).decode(bytes),
      responseSerialize: (value: object) => (response ??= c.codec(responseType)).encode(value),
      responseDeserialize: (bytes: Buffer) => (response ??= c.codec(responseType)).decode(bytes),
    };
  }
  return definition;
}

/** One message type's codec of `schema` (the checkpoint keeps AllocateResponse in its wire form). */
export function messageCodec(schema: CriSchema, type: string): MessageCodec {
  let codecs = codecsBySchema.get(schema);
  if (!codecs) codecsBySchema.set(schema, (codecs = createCriCodecs(schema)));
  return codecs.codec(type);
}

/** A server bound to a unix socket at `path` (a stale socket file is the caller's to remove). */
export function bindUnix(grpc: typeof GrpcTypes, server: GrpcTypes.Server, path: string): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`unix://${path}`, grpc.ServerCredentials.createInsecure(), (error) =>
      error ? reject(new Error(`cannot serve gRPC on ${path}: ${error.message}`)) : resolve(),
    ),
  );
}
