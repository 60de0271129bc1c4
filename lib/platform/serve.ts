// Serves a fetch handler on the runtime we run on: Bun.serve, Deno.serve or @hono/node-server.
import type { TlsFiles } from "../server/auth.ts";
import { runtimeKind } from "./runtime.ts";

export interface ServeOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  tls?: TlsFiles;
}

export interface RunningServer {
  port: number;
  /** Closes the listener and open connections (log streams included). */
  stop(): Promise<void>;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;

export async function serve(app: { fetch: FetchHandler }, options: ServeOptions): Promise<RunningServer> {
  const kind = runtimeKind();
  if (kind === "bun") return (await import("./bun.ts")).serveBun(app.fetch, options);
  if (kind === "deno") return (await import("./deno.ts")).serveDeno(app.fetch, options);
  return (await import("./node.ts")).serveNode(app.fetch, options);
}
