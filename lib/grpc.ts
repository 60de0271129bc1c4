// The only @grpc/grpc-js import, shared by gRPC probes, the device plugin sockets and the pod resources API (the CRI
// client speaks gRPC over node:http2 itself), and loaded on first use only: `kubelet --version` and validate never load it.
import { createServer, type Socket } from "node:net";
import type { Server } from "@grpc/grpc-js";

export type Grpc = typeof import("@grpc/grpc-js");

let grpc: Promise<Grpc> | undefined;

/** @grpc/grpc-js, imported once, when first needed. */
export function loadGrpc(): Promise<Grpc> {
  return (grpc ??= import("@grpc/grpc-js"));
}

/**
 * A gRPC server on the unix socket `path` whose socket listens at once but whose grpc-js is loaded, and `addServices`
 * called, only when the first client connects (grpc-js's connection injector takes the accepted socket, whose first
 * bytes wait in its buffer meanwhile). The device plugin and pod resources sockets must always be served, as
 * upstream does, yet on most nodes nobody ever connects: loading grpc-js for them cost an idle Docker node ~130 ms
 * of start-up and ~17 MB of RSS. A stale socket file is the caller's to remove.
 */
export async function serveUnixOnDemand(
  path: string,
  addServices: (grpc: Grpc, server: Server) => void,
  load: () => Promise<Grpc> = loadGrpc,
): Promise<() => Promise<void>> {
  let served: Promise<{ server: Server; inject: (socket: Socket) => void }> | undefined;
  const serve = () =>
    (served ??= load().then((grpc) => {
      const server = new grpc.Server();
      addServices(grpc, server);
      const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
      return { server, inject: (socket: Socket) => injector.injectConnection(socket) };
    }));
  const sockets = new Set<Socket>();
  const listener = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    serve().then(
      ({ inject }) => inject(socket),
      () => socket.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    listener.once("error", (error) => reject(new Error(`cannot serve gRPC on ${path}: ${error.message}`)));
    listener.listen(path, () => resolve());
  });
  return async () => {
    listener.close();
    const running = await served?.catch(() => undefined);
    if (running) {
      await new Promise<void>((resolve) => {
        running.server.tryShutdown(() => resolve());
        setTimeout(() => {
          running.server.forceShutdown();
          resolve();
        }, 1000).unref?.();
      });
    }
    for (const socket of sockets) socket.destroy();
  };
}
