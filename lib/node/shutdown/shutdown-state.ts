// The last graceful node shutdown's start and end, as the Go kubelet's nodeshutdown storage: a JSON file
// (<root_dir>/graceful_node_shutdown_state, {"startTime","endTime"} as Go's time.Time marshals them) written
// atomically when a shutdown starts and ends, read back at start, so that after the reboot
// kubelet_graceful_shutdown_start_time_seconds and _end_time_seconds say when the last one ran.
import type { Logger } from "../../log.ts";
import { stateFile } from "../state/state-file.ts";

/** The Go kubelet's file name under its root directory. */
export const SHUTDOWN_STATE_FILE = "graceful_node_shutdown_state";

/** Go's zero time.Time, as encoding/json writes it: "no end yet". */
const ZERO_TIME = "0001-01-01T00:00:00Z";

/** Where the times go: the two gauges (seconds since the epoch; 0 = none). */
export interface ShutdownTimesSink {
  gracefulShutdown(times: { startSeconds?: number; endSeconds?: number }): void;
}

export interface ShutdownState {
  /** Sets the gauges from the file a previous run left (nothing when there is none). */
  restore(): void;
  /** A shutdown starts now: stored, start gauge set, end gauge 0. */
  started(): Promise<void>;
  /** The shutdown started last has ended now. */
  ended(): Promise<void>;
}

export function createShutdownState(
  path: string,
  deps: { metrics: ShutdownTimesSink; now: () => number; log: Logger },
): ShutdownState {
  let startMs = 0;
  const seconds = (text: unknown) => {
    const ms = typeof text === "string" && text !== ZERO_TIME ? Date.parse(text) : Number.NaN;
    return Number.isFinite(ms) ? ms / 1000 : undefined;
  };
  // undefined: no file (no shutdown ran yet), or one that does not parse.
  const file = stateFile<{ startTime?: unknown; endTime?: unknown } | undefined>(path, deps.log, {
    what: "graceful shutdown state",
    consequence: "the shutdown gauges start at 0",
    empty: () => undefined,
    accept: (parsed) => (typeof parsed === "object" && parsed !== null ? parsed : undefined),
  });
  const store = (start: number, end: number) => {
    file.save({ startTime: new Date(start).toISOString(), endTime: end ? new Date(end).toISOString() : ZERO_TIME });
    return file.flushed();
  };
  return {
    restore() {
      const state = file.load();
      if (!state) return;
      const startSeconds = seconds(state.startTime);
      const endSeconds = seconds(state.endTime);
      deps.metrics.gracefulShutdown({
        ...(startSeconds !== undefined ? { startSeconds } : {}),
        ...(endSeconds !== undefined ? { endSeconds } : {}),
      });
    },
    async started() {
      startMs = deps.now();
      deps.metrics.gracefulShutdown({ startSeconds: startMs / 1000, endSeconds: 0 });
      await store(startMs, 0);
    },
    async ended() {
      const endMs = deps.now();
      deps.metrics.gracefulShutdown({ endSeconds: endMs / 1000 });
      await store(startMs, endMs);
    },
  };
}
