import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createTtlCache } from "./ttl-cache.ts";

test("an entry is returned until its TTL passes, then forgotten", async () => {
  const clock = new FakeClock();
  const cache = createTtlCache<string>(clock);
  cache.set("a", "x", 1000);
  await clock.advance(999);
  expect(cache.get("a")).toBe("x");
  await clock.advance(1);
  expect(cache.get("a")).toBeUndefined();
});

test("a TTL of zero caches nothing, and a full cache drops its oldest entry", () => {
  const clock = new FakeClock();
  const cache = createTtlCache<number>(clock, 2);
  cache.set("zero", 0, 0);
  expect(cache.get("zero")).toBeUndefined();
  cache.set("a", 1, 1000);
  cache.set("b", 2, 1000);
  cache.set("c", 3, 1000);
  expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([undefined, 2, 3]);
});
