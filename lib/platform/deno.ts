// Deno adapter: Deno.serve takes no idle timeout (a kept-alive connection stays open for ever), so the
// server runs on Deno's node:http, which honours keepAliveTimeout and headersTimeout like Node's.
import { serveNode } from "./node.ts";
import type { FetchHandler, RunningServer, ServeOptions } from "./types.ts";

export function serveDeno(fetch: FetchHandler, options: ServeOptions): Promise<RunningServer> {
  // Deno's node:https is not known to verify client certificates: refuse rather than let anyone in.
  if (options.tls?.ca)
    throw new Error(
      "client certificate authentication is not available under deno: run the compiled binary or use --auth_token_file",
    );
  // Deno's node:https (rustls) honours minVersion but ignores ciphers and ecdhCurve (deno 2.9): refuse those too.
  if (options.tls?.ciphers || options.tls?.ecdhCurve)
    throw new Error(
      "tlsCipherSuites and tlsCurvePreferences are not honoured under deno (its TLS ignores them): run the compiled binary or remove them",
    );
  return serveNode(fetch, options);
}
