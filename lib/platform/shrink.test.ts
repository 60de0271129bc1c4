import { describe, expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { SHRINK_AFTER_START_MS, shrinkAfterStart } from "./shrink.ts";

describe("shrinkAfterStart", () => {
  test("shrinks once, SHRINK_AFTER_START_MS after start, and never again", async () => {
    const clock = new FakeClock();
    let shrinks = 0;
    let rss = 120 * 2 ** 20;
    const lines: string[] = [];
    const log = { info: (line: string) => void lines.push(line) };
    const shrink = () => {
      shrinks++;
      rss -= 8 * 2 ** 20;
    };
    shrinkAfterStart(new AbortController().signal, { clock, shrink, log, rss: () => rss });
    await clock.advance(SHRINK_AFTER_START_MS - 1);
    expect(shrinks).toBe(0);
    await clock.advance(1);
    expect(shrinks).toBe(1);
    expect(lines).toEqual(["gave back the start-up's memory: RSS 120.0 MB -> 112.0 MB"]);
    await clock.advance(10 * SHRINK_AFTER_START_MS);
    expect(shrinks).toBe(1);
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

  test("on Bun the default shrink runs: Bun.shrink and a full GC, without throwing", async () => {
    const clock = new FakeClock();
    shrinkAfterStart(new AbortController().signal, { clock });
    await expect(clock.advance(SHRINK_AFTER_START_MS)).resolves.toBeUndefined();
  });
});
