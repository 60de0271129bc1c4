// The only @grpc/grpc-js import, shared by the CRI client and gRPC probes, and loaded on first use
// only: `kubelet --version`, validate and Docker mode without gRPC probes never load it.
export type Grpc = typeof import("@grpc/grpc-js");

let grpc: Promise<Grpc> | undefined;

/** @grpc/grpc-js, imported once, when first needed. */
export function loadGrpc(): Promise<Grpc> {
  return (grpc ??= import("@grpc/grpc-js"));
}
