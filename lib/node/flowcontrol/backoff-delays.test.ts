// Keyed exponential back-off on a fake clock: free first retry, doubling, a ceiling, resets.
import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { Backoff, crashLoopPeriods } from "./backoff.ts";

test("each failure doubles the delay from the initial one up to the ceiling, per key", () => {
  const backoff = new Backoff(10_000, 40_000, new FakeClock());
  expect([1, 2, 3, 4].map(() => backoff.next("a"))).toEqual([10_000, 20_000, 40_000, 40_000]);
  expect(backoff.next("b")).toBe(10_000);
});

test("remaining counts down on the clock from the last failure; a key never seen is free", async () => {
  const clock = new FakeClock();
  const backoff = new Backoff(10_000, 300_000, clock);
  expect(backoff.remaining("a")).toBe(0);
  expect(backoff.get("a")).toBeUndefined();
  backoff.next("a");
  await clock.advance(4000);
  expect(backoff.remaining("a")).toBe(6000);
  expect(backoff.get("a")).toEqual({ delayMs: 10_000, at: clock.now() - 4000 });
  await clock.advance(7000);
  expect(backoff.remaining("a")).toBe(0);
});

test("reset forgets one key; resetWhere forgets the keys that match", () => {
  const backoff = new Backoff(10_000, 300_000, new FakeClock());
  for (const key of ["pod1/a", "pod1/b", "pod2/a"]) backoff.next(key);
  backoff.reset("pod1/a");
  expect(backoff.get("pod1/a")).toBeUndefined();
  backoff.resetWhere((key) => key.startsWith("pod1/"));
  expect(["pod1/a", "pod1/b", "pod2/a"].map((key) => backoff.get(key)?.delayMs)).toEqual([
    undefined,
    undefined,
    10_000,
  ]);
});

test("maxContainerRestartPeriod caps the crash-loop delays; a cap below 10 s is the first delay as well", () => {
  expect(crashLoopPeriods()).toEqual({ initialMs: 10_000, maxMs: 300_000 });
  const { initialMs, maxMs } = crashLoopPeriods(25_000);
  const capped = new Backoff(initialMs, maxMs, new FakeClock());
  expect([1, 2, 3, 4].map(() => capped.next("a"))).toEqual([10_000, 20_000, 25_000, 25_000]);
  expect(crashLoopPeriods(2000)).toEqual({ initialMs: 2000, maxMs: 2000 });
});

test("a delay saved under a longer cap waits no longer than the current cap", async () => {
  const clock = new FakeClock();
  const saved = { "pod/app": { delayMs: 300_000, at: clock.now() } };
  const backoff = new Backoff(5000, 5000, clock, { load: () => saved, save: () => {} });
  expect(backoff.remaining("pod/app")).toBe(5000);
});
