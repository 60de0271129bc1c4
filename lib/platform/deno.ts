// Deno.serve adapter.
import type { FetchHandler, RunningServer, ServeOptions } from "./types.ts";
import { webSocketSessionOf, type WebSocketSession } from "./websocket.ts";

declare const Deno: {
  serve(options: Record<string, unknown>, handler: FetchHandler): { addr: { port: number }; shutdown(): Promise<void> };
  upgradeWebSocket(request: Request, options: { protocol: string }): { socket: WebSocket; response: Response };
};

/** Upgrades the request and drives `session` on Deno's WebSocket; returns the 101 response. */
function upgrade(request: Request, session: WebSocketSession): Response {
  const { socket, response } = Deno.upgradeWebSocket(request, { protocol: session.protocol });
  socket.binaryType = "arraybuffer";
  // Deno's WebSocket has no drain event: sends are buffered without bound (bufferedAmount grows).
  socket.onopen = () =>
    session.open({
      send: async (bytes) => socket.send(bytes as Uint8Array<ArrayBuffer>),
      close: (code, reason) => socket.close(code, reason),
    });
  socket.onmessage = (event: MessageEvent) =>
    session.message(
      typeof event.data === "string" ? new TextEncoder().encode(event.data) : new Uint8Array(event.data as ArrayBuffer),
    );
  socket.onclose = () => session.close();
  return response;
}

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
    async (request: Request) => {
      const response = await fetch(request);
      const session = webSocketSessionOf(response);
      return session ? upgrade(request, session) : response;
    },
  );
  return { port: server.addr.port, stop: () => server.shutdown() };
}
