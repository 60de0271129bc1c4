// Deno.serve adapter.
import type { FetchHandler, RunningServer, ServeOptions } from "./types.ts";

declare const Deno: {
  serve(options: Record<string, unknown>, handler: FetchHandler): { addr: { port: number }; shutdown(): Promise<void> };
};

export function serveDeno(fetch: FetchHandler, options: ServeOptions): RunningServer {
  if (options.tls?.ca)
    throw new Error(
      "client certificate authentication is not available under deno: run the compiled binary or use --auth_token_file",
    );
  // Deno.serve takes no idle or header timeout option, so options.idleTimeoutSeconds is not applied under deno.
  const server = Deno.serve(
    {
      hostname: options.hostname,
      port: options.port,
      onListen() {},
      ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
    },
    fetch,
  );
  return { port: server.addr.port, stop: () => server.shutdown() };
}
