// How a streamed exec or attach on a CRI runtime hands out its output and settles its exit, whichever transport
// (WebSocket or SPDY) carried it: the queue the output drains, and the ending read from the error channel's status.
import { runtimeError, type OutputChunk } from "../runtime.ts";

/** What the error channel said: an exit code (0 for Success), a failure's message, or nothing at all. */
export type StreamOutcome = { exitCode: number } | { error: string } | undefined;

/** The output and exit of one session; the transport pushes chunks and calls finish() or stop(). */
export interface StreamEnding {
  push(chunk: OutputChunk): void;
  /** The chunks in order, until finish() or stop(). */
  output(): AsyncGenerator<OutputChunk>;
  exit: Promise<number | undefined>;
  /** The far end closed: exit settles from `outcome`; with none, an exec fails saying `withoutStatus`. */
  finish(outcome: StreamOutcome, withoutStatus: string): void;
  /** Our side ends the session early: exit settles with no code. False when it had ended already. */
  stop(): boolean;
}

/** A session's ending; `action` ("exec [sh] in container abc") names the call in errors. */
export function createStreamEnding(options: { kind: "exec" | "attach"; action: string }): StreamEnding {
  const queue: OutputChunk[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  let settle!: (value: number | undefined) => void;
  let fail!: (error: Error) => void;
  const exit = new Promise<number | undefined>((resolve, reject) => ((settle = resolve), (fail = reject)));
  exit.catch(() => {});
  const failed = (why: string) => fail(runtimeError("RuntimeError", `cannot ${options.action}: ${why}`));
  return {
    push(chunk) {
      queue.push(chunk);
      notify();
    },
    async *output() {
      for (;;) {
        const chunk = queue.shift();
        if (chunk) yield chunk;
        else if (ended) return;
        else await new Promise<void>((wakeUp) => (wake = wakeUp));
      }
    },
    exit,
    finish(outcome, withoutStatus) {
      ended = true;
      notify();
      // After stop() the exit has settled already, and a promise settles once.
      if (outcome && "exitCode" in outcome) settle(options.kind === "exec" ? outcome.exitCode : undefined);
      else if (outcome) failed(outcome.error);
      // An attach ends with the container's streams and has no exit code to wait for.
      else if (options.kind === "attach") settle(undefined);
      else failed(withoutStatus);
    },
    stop() {
      if (ended) return false;
      ended = true;
      notify();
      settle(undefined);
      return true;
    },
  };
}
