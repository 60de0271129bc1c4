// A manual clock for tests: time moves only when the test calls advance().
import type { Clock, Timer } from "../clock.ts";

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
}

/** A Clock whose time is advanced by hand; timers fire in order during advance(). */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #pending: Pending[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const entry = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#pending.push(entry);
    return { cancel: () => (this.#pending = this.#pending.filter((p) => p !== entry)) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = this.setTimeout(resolve, ms);
      signal?.addEventListener(
        "abort",
        () => {
          timer.cancel();
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Number of timers not yet fired. */
  get pendingTimers(): number {
    return this.#pending.length;
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promises settle between them. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await flushMicrotasks();
      this.#pending.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#pending[0];
      if (!next || next.at > target) break;
      this.#pending.shift();
      this.#now = next.at;
      next.fn();
    }
    this.#now = target;
    await flushMicrotasks();
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
