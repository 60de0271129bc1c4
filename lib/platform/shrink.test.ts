import { describe, expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import {
  BURST_CHECK_MS,
  BURST_GROWTH_BYTES,
  MAX_SHRINK_INTERVAL_MS,
  MIN_SHRINK_INTERVAL_MS,
  SHRINK_AFTER_START_MS,
  shrinkAfterStart,
} from "./shrink.ts";

const MB = 2 ** 20;

/** A process whose RSS the test sets; each shrink gives back `giveBack(rss)` bytes and is recorded with its time. */
function fakeProcess(clock: FakeClock, giveBack = (_rss: number) => 8 * MB) {
  const state = { rss: 120 * MB, shrinks: [] as number[], lines: [] as string[] };
  const deps = {
    clock,
    shrink: () => {
      state.shrinks.push(clock.now());
      state.rss -= giveBack(state.rss);
    },
    log: { info: (line: string) => void state.lines.push(line) },
    rss: () => state.rss,
  };
  return { state, deps };
}

describe("shrinkAfterStart", () => {
  test("shrinks once SHRINK_AFTER_START_MS after start, and not again while the RSS stays level", async () => {
    const clock = new FakeClock();
    const { state, deps } = fakeProcess(clock);
    shrinkAfterStart(new AbortController().signal, deps);
    await clock.advance(SHRINK_AFTER_START_MS - 1);
    expect(state.shrinks).toHaveLength(0);
    await clock.advance(1);
    expect(state.shrinks).toHaveLength(1);
    expect(state.lines).toEqual(["gave back the start-up's memory: RSS 120.0 MB -> 112.0 MB in 0 ms"]);
    // The steady state grows back by what it compiles again, below a burst's growth.
    state.rss += BURST_GROWTH_BYTES - MB;
    await clock.advance(100 * MIN_SHRINK_INTERVAL_MS);
    expect(state.shrinks).toHaveLength(1);
  });

  test("a kubelet stopped before then does not shrink", async () => {
    const clock = new FakeClock();
    const stop = new AbortController();
    let shrinks = 0;
    shrinkAfterStart(stop.signal, { clock, shrink: () => shrinks++ });
    await clock.advance(SHRINK_AFTER_START_MS / 2);
    stop.abort();
    await clock.advance(SHRINK_AFTER_START_MS);
    expect(shrinks).toBe(0);
  });

  test("a stopped kubelet stops reading its RSS: no timer is left", async () => {
    const clock = new FakeClock();
    const stop = new AbortController();
    const { deps } = fakeProcess(clock);
    shrinkAfterStart(stop.signal, deps);
    await clock.advance(SHRINK_AFTER_START_MS + 3 * BURST_CHECK_MS);
    expect(clock.pendingTimers).toBe(1);
    stop.abort();
    expect(clock.pendingTimers).toBe(0);
  });

  test("a burst that leaves the RSS BURST_GROWTH_BYTES up is given back once the RSS stops rising", async () => {
    const clock = new FakeClock();
    const { state, deps } = fakeProcess(clock);
    shrinkAfterStart(new AbortController().signal, deps);
    await clock.advance(SHRINK_AFTER_START_MS + MIN_SHRINK_INTERVAL_MS);
    // Pods being created: the RSS rises check after check, 12 MB in all; no shrink in the middle of it.
    for (let i = 0; i < 4; i++) {
      state.rss += 3 * MB;
      await clock.advance(BURST_CHECK_MS);
    }
    expect(state.shrinks).toHaveLength(1);
    // The next check reads it level: the burst is over.
    await clock.advance(BURST_CHECK_MS);
    expect(state.shrinks).toHaveLength(2);
    expect(state.lines[1]).toBe(
      "gave back a burst's memory: RSS 124.0 MB -> 116.0 MB in 0 ms (12.0 MB above its level since the last shrink)",
    );
    await clock.advance(100 * MIN_SHRINK_INTERVAL_MS);
    expect(state.shrinks).toHaveLength(2);
  });

  test("a burst right after a shrink waits MIN_SHRINK_INTERVAL_MS from it", async () => {
    const clock = new FakeClock();
    const { state, deps } = fakeProcess(clock);
    shrinkAfterStart(new AbortController().signal, deps);
    await clock.advance(SHRINK_AFTER_START_MS);
    state.rss += 12 * MB;
    await clock.advance(2 * BURST_CHECK_MS);
    expect(state.shrinks).toHaveLength(1);
    await clock.advance(MIN_SHRINK_INTERVAL_MS - 2 * BURST_CHECK_MS);
    const first = clock.now() - MIN_SHRINK_INTERVAL_MS;
    expect(state.shrinks).toEqual([first, first + MIN_SHRINK_INTERVAL_MS]);
  });

  test("the level after a shrink is the new base: what more pods hold is not shrunk for less than BURST_GROWTH_BYTES more", async () => {
    const clock = new FakeClock();
    // Of a 12 MB burst, a shrink gives back 6: the other 6 are the new pods' state.
    const { state, deps } = fakeProcess(clock, () => 6 * MB);
    shrinkAfterStart(new AbortController().signal, deps);
    await clock.advance(SHRINK_AFTER_START_MS + MIN_SHRINK_INTERVAL_MS);
    state.rss += 12 * MB;
    await clock.advance(3 * BURST_CHECK_MS);
    expect(state.shrinks).toHaveLength(2);
    state.rss += BURST_GROWTH_BYTES - 2 * MB;
    await clock.advance(100 * MIN_SHRINK_INTERVAL_MS);
    expect(state.shrinks).toHaveLength(2);
  });

  test("growth a shrink cannot give back (more pods held for good) doubles the wait before the next one", async () => {
    const clock = new FakeClock();
    // Gives back 1 MB of any growth: the rest is live state.
    const { state, deps } = fakeProcess(clock, () => MB);
    shrinkAfterStart(new AbortController().signal, deps);
    await clock.advance(SHRINK_AFTER_START_MS);
    const gaps: number[] = [];
    for (let i = 0; i < 6; i++) {
      state.rss += 12 * MB;
      const before = state.shrinks.length;
      while (state.shrinks.length === before) await clock.advance(BURST_CHECK_MS);
      gaps.push(state.shrinks.at(-1)! - state.shrinks.at(-2)!);
    }
    const waits = [1, 2, 4, 8, 16, 16].map((n) => Math.min(n * MIN_SHRINK_INTERVAL_MS, MAX_SHRINK_INTERVAL_MS));
    for (const [i, gap] of gaps.entries()) {
      expect(gap).toBeGreaterThanOrEqual(waits[i]);
      expect(gap).toBeLessThan(waits[i] + BURST_CHECK_MS);
    }
  });

  test("on Bun the default shrink runs: Bun.shrink and a full GC, without throwing, and reads the real RSS", async () => {
    const clock = new FakeClock();
    const lines: string[] = [];
    shrinkAfterStart(new AbortController().signal, { clock, log: { info: (line) => void lines.push(line) } });
    await expect(clock.advance(SHRINK_AFTER_START_MS + BURST_CHECK_MS)).resolves.toBeUndefined();
    expect(lines[0]).toMatch(/^gave back the start-up's memory: RSS [1-9][\d.]* MB -> [1-9][\d.]* MB in \d+ ms$/);
  });
});
