// Live JavaScript heap objects by type after a full collection (bun:jsc), for finding leaks: active
// timers show up as "Timeout", for one. The only import of bun:jsc; other runtimes have no such count.
import { runtimeKind } from "./runtime.ts";

declare const Bun: { gc(force: boolean): void };

/** Object counts by type after a full GC; undefined when not running on Bun. */
export async function heapObjectCounts(): Promise<Record<string, number> | undefined> {
  if (runtimeKind() !== "bun") return undefined;
  // A specifier in a variable keeps tsc (and deno) from resolving a module only Bun has.
  const specifier = "bun:jsc";
  const jsc = (await import(specifier)) as { heapStats(): { objectTypeCounts: Record<string, number> } };
  Bun.gc(true);
  return jsc.heapStats().objectTypeCounts;
}
