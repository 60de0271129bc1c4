// Gives back the memory of the start-up burst once the kubelet has settled: one Bun.shrink() (JSC drops the code it
// compiled and collects, the allocator returns its free pages) a while after start, when adopting the pods is over.
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { runtimeKind } from "./runtime.ts";

declare const Bun: { shrink(): void; gc(force: boolean): void };

/**
 * After start: adopting 110 pods takes seconds, the first stats collection 10 s. Measured (bench/results.md,
 * issue 41 item 4): 5–7 MB less RssAnon at 110 pods; code the steady state needs again is compiled again.
 */
export const SHRINK_AFTER_START_MS = 30_000;

export interface ShrinkDeps {
  clock: Clock;
  /** What shrinks; Bun.shrink and a full GC on Bun, nothing on other runtimes (absent). */
  shrink?: () => void;
  /** Told the RSS before and after, once (operators comparing a node's memory see when it dropped). */
  log?: Pick<Logger, "info">;
  /** The process's resident bytes (process.memoryUsage().rss by default). */
  rss?: () => number;
}

/** Runs the shrink once, SHRINK_AFTER_START_MS from now, unless `signal` aborts first. */
export function shrinkAfterStart(signal: AbortSignal, deps: ShrinkDeps): void {
  const shrink = deps.shrink ?? runtimeShrink();
  if (!shrink || signal.aborted) return;
  const cancel = () => timer.cancel();
  const rss = deps.rss ?? (() => process.memoryUsage().rss);
  const timer = deps.clock.setTimeout(() => {
    signal.removeEventListener("abort", cancel);
    const before = rss();
    shrink();
    const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
    deps.log?.info(`gave back the start-up's memory: RSS ${mb(before)} MB -> ${mb(rss())} MB`);
  }, SHRINK_AFTER_START_MS);
  signal.addEventListener("abort", cancel, { once: true });
}

function runtimeShrink(): (() => void) | undefined {
  if (runtimeKind() !== "bun") return undefined;
  return () => {
    Bun.shrink();
    Bun.gc(true);
  };
}
