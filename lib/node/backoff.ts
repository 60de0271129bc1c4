// Keyed exponential back-off (the Kubernetes flowcontrol.Backoff): crash loops and image pulls.
import type { Clock } from "../clock.ts";

/** One key's back-off: it may retry at `at + delayMs`. */
export interface BackoffEntry {
  readonly delayMs: number;
  /** When the last failure was recorded (ms since the epoch). */
  readonly at: number;
}

/** Per-key back-off: the first retry is free, then `initialMs` doubling up to `maxMs`. */
export class Backoff {
  readonly #entries = new Map<string, BackoffEntry>();

  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    readonly clock: Clock,
  ) {}

  /** Records a retry now; returns the delay the next retry must wait. */
  next(key: string): number {
    const entry = this.#entries.get(key);
    const delayMs = entry ? Math.min(entry.delayMs * 2, this.maxMs) : this.initialMs;
    this.#entries.set(key, { delayMs, at: this.clock.now() });
    return delayMs;
  }

  /** Milliseconds still to wait before a retry (0 when free to go). */
  remaining(key: string): number {
    const entry = this.#entries.get(key);
    if (!entry) return 0;
    return Math.max(0, entry.at + entry.delayMs - this.clock.now());
  }

  /** A key's state, for pure planners that take the time as an argument. */
  get(key: string): BackoffEntry | undefined {
    return this.#entries.get(key);
  }

  reset(key: string): void {
    this.#entries.delete(key);
  }

  /** Forgets keys that match, e.g. every container of a removed pod. */
  resetWhere(match: (key: string) => boolean): void {
    for (const key of this.#entries.keys()) if (match(key)) this.#entries.delete(key);
  }
}
