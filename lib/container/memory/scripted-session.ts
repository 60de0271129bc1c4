// A StreamSession driven by a script: the in-memory runtime's exec and attach (hollow nodes, unit tests of
// whatever consumes exec and attach streams): the script writes output, reads stdin line by line, sees resizes,
// and returns the exit code.
import type { OutputChunk, StreamSession, TerminalSize } from "../runtime.ts";

/** What a script sees of its session. */
export interface ScriptIO {
  stdout(text: string): void;
  stderr(text: string): void;
  /** The next stdin line without its newline; undefined at end of file (closeStdin) or close(). */
  readLine(): Promise<string | undefined>;
  /** Every resize so far, in order. */
  readonly resizes: TerminalSize[];
  /** Aborted when the session is closed. */
  readonly closed: AbortSignal;
}

/** The exit code (undefined: an attach's end), or a thrown error that fails the session. */
export type StreamScript = (io: ScriptIO) => Promise<number | undefined>;

/** A session running `script` at once; its output ends when the script returns (or the session is closed). */
export function scriptedSession(script: StreamScript): StreamSession {
  const encoder = new TextEncoder();
  const closing = new AbortController();
  const queue: OutputChunk[] = [];
  let finished = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  let stdin = "";
  let stdinEnded = false;
  let stdinWaiter: (() => void) | undefined;
  const stdinChanged = () => {
    stdinWaiter?.();
    stdinWaiter = undefined;
  };
  closing.signal.addEventListener("abort", () => {
    stdinChanged();
    notify();
  });

  const resizes: TerminalSize[] = [];
  const io: ScriptIO = {
    stdout: (text) => (queue.push({ stream: 1, data: encoder.encode(text) }), notify()),
    stderr: (text) => (queue.push({ stream: 2, data: encoder.encode(text) }), notify()),
    async readLine() {
      for (;;) {
        const newline = stdin.indexOf("\n");
        if (newline >= 0) {
          const line = stdin.slice(0, newline);
          stdin = stdin.slice(newline + 1);
          return line;
        }
        if (stdinEnded || closing.signal.aborted) return undefined;
        await new Promise<void>((resolve) => (stdinWaiter = resolve));
      }
    },
    resizes,
    closed: closing.signal,
  };
  const exit = script(io).finally(() => {
    finished = true;
    notify();
  });
  exit.catch(() => {});

  async function* output(): AsyncGenerator<OutputChunk> {
    for (;;) {
      const chunk = queue.shift();
      if (chunk) yield chunk;
      else if (finished || closing.signal.aborted) return;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  return {
    output: output(),
    write(data) {
      // After end of file nothing more reaches the process, as with a closed pipe.
      if (stdinEnded) return;
      stdin += new TextDecoder().decode(data);
      stdinChanged();
    },
    closeStdin() {
      stdinEnded = true;
      stdinChanged();
    },
    resize: (size) => void resizes.push(size),
    exit: exit.then((code) => (closing.signal.aborted ? undefined : code)),
    close: () => closing.abort(),
  };
}
