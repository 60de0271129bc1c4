import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createPlegHealth, EVENT_CAPACITY } from "./health.ts";

test("the PLEG is unhealthy until its first relist succeeds, in upstream's words", async () => {
  const health = createPlegHealth({ clock: new FakeClock() });
  expect(health.check()).toEqual({ name: "pleg", ok: false, message: "pleg has yet to be successful" });
  health.relisted();
  expect(health.check()).toEqual({ name: "pleg", ok: true, message: "ok" });
});

test("a relist older than 3 minutes makes the generic PLEG unhealthy, saying how long ago and the threshold", async () => {
  const clock = new FakeClock();
  const health = createPlegHealth({ clock });
  health.relisted();
  await clock.advance(180_000);
  expect(health.check().ok).toBe(true);
  await clock.advance(5_500);
  expect(health.check()).toEqual({
    name: "pleg",
    ok: false,
    message: "pleg was last seen active 3m5.5s ago; threshold is 3m0s",
  });
  health.relisted();
  expect(health.check().ok).toBe(true);
});

test("while the event stream carries the events the threshold is 10 minutes, and 3 again once it breaks", async () => {
  const clock = new FakeClock();
  const health = createPlegHealth({ clock });
  health.relisted();
  health.streaming(true);
  await clock.advance(599_000);
  expect(health.check().ok).toBe(true);
  await clock.advance(2_000);
  expect(health.check().message).toBe("pleg was last seen active 10m1s ago; threshold is 10m0s");
  health.streaming(false);
  health.relisted();
  await clock.advance(181_000);
  expect(health.check().message).toBe("pleg was last seen active 3m1s ago; threshold is 3m0s");
});

test("an Evented PLEG with a full channel of events is unhealthy, whatever its relists", async () => {
  const health = createPlegHealth({ clock: new FakeClock() });
  health.relisted();
  health.queued(EVENT_CAPACITY);
  expect(health.check()).toEqual({
    name: "pleg",
    ok: false,
    message: `EventedPLEG: pleg event channel capacity is full with ${EVENT_CAPACITY} events`,
  });
  health.queued(EVENT_CAPACITY - 1);
  expect(health.check().ok).toBe(true);
});

test("last seen active, as upstream's Healthy() sets kubelet_pleg_last_seen_seconds: the last relist, or now while the stream carries the events and its channel has room", async () => {
  const clock = new FakeClock();
  const health = createPlegHealth({ clock });
  expect(health.lastSeen()).toBeUndefined();
  await clock.advance(5_000);
  const relistAt = clock.now();
  health.relisted();
  await clock.advance(2_000);
  expect(health.lastSeen()).toBe(relistAt);
  health.streaming(true);
  await clock.advance(200_000);
  expect(health.lastSeen()).toBe(clock.now());
  const fullAt = clock.now();
  health.queued(EVENT_CAPACITY);
  await clock.advance(1_000);
  expect(health.lastSeen()).toBe(fullAt);
  health.streaming(false);
  expect(health.lastSeen()).toBe(relistAt);
});
