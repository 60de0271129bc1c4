// PortForwardStreams for tests of what serves port forwards: an in-memory one that echoes what is written,
// upper-cased, ends when the client's side ends, and records what it saw; and `cat` on real pipes.
import { spawn } from "node:child_process";
import { pipeStream } from "../container/port-forward-stream.ts";
import type { PortForwardStream } from "../container/runtime.ts";

/**
 * A forward to `cat` on real pipes, once `opening` resolves: like `nc -e cat` in a pod, it stops taking input while
 * its answer is not read.
 */
export async function catPortForward(opening: Promise<void>): Promise<PortForwardStream> {
  await opening;
  const child = spawn("cat", [], { stdio: ["pipe", "pipe", "ignore"] });
  const finished = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return pipeStream({ input: child.stdin, output: child.stdout, finished, destroy: () => child.kill() });
}

/** A forwarded connection to an echo server; `failWith` makes it end with that failure instead. */
export function echoPortForward(options: { failWith?: string } = {}) {
  const seen = { written: "", clientEnded: false, closed: false };
  const queue: Uint8Array[] = [];
  let ended = false;
  let wake = () => {};
  let settle!: () => void;
  let fail!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((settle = resolve), (fail = reject)));
  done.catch(() => {});
  const finish = () => {
    ended = true;
    wake();
    if (options.failWith) fail(new Error(options.failWith));
    else settle();
  };
  const stream: PortForwardStream = {
    output: (async function* () {
      for (;;) {
        const chunk = queue.shift();
        if (chunk) yield chunk;
        else if (ended) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    })(),
    async write(data) {
      const text = new TextDecoder().decode(data);
      seen.written += text;
      queue.push(new TextEncoder().encode(text.toUpperCase()));
      wake();
    },
    closeWrite() {
      seen.clientEnded = true;
      finish();
    },
    done,
    close() {
      seen.closed = true;
      finish();
    },
  };
  return { stream, seen, finish };
}
