import { expect, test } from "bun:test";
import { podCapacity } from "./pod-capacity.ts";

test("podsPerCore bounds the pods at that many per core, within maxPods; 0 leaves maxPods alone", () => {
  expect(podCapacity(110, 10, 2)).toBe(20);
  expect(podCapacity(110, 100, 2)).toBe(110);
  expect(podCapacity(110, 0, 2)).toBe(110);
});
