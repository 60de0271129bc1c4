// Bun.serve adapter (bun and the compiled binary).
import { isLongLived } from "./long-lived.ts";
import { markRemoteAddress } from "./remote-address.ts";
import type { FetchHandler, RunningServer, ServeOptions, TlsFiles } from "./types.ts";
import { webSocketSessionOf, type WebSocketSession } from "./websocket.ts";

interface BunServer {
  port: number;
  stop(closeActive?: boolean): Promise<void> | void;
  /** Sets this request's connection idle timeout, seconds (0 = none). */
  timeout(request: Request, seconds: number): void;
  upgrade(request: Request, options: { headers: Record<string, string>; data: BunSocketData }): boolean;
  requestIP(request: Request): { address: string } | null;
}

/** Bun's ServerWebSocket, as far as used. */
interface BunSocket {
  data: BunSocketData;
  /** -1: queued behind backpressure (drain follows), 0: dropped (the socket is closing), > 0: sent. */
  sendBinary(data: Uint8Array): number;
  sendText(data: string): number;
  close(code?: number, reason?: string): void;
}

interface BunSocketData {
  session: WebSocketSession;
  /** Sends waiting for the socket to drain. */
  drained: Array<() => void>;
}

declare const Bun: {
  serve(options: Record<string, unknown>): BunServer;
};

/** TLS versions as the numbers Bun.serve's minVersion takes. */
const TLS_VERSION = { "TLSv1.2": 0x0303, "TLSv1.3": 0x0304 } as const;

export function serveBun(fetch: FetchHandler, options: ServeOptions): RunningServer {
  let server = listen(fetch, options, options.port);
  /** Servers replaced by setTls whose open connections have not ended yet. */
  const draining = new Set<BunServer>();
  return {
    port: server.port,
    stop: async () => void (await Promise.all([server, ...draining].map((s) => s.stop(true)))),
    // Bun's server.reload() ignores tls (bun 1.4.5): a second server takes the port (SO_REUSEPORT) with the new
    // files, and the first stops listening while its open connections finish.
    async setTls(files: TlsFiles) {
      const next = listen(fetch, { ...options, tls: { ...options.tls, ...files } }, server.port);
      const previous = server;
      server = next;
      draining.add(previous);
      void Promise.resolve(previous.stop(false)).finally(() => draining.delete(previous));
    },
  };
}

function listen(fetch: FetchHandler, options: ServeOptions, port: number): BunServer {
  const idle = options.idleTimeoutSeconds ?? 90;
  const tls = options.tls;
  return Bun.serve({
    hostname: options.hostname,
    port,
    // Bun's idle timeout covers a connection's whole life: kept-alive between requests (the bound we
    // want), but also a handler still working (exec waits up to 60 s) and a followed log that is quiet.
    // So it is lifted while a request is handled and put back once its response is on its way, or,
    // for a long-lived stream, once that stream ends. Half-sent headers are closed by Bun itself (~10 s).
    idleTimeout: idle,
    // A WebSocket stays open while the client answers Bun's pings, however quiet the stream.
    websocket: {
      open(ws: BunSocket) {
        ws.data.session.open({
          send: (data) =>
            (typeof data === "string" ? ws.sendText(data) : ws.sendBinary(data)) === -1
              ? new Promise<void>((resolve) => ws.data.drained.push(resolve))
              : Promise.resolve(),
          close: (code, reason) => ws.close(code, reason),
        });
      },
      message(ws: BunSocket, message: string | Uint8Array) {
        ws.data.session.message(typeof message === "string" ? new TextEncoder().encode(message) : message);
      },
      drain(ws: BunSocket) {
        for (const resolve of ws.data.drained.splice(0)) resolve();
      },
      close(ws: BunSocket) {
        for (const resolve of ws.data.drained.splice(0)) resolve();
        ws.data.session.close();
      },
    },
    async fetch(request: Request, self: BunServer) {
      if (idle > 0) self.timeout(request, 0);
      markRemoteAddress(request, self.requestIP(request)?.address);
      const response = await fetch(request);
      const session = webSocketSessionOf(response);
      if (session) {
        const data: BunSocketData = { session, drained: [] };
        if (self.upgrade(request, { headers: { "Sec-WebSocket-Protocol": session.protocol }, data })) return undefined;
      }
      if (idle === 0) return response;
      if (!isLongLived(response) || !response.body) {
        self.timeout(request, idle);
        return response;
      }
      const restore = new TransformStream<Uint8Array, Uint8Array>({ flush: () => self.timeout(request, idle) });
      return new Response(response.body.pipeThrough(restore), response);
    },
    ...(tls
      ? {
          reusePort: true,
          tls: {
            cert: tls.cert,
            key: tls.key,
            ...(tls.ciphers ? { ciphers: tls.ciphers } : {}),
            ...(tls.minVersion ? { minVersion: TLS_VERSION[tls.minVersion] } : {}),
            ...(tls.ecdhCurve ? { ecdhCurve: tls.ecdhCurve } : {}),
          },
        }
      : {}),
  });
}
