// A PortForwardStream over a byte pipe: a TCP socket (a host-network pod's port) or a relay process's stdin and
// stdout (a port inside another network namespace). Reads follow the consumer, writes wait for the pipe to drain,
// and the client's end of file half-closes the pipe so the pod's side can still answer.
import { connect } from "node:net";
import type { Readable, Writable } from "node:stream";
import { runtimeError, type PortForwardStream } from "./runtime.ts";

/** The two ends of a pipe to a pod's port and how it ends. */
export interface PipeEnds {
  input: Writable;
  output: Readable;
  /** Resolves when the pipe is over; rejects with why it failed. */
  finished: Promise<void>;
  destroy(): void;
}

/** The stream over `ends`. */
export function pipeStream(ends: PipeEnds): PortForwardStream {
  ends.finished.catch(() => {});
  ends.input.on("error", () => {});
  return {
    output: (async function* () {
      for await (const chunk of ends.output) yield new Uint8Array(chunk as Buffer);
    })(),
    write: (data) =>
      new Promise<void>((resolve) => {
        if (ends.input.destroyed || ends.input.writableEnded) return resolve();
        let settled = false;
        // Whichever comes first: room in the buffer, or the pipe's end (no drain ever follows). The other listener
        // goes too, or every refused write of a long transfer leaves one behind (MaxListenersExceededWarning).
        const settle = () => {
          if (settled) return;
          settled = true;
          ends.input.off("drain", settle);
          ends.input.off("close", settle);
          resolve();
        };
        if (ends.input.write(data)) return settle();
        ends.input.once("drain", settle);
        ends.input.once("close", settle);
      }),
    closeWrite: () => {
      if (!ends.input.destroyed && !ends.input.writableEnded) ends.input.end();
    },
    done: ends.finished,
    close: () => ends.destroy(),
  };
}

/** Connects to `host:port` (resolved once connected; RuntimeError naming the port when refused). */
export function connectTcp(host: string, port: number, what: string): Promise<PortForwardStream> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let connected = false;
    let closedByUs = false;
    let failure: Error | undefined;
    const finished = new Promise<void>((done, fail) =>
      socket.once("close", () => (failure && !closedByUs ? fail(failure) : done())),
    );
    // A refused connect rejects the caller's promise; nobody waits on `finished` then.
    finished.catch(() => {});
    socket.once("error", (error: Error) => {
      failure = runtimeError(
        "RuntimeError",
        connected
          ? `the connection to ${host}:${port} ${what} failed: ${error.message}`
          : `failed to connect to ${host}:${port} ${what}: ${error.message}`,
      );
      if (!connected) reject(failure);
    });
    socket.once("connect", () => {
      connected = true;
      const destroy = () => {
        closedByUs = true;
        socket.destroy();
      };
      resolve(pipeStream({ input: socket, output: socket, finished, destroy }));
    });
  });
}
