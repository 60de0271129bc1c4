// node:http(s) adapter through @hono/node-server: Node, and Deno (whose Deno.serve has no idle timeout,
// while its node:http honours keepAliveTimeout); and Bun with a client CA, through node:tls (tls-http.ts).
import { getRequestListener, serve } from "@hono/node-server";
import type { Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { markClientCertificate, peerSubject } from "./client-certificate.ts";
import { markRemoteAddress } from "./remote-address.ts";
import { handleUpgrade } from "./node-websocket.ts";
import { runtimeKind } from "./runtime.ts";
import { listenTlsHttp } from "./tls-http.ts";
import type { FetchHandler, RunningServer, ServeOptions, TlsFiles } from "./types.ts";

/** How long a client may take to send its request headers, ms: Bun's own bound, so every runtime closes a trickler alike. */
const HEADERS_TIMEOUT_MS = 10_000;
/** How often the server looks for connections over headersTimeout (Node's default, 30 s, would triple the bound). */
const CHECK_INTERVAL_MS = 1000;

export async function serveNode(fetch: FetchHandler, options: ServeOptions): Promise<RunningServer> {
  let running = await listen(fetch, options);
  return {
    port: running.port,
    stop: () => running.stop(),
    async setTls(files: TlsFiles) {
      const tls = { ...options.tls, ...files };
      // Node's https.Server and Bun's node:tls server (tls-http.ts) swap the context in place; a server without
      // setSecureContext is closed and opened again on its port (new connections are refused for that moment).
      if (running.setSecureContext) return running.setSecureContext(secureOptions(tls));
      const previous = running;
      await previous.closeListener();
      running = await listen(fetch, { ...options, port: previous.port, tls });
      const stopNext = running.stop;
      running.stop = () => Promise.all([previous.stop(), stopNext()]).then(() => {});
    },
  };
}

/** node:https's options for the certificate, the client CA and the TLS policy. */
function secureOptions(tls: NonNullable<ServeOptions["tls"]>) {
  return {
    cert: tls.cert,
    key: tls.key,
    ...(tls.ciphers ? { ciphers: tls.ciphers } : {}),
    ...(tls.minVersion ? { minVersion: tls.minVersion } : {}),
    ...(tls.ecdhCurve ? { ecdhCurve: tls.ecdhCurve } : {}),
    ...(tls.ca ? { ca: tls.ca, requestCert: true, rejectUnauthorized: false } : {}),
  };
}

interface Listening extends RunningServer {
  /** Serves new connections with these TLS options, where the server can swap them in place. */
  setSecureContext?(options: ReturnType<typeof secureOptions>): void;
  /** Stops accepting connections; open ones go on. */
  closeListener(): Promise<void>;
}

/** The fetch handler for @hono/node-server, marking each request's verified client certificate and address. */
function marking(fetch: FetchHandler) {
  // A client certificate is requested, not required (the kubelet's): the handler learns whether one was verified.
  return (request: Request, env?: { incoming?: { socket?: { remoteAddress?: string } } }) => {
    const socket = env?.incoming?.socket as TLSSocket | undefined;
    if (socket?.authorized === true) markClientCertificate(request, peerSubject(socket));
    markRemoteAddress(request, env?.incoming?.socket?.remoteAddress);
    return fetch(request);
  };
}

async function listen(fetch: FetchHandler, options: ServeOptions): Promise<Listening> {
  const tls = options.tls;
  // Bun's node:https sockets have no getPeerCertificate(): its node:tls sockets, handed to an http.Server, have.
  if (tls && runtimeKind() === "bun") {
    const running = await listenTlsHttp({
      hostname: options.hostname,
      port: options.port,
      secure: secureOptions(tls),
      idleTimeoutMs: (options.idleTimeoutSeconds ?? 90) * 1000,
      headersTimeoutMs: HEADERS_TIMEOUT_MS,
      request: getRequestListener(marking(fetch), { hostname: options.hostname }),
      upgrade: (request, socket, head) => handleUpgrade(fetch, request, socket, head).catch(() => socket.destroy()),
    });
    return { ...running, closeListener: running.stop };
  }
  return new Promise((resolve) => {
    const server = serve(
      {
        fetch: marking(fetch),
        hostname: options.hostname,
        port: options.port,
        ...(tls
          ? {
              createServer: createHttpsServer,
              serverOptions: { connectionsCheckingInterval: CHECK_INTERVAL_MS, ...secureOptions(tls) },
            }
          : { serverOptions: { connectionsCheckingInterval: CHECK_INTERVAL_MS } }),
      },
      (info: AddressInfo) => {
        const secure = server as Server & { setSecureContext?(options: object): void };
        resolve({
          port: info.port,
          ...(typeof secure.setSecureContext === "function"
            ? { setSecureContext: (options) => secure.setSecureContext!(options) }
            : {}),
          closeListener: () => new Promise((done) => server.close(() => done())),
          stop: () =>
            new Promise((done) => {
              server.close(() => done());
              // close() waits for every connection to end: a followed log would hold the stop forever.
              server.closeAllConnections();
            }),
        });
      },
    ) as Server;
    // The keep-alive timeout runs only between requests (0 = never), so a slow handler or a quiet followed
    // log is never cut: exactly the idle bound. Half-sent headers have their own bound.
    server.keepAliveTimeout = (options.idleTimeoutSeconds ?? 90) * 1000;
    // With a client CA, exec and attach upgrade here (Node; Bun's go through tls-http.ts above).
    if (tls?.ca)
      server.on("upgrade", (request, socket, head) =>
        handleUpgrade(fetch, request, socket, head).catch(() => socket.destroy()),
      );
    server.headersTimeout = HEADERS_TIMEOUT_MS;
  });
}
