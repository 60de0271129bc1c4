// `kubelet reset`'s account of its pods' stops while it waits. On a terminal: one line, redrawn each second, of the
// pods still stopping and the grace period each has left, under the lines printed so far. Elsewhere (a pipe, a log
// file): a line as each pod begins to stop, with its grace period, and one as it has stopped.
import type { Clock, Timer } from "../clock.ts";
import { ignoredSigtermMessage } from "../container/timed-stop.ts";
import type { PodStopped } from "../node/reset/node-reset.ts";

export interface ResetProgressOptions {
  out: NodeJS.WritableStream & { columns?: number };
  tty: boolean;
  clock: Clock;
}

export interface ResetProgress {
  /** A line that stays (a removal); on a terminal, printed above the pods' line. */
  line(text: string): void;
  stopping(pod: string, graceSeconds: number): void;
  stopped(pod: string, stopped: PodStopped): void;
  /** Clears the pods' line and stops redrawing it. */
  close(): void;
}

/** The terminal's line is redrawn this often while pods stop (the grace left counts down in seconds). */
const REDRAW_MS = 1000;

export function createResetProgress(options: ResetProgressOptions): ResetProgress {
  const { out, clock, tty } = options;
  /** Pods stopping: when their grace period ends (ms since the epoch). */
  const stopping = new Map<string, number>();
  let shown = false;
  let timer: Timer | undefined;

  const podsLine = () => {
    const now = clock.now();
    const pods = [...stopping].map(([pod, end]) => `${pod} ${Math.max(0, Math.ceil((end - now) / 1000))}s left`);
    const text = `stopping ${pods.length} pod${pods.length === 1 ? "" : "s"}: ${pods.join(", ")}`;
    // Wider than the terminal, it would wrap and the next redraw would not cover it.
    const width = (out.columns || 80) - 1;
    return text.length > width ? `${text.slice(0, width - 1)}…` : text;
  };
  const clear = () => {
    if (shown) out.write("\r\x1b[2K");
    shown = false;
  };
  const draw = () => {
    clear();
    timer?.cancel();
    timer = undefined;
    if (stopping.size === 0) return;
    out.write(podsLine());
    shown = true;
    timer = clock.setTimeout(draw, REDRAW_MS);
  };

  const line = (text: string) => {
    if (!tty) return void out.write(`${text}\n`);
    clear();
    out.write(`${text}\n`);
    draw();
  };

  return {
    line,
    stopping(pod, graceSeconds) {
      stopping.set(pod, clock.now() + graceSeconds * 1000);
      if (tty) draw();
      else out.write(`stopping pod ${pod} (grace period ${graceSeconds}s)\n`);
    },
    stopped(pod, { seconds, ignoredSigterm }) {
      stopping.delete(pod);
      const ignored = ignoredSigterm.map((c) => ignoredSigtermMessage(c.container, c.graceSeconds));
      line(`stopped pod ${pod} in ${seconds.toFixed(1)}s${ignored.length ? ` (${ignored.join("; ")})` : ""}`);
    },
    close() {
      timer?.cancel();
      timer = undefined;
      stopping.clear();
      if (tty) clear();
    },
  };
}
