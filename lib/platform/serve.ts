// Serves a fetch handler on the runtime we run on: Bun.serve, or node:http(s) through @hono/node-server (Node, Deno).
import { runtimeKind } from "./runtime.ts";
import type { FetchHandler, RunningServer, ServeOptions } from "./types.ts";

export async function serve(app: { fetch: FetchHandler }, options: ServeOptions): Promise<RunningServer> {
  const kind = runtimeKind();
  // Bun.serve can require a client certificate but cannot tell a handler whether one was given: with a client CA,
  // Bun serves through its node:tls and node:http (node.ts, tls-http.ts), which can.
  if (kind === "bun" && !options.tls?.ca) return (await import("./bun.ts")).serveBun(app.fetch, options);
  if (kind === "deno") return (await import("./deno.ts")).serveDeno(app.fetch, options);
  return (await import("./node.ts")).serveNode(app.fetch, options);
}
