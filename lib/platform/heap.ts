// Live JavaScript heap objects by type after a full collection (bun:jsc), for finding leaks: active
// timers show up as "Timeout", for one. The only import of bun:jsc; other runtimes have no such count.
import { runtimeKind } from "./runtime.ts";

declare const Bun: { gc(force: boolean): void };

/**
 * What the JS heap holds in bytes (bun:jsc heapStats, as JSC counts them), read after heapObjectCounts' full GC:
 * `heapSize` its objects, `heapCapacity` the blocks it holds for them, `extraMemorySize` what objects own outside
 * the heap and report to it (ArrayBuffers, strings' characters, compiled code).
 */
export type HeapBytes = { heapSize: number; heapCapacity: number; extraMemorySize: number };

/** The JS heap's sizes in bytes; undefined when not running on Bun. */
export async function heapBytes(): Promise<HeapBytes | undefined> {
  if (runtimeKind() !== "bun") return undefined;
  const specifier = "bun:jsc";
  const jsc = (await import(specifier)) as { heapStats(): HeapBytes };
  const { heapSize, heapCapacity, extraMemorySize } = jsc.heapStats();
  return { heapSize, heapCapacity, extraMemorySize };
}

/** Object counts by type after a full GC; undefined when not running on Bun. */
export async function heapObjectCounts(): Promise<Record<string, number> | undefined> {
  if (runtimeKind() !== "bun") return undefined;
  // A specifier in a variable keeps tsc (and deno) from resolving a module only Bun has.
  const specifier = "bun:jsc";
  const jsc = (await import(specifier)) as { heapStats(): { objectTypeCounts: Record<string, number> } };
  Bun.gc(true);
  return jsc.heapStats().objectTypeCounts;
}
