import { expect, test } from "bun:test";
import { heapBytes, heapObjectCounts } from "./heap.ts";

test("heapBytes answers the live cells within the blocks the heap holds, plus what objects own outside them", async () => {
  await heapObjectCounts(); // its full GC, as GET /debug/heap runs it before reading the sizes
  const before = (await heapBytes())!;
  expect(before.heapSize).toBeGreaterThan(0);
  expect(before.heapCapacity).toBeGreaterThanOrEqual(before.heapSize);
  const held = new ArrayBuffer(8 * 2 ** 20);
  await heapObjectCounts();
  const after = (await heapBytes())!;
  expect(after.extraMemorySize - before.extraMemorySize).toBeGreaterThanOrEqual(held.byteLength);
  // JSC's size and capacity include that memory besides the cells.
  expect(after.heapSize - after.extraMemorySize).toBeGreaterThan(0);
  expect(after.heapCapacity - after.extraMemorySize).toBeGreaterThanOrEqual(after.heapSize - after.extraMemorySize);
});
