import { expect, test } from "bun:test";
import { closeSync, readSync, writeSync } from "node:fs";
import { createEventFd } from "./libc.ts";

test("an eventfd from libc counts what is written to it and answers a read with the count", async () => {
  const fd = (await createEventFd())!;
  expect(fd).toBeGreaterThan(2);
  const one = Buffer.alloc(8);
  one.writeBigUInt64LE(1n);
  writeSync(fd, one);
  writeSync(fd, one);
  const got = Buffer.alloc(8);
  expect(readSync(fd, got, 0, 8, null)).toBe(8);
  expect(got.readBigUInt64LE(0)).toBe(2n);
  closeSync(fd);
});
