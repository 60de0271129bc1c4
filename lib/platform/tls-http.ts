// HTTP over node:tls: each secure socket is handed to an http.Server, so a request's socket is the TLSSocket and
// getPeerCertificate() works (Bun's node:https sockets have none: a client certificate's CN and O were lost there).
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { createServer as createTlsServer, type SecureContextOptions, type TLSSocket } from "node:tls";

export interface TlsHttpOptions {
  hostname: string;
  port: number;
  /** node:tls's server options: certificate, key, client CA, TLS policy. */
  secure: SecureContextOptions & { requestCert?: boolean; rejectUnauthorized?: boolean };
  /** How long a connection with no request in flight stays open, ms (0 = forever). */
  idleTimeoutMs: number;
  /** How long a new connection may take to send its first request's headers, ms. */
  headersTimeoutMs: number;
  request(incoming: IncomingMessage, outgoing: ServerResponse): void;
  upgrade(incoming: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface TlsHttpServer {
  port: number;
  /** Serves new connections with these options (a renewed certificate); open connections keep theirs. */
  setSecureContext(secure: TlsHttpOptions["secure"]): void;
  /** Closes the listener and every open connection. */
  stop(): Promise<void>;
}

/**
 * Listens on `options.port`. Bun's http.Server applies neither keepAliveTimeout nor headersTimeout to a socket it
 * is handed, so both bounds are kept here: the idle bound runs only while no request is in flight on the socket
 * (a slow handler or a quiet followed log is never cut), the header bound until the first request arrives.
 */
export function listenTlsHttp(options: TlsHttpOptions): Promise<TlsHttpServer> {
  const sockets = new Set<TLSSocket>();
  const inFlight = new WeakMap<object, number>();
  const http = createHttpServer();
  // The bookkeeping listener runs before the handler's.
  http.on("request", (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const socket = incoming.socket as TLSSocket & { headersTimer?: ReturnType<typeof setTimeout> };
    clearTimeout(socket.headersTimer);
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    socket.setTimeout(0);
    outgoing.on("close", () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, left);
      if (left === 0 && !socket.destroyed) socket.setTimeout(options.idleTimeoutMs);
    });
  });
  http.on("request", options.request);
  http.on("upgrade", (incoming: IncomingMessage, socket: Duplex, head: Buffer) => {
    const tls = socket as TLSSocket & { headersTimer?: ReturnType<typeof setTimeout> };
    clearTimeout(tls.headersTimer);
    // A WebSocket stream lives as long as its session: no idle bound.
    tls.setTimeout(0);
    options.upgrade(incoming, socket, head);
  });
  const server = createTlsServer(
    options.secure,
    (socket: TLSSocket & { headersTimer?: ReturnType<typeof setTimeout> }) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("timeout", () => socket.destroy());
      socket.setTimeout(options.idleTimeoutMs);
      socket.headersTimer = setTimeout(() => socket.destroy(), options.headersTimeoutMs);
      socket.on("close", () => clearTimeout(socket.headersTimer));
      http.emit("connection", socket);
    },
  );
  // A client that fails the handshake is its own problem, not the server's.
  server.on("tlsClientError", (_error, socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        setSecureContext: (secure) => server.setSecureContext(secure),
        stop: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // close() waits for every connection to end: a followed log would hold the stop forever.
            for (const socket of sockets) socket.destroy();
          }),
      });
    });
  });
}
