import { expect, test } from "bun:test";
import { heapBytes, heapObjectCounts } from "./heap.ts";

test("heapBytes answers the heap's cells in heapSize and what objects own outside them in extraMemorySize", async () => {
  await heapObjectCounts(); // its full GC, as GET /debug/heap runs it before reading the sizes
  const before = (await heapBytes())!;
  expect(before.heapSize).toBeGreaterThan(0);
  expect(before.heapCapacity).toBeGreaterThanOrEqual(before.heapSize);
  // 8 MiB outside the cells: extraMemorySize grows by it (less what the same full GC freed of other objects' extra
  // memory: in a full test run, tens of KiB from earlier files' leftovers).
  const buffer = new ArrayBuffer(8 * 2 ** 20);
  await heapObjectCounts();
  const withBuffer = (await heapBytes())!;
  expect(withBuffer.extraMemorySize - before.extraMemorySize).toBeGreaterThan(buffer.byteLength - 2 ** 20);
  // 200,000 small objects, all cells: heapSize grows by megabytes, extraMemorySize by little.
  const cells = Array.from({ length: 200_000 }, (_, i) => ({ i }));
  await heapObjectCounts();
  const withCells = (await heapBytes())!;
  expect(withCells.heapSize - withBuffer.heapSize).toBeGreaterThan(2 * 2 ** 20);
  expect(withCells.extraMemorySize - withBuffer.extraMemorySize).toBeLessThan(2 ** 20);
  expect(cells.length + buffer.byteLength).toBeGreaterThan(0); // both held until here
});
