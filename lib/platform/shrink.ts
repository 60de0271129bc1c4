// Gives back the memory of a burst once the kubelet has settled: one Bun.shrink() (JSC drops the code it compiled
// and collects, the allocator returns its free pages) a while after start, when adopting the pods is over, and
// again after a later burst (pods created, a big list answered) once the RSS has stopped rising well above its level.
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { runtimeKind } from "./runtime.ts";

declare const Bun: { shrink(): void; gc(force: boolean): void };

/**
 * After start: adopting 110 pods takes seconds, the first stats collection 10 s. Measured (bench/results.md,
 * issue 41 item 4): 5–7 MB less RssAnon at 110 pods; code the steady state needs again is compiled again.
 */
export const SHRINK_AFTER_START_MS = 30_000;

/** How often the RSS is read for a later burst: one read of /proc/self/statm, nothing else. */
export const BURST_CHECK_MS = 15_000;

/**
 * RSS this far above the lowest level read since the last shrink is a burst's leftover worth a shrink. Above what
 * the steady state grows back by after a shrink (the code it compiles again: 1–4 MB at 110 pods, bench/results.md),
 * below what creating pods leaves (8–25 MB).
 */
export const BURST_GROWTH_BYTES = 8 * 2 ** 20;

/**
 * The least time between two shrinks: each one makes JSC compile again the code the kubelet goes on running. Doubled
 * (up to MAX_SHRINK_INTERVAL_MS) after a shrink that gave back less than half the growth (the growth was live
 * state, more pods), so a node that grows for good is not shrunk over and over.
 */
export const MIN_SHRINK_INTERVAL_MS = 120_000;
export const MAX_SHRINK_INTERVAL_MS = 1_920_000;

/** A read within this of the one before counts as not rising: the burst is over. */
const SETTLED_BYTES = 2 ** 20;

export interface ShrinkDeps {
  clock: Clock;
  /** What shrinks; Bun.shrink and a full GC on Bun, nothing on other runtimes (absent). */
  shrink?: () => void;
  /** Told the RSS before and after each shrink (operators comparing a node's memory see when it dropped). */
  log?: Pick<Logger, "info">;
  /** The process's resident bytes (process.memoryUsage.rss(): /proc/self/statm, without the heap's figures). */
  rss?: () => number;
}

/**
 * Runs the shrink SHRINK_AFTER_START_MS from now, then reads the RSS every BURST_CHECK_MS and shrinks again when it
 * is BURST_GROWTH_BYTES above the lowest read since the last shrink and has stopped rising, at most once every
 * MIN_SHRINK_INTERVAL_MS; until `signal` aborts.
 */
export function shrinkAfterStart(signal: AbortSignal, deps: ShrinkDeps): void {
  const shrink = deps.shrink ?? runtimeShrink();
  if (!shrink || signal.aborted) return;
  const rss = deps.rss ?? (() => process.memoryUsage.rss());
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  let timer = deps.clock.setTimeout(() => {
    const before = rss();
    const started = deps.clock.now();
    shrink();
    const after = rss();
    deps.log?.info(
      `gave back the start-up's memory: RSS ${mb(before)} MB -> ${mb(after)} MB in ${deps.clock.now() - started} ms`,
    );
    watch(after);
  }, SHRINK_AFTER_START_MS);
  signal.addEventListener("abort", () => timer.cancel(), { once: true });

  // The level a burst is measured from, the last read, when the last shrink ran and the interval before the next.
  const watch = (afterStart: number): void => {
    let low = afterStart;
    let last = afterStart;
    let shrunkAt = deps.clock.now();
    let interval = MIN_SHRINK_INTERVAL_MS;
    const check = () => {
      const now = rss();
      const rising = now > last + SETTLED_BYTES;
      last = now;
      low = Math.min(low, now);
      const growth = now - low;
      if (growth >= BURST_GROWTH_BYTES && !rising && deps.clock.now() - shrunkAt >= interval) {
        const started = deps.clock.now();
        shrink();
        const after = rss();
        deps.log?.info(
          `gave back a burst's memory: RSS ${mb(now)} MB -> ${mb(after)} MB in ${deps.clock.now() - started} ms ` +
            `(${mb(growth)} MB above its level since the last shrink)`,
        );
        interval = now - after < growth / 2 ? Math.min(interval * 2, MAX_SHRINK_INTERVAL_MS) : MIN_SHRINK_INTERVAL_MS;
        shrunkAt = deps.clock.now();
        low = last = after;
      }
      timer = deps.clock.setTimeout(check, BURST_CHECK_MS);
    };
    timer = deps.clock.setTimeout(check, BURST_CHECK_MS);
  };
}

function runtimeShrink(): (() => void) | undefined {
  if (runtimeKind() !== "bun") return undefined;
  return () => {
    Bun.shrink();
    Bun.gc(true);
  };
}
