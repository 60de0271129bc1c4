// Keyed exponential back-off (the Kubernetes flowcontrol.Backoff): crash loops and image pulls,
// optionally kept on disk so a kubelet restart does not reset a crash loop to "restart at once".
import type { Clock } from "../../clock.ts";

/** One key's back-off: it may retry at `at + delayMs`. */
export interface BackoffEntry {
  readonly delayMs: number;
  /** When the last failure was recorded (ms since the epoch). */
  readonly at: number;
}

/** Where a back-off keeps its entries across restarts (lib/node/state/backoff-file.ts). */
export interface BackoffPersistence {
  load(): Record<string, BackoffEntry>;
  /** Called after every change with all entries; writes are the persistence's business (async, atomic). */
  save(entries: Record<string, BackoffEntry>): void;
}

/** The Go kubelet's crash-loop back-off without configuration: 10 s doubling to 300 s. */
export const CRASH_LOOP_INITIAL_MS = 10_000;

/**
 * The crash-loop back-off's first delay and cap for crashLoopBackOff.maxContainerRestartPeriod (kubelet.go):
 * 10 s doubling up to the cap, and a cap below 10 s is the first delay too.
 */
export function crashLoopPeriods(maxContainerRestartMs = 300_000): { initialMs: number; maxMs: number } {
  return { initialMs: Math.min(CRASH_LOOP_INITIAL_MS, maxContainerRestartMs), maxMs: maxContainerRestartMs };
}

/** Per-key back-off: the first retry is free, then `initialMs` doubling up to `maxMs`. */
export class Backoff {
  readonly #entries = new Map<string, BackoffEntry>();

  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    readonly clock: Clock,
    readonly persistence?: BackoffPersistence,
  ) {
    // Entries idle for twice the longest delay are forgotten, as flowcontrol.Backoff's GC does.
    // A delay saved under a longer cap (maxContainerRestartPeriod lowered since) waits no longer than this one.
    for (const [key, entry] of Object.entries(persistence?.load() ?? {}))
      if (clock.now() - entry.at < 2 * maxMs)
        this.#entries.set(key, { ...entry, delayMs: Math.min(entry.delayMs, maxMs) });
  }

  /** Records a retry now; returns the delay the next retry must wait. */
  next(key: string): number {
    const entry = this.#entries.get(key);
    const delayMs = entry ? Math.min(entry.delayMs * 2, this.maxMs) : this.initialMs;
    this.#entries.set(key, { delayMs, at: this.clock.now() });
    this.#changed();
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
    if (this.#entries.delete(key)) this.#changed();
  }

  /** Forgets keys that match, e.g. every container of a removed pod. */
  resetWhere(match: (key: string) => boolean): void {
    let changed = false;
    for (const key of this.#entries.keys()) if (match(key)) changed = this.#entries.delete(key) || changed;
    if (changed) this.#changed();
  }

  #changed(): void {
    this.persistence?.save(Object.fromEntries(this.#entries));
  }
}
