// Bun.serve adapter (bun and the compiled binary).
import type { FetchHandler, RunningServer, ServeOptions } from "./types.ts";

declare const Bun: {
  serve(options: Record<string, unknown>): { port: number; stop(closeActive?: boolean): Promise<void> | void };
};

export function serveBun(fetch: FetchHandler, options: ServeOptions): RunningServer {
  const server = Bun.serve({
    hostname: options.hostname,
    port: options.port,
    fetch,
    idleTimeout: 0, // log streams may be quiet for long; clients that leave abort them
    ...(options.tls
      ? {
          tls: {
            cert: options.tls.cert,
            key: options.tls.key,
            ...(options.tls.ca ? { ca: options.tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
          },
        }
      : {}),
  });
  return { port: server.port, stop: async () => void (await server.stop(true)) };
}
