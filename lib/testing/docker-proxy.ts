// A Unix-socket proxy in front of the test dockerd that can stop answering on demand: a Docker Engine
// that hangs (overloaded, stuck on a dying disk) without going away, for the fault tests; it also shows
// the requests it passed, for the tests that count the Engine API calls of an operation.
import { createConnection, createServer, type Socket } from "node:net";
import { rmSync } from "node:fs";

export interface DockerProxy {
  /** `unix://…` endpoint to give the kubelet as --docker_endpoint. */
  endpoint: string;
  /** From now on nothing passes in either direction, on open connections and new ones; nothing is closed. */
  hang(): void;
  /** The request lines (`GET /v1.41/containers/json?… HTTP/1.1`) received since hang(), never answered. */
  held(): string[];
  /** The request lines passed to the daemon before hang(), in order. */
  passed(): string[];
  close(): Promise<void>;
}

/** Starts a proxy at `socketPath` forwarding to the daemon at `upstream` (a `unix://` endpoint). */
export async function startDockerProxy(socketPath: string, upstream: string): Promise<DockerProxy> {
  const target = upstream.replace(/^unix:\/\//, "");
  const sockets = new Set<Socket>();
  let hung = false;
  const held: string[] = [];
  const passed: string[] = [];
  const requestLines = (into: string[]) => (chunk: Buffer) => {
    for (const line of chunk.toString("latin1").split("\r\n"))
      if (/^[A-Z]+ \/\S* HTTP\/1\.[01]$/.test(line)) into.push(line);
  };
  // Reading on and dropping what comes keeps every request unanswered while it shows what was asked.
  const swallow = (socket: Socket) => socket.on("data", requestLines(held)).resume(); // unpipe() left it paused
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (hung) return swallow(client);
    const daemon = createConnection(target);
    track(daemon);
    client.on("data", requestLines(passed));
    client.on("close", () => daemon.destroy());
    daemon.on("close", () => client.destroy());
    client.pipe(daemon);
    daemon.pipe(client);
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    endpoint: `unix://${socketPath}`,
    hang() {
      hung = true;
      for (const socket of sockets) {
        socket.unpipe();
        socket.removeAllListeners("data");
        swallow(socket);
      }
    },
    held: () => [...held],
    passed: () => [...passed],
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
