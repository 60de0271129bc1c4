// The only @grpc/grpc-js import, shared by the CRI client, gRPC probes, the device plugin sockets and the pod
// resources API, and loaded on first use only: `kubelet --version` and validate never load it.
export type Grpc = typeof import("@grpc/grpc-js");

let grpc: Promise<Grpc> | undefined;

/** @grpc/grpc-js, imported once, when first needed. */
export function loadGrpc(): Promise<Grpc> {
  return (grpc ??= import("@grpc/grpc-js"));
}
