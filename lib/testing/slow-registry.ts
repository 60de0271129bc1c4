// A loopback HTTP proxy in front of the test registry that serves blobs slowly but steadily (or, at
// 0 bytes per second, sends their headers and then nothing), so a pull lasts as long as a test needs:
// the image pull progress deadline's end-to-end tests. Manifests and everything else pass at once.
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface SlowRegistryOptions {
  /** host:port of the registry behind the proxy (plain HTTP). */
  upstream: string;
  /** Pace of every blob body; 0: the headers, then nothing until the client or close() ends it. */
  bytesPerSecond: number;
}

export interface SlowRegistry {
  /** host:port to pull from: images are named `${host}/<repository>:<tag>`. */
  host: string;
  /** Ends every open connection and stops listening. */
  close(): Promise<void>;
}

/** Ticks per second of the pace: each sends bytesPerSecond / TICKS bytes. */
const TICKS = 10;

const isBlob = (method: string | undefined, url: string | undefined) =>
  method === "GET" && /^\/v2\/.+\/blobs\/sha256:[0-9a-f]{64}$/.test(url ?? "");

/** Starts the proxy on 127.0.0.1 (a free port). */
export async function startSlowRegistry(options: SlowRegistryOptions): Promise<SlowRegistry> {
  const [upstreamHost, upstreamPort] = options.upstream.split(":");
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setInterval>>();

  /** Writes `body` at the pace, a tick at a time; stops when the client goes. */
  const paced = (body: Buffer, write: (chunk: Buffer) => void, end: () => void, socket: Socket) => {
    if (options.bytesPerSecond <= 0) return; // headers sent: a stall
    const step = Math.max(1, Math.floor(options.bytesPerSecond / TICKS));
    let offset = 0;
    const timer = setInterval(() => {
      if (socket.destroyed || offset >= body.length) {
        clearInterval(timer);
        timers.delete(timer);
        if (!socket.destroyed) end();
        return;
      }
      write(body.subarray(offset, offset + step));
      offset += step;
    }, 1000 / TICKS);
    timers.add(timer);
  };

  const server = createServer((req, res) => {
    const forward = request(
      {
        host: upstreamHost,
        port: Number(upstreamPort),
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: options.upstream },
      },
      (upstream: IncomingMessage) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        if (!isBlob(req.method, req.url) || (upstream.statusCode ?? 0) >= 300) {
          upstream.pipe(res);
          return;
        }
        res.flushHeaders();
        const chunks: Buffer[] = [];
        upstream.on("data", (chunk: Buffer) => chunks.push(chunk));
        upstream.on("end", () =>
          paced(
            Buffer.concat(chunks),
            (chunk) => res.write(chunk),
            () => res.end(),
            req.socket,
          ),
        );
      },
    );
    forward.on("error", (error) => {
      res.writeHead(502, { "Content-Type": "text/plain" });
      res.end(`slow registry: cannot reach ${options.upstream}: ${error.message}`);
    });
    req.pipe(forward);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
