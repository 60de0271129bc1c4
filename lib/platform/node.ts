// Node adapter through @hono/node-server.
import { serve } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FetchHandler, RunningServer, ServeOptions } from "./types.ts";

export function serveNode(fetch: FetchHandler, options: ServeOptions): Promise<RunningServer> {
  if (options.tls) throw new Error("TLS is not available under node: run the compiled binary");
  return new Promise((resolve) => {
    const server = serve({ fetch, hostname: options.hostname, port: options.port }, (info: AddressInfo) => {
      resolve({ port: info.port, stop: () => new Promise((done) => server.close(() => done())) });
    }) as Server;
    // Node's keep-alive timeout runs only between requests, so streams and slow handlers are unaffected;
    // half-sent headers are bounded by its headersTimeout (60 s).
    server.keepAliveTimeout = (options.idleTimeoutSeconds ?? 90) * 1000;
  });
}
