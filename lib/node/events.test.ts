// The event recorder: repeats folded into one event with a count, and a bounded ring (the kubelet keeps
// events of pods long gone, up to its capacity, and never more).
import { expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { createEventRecorder } from "./events.ts";

const pod = (name: string) => ({ metadata: { namespace: "default", name, uid: `uid-${name}` } });

test("a repeat of the same object, reason and message is one event with a count and the latest timestamp", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const events = createEventRecorder({ clock });
  events.record(pod("web"), "Warning", "BackOff", "Back-off restarting failed container app", "spec.containers{app}");
  await clock.advance(10_000);
  events.record(pod("web"), "Warning", "BackOff", "Back-off restarting failed container app", "spec.containers{app}");
  const [event, ...rest] = events.list();
  expect(rest).toEqual([]);
  expect(event).toMatchObject({
    count: 2,
    firstTimestamp: "2026-01-01T00:00:00.000Z",
    lastTimestamp: "2026-01-01T00:00:10.000Z",
    involvedObject: { kind: "Pod", name: "web", fieldPath: "spec.containers{app}" },
  });
});

test("holds at most its capacity: churn beyond it drops the least recently seen events, so memory stops growing there", () => {
  const events = createEventRecorder({ capacity: 3 });
  for (let i = 0; i < 1000; i++) events.record(pod(`churn-${i}`), "Normal", "Started", "Started container app");
  expect(events.list().map((e) => e.involvedObject.name)).toEqual(["churn-997", "churn-998", "churn-999"]);
  events.record(pod("late"), "Normal", "Started", "Started container app");
  expect(events.list()).toHaveLength(3);
});

test("the last-seen order decides which event goes first at the cap", () => {
  const events = createEventRecorder({ capacity: 2 });
  events.record(pod("a"), "Normal", "Started", "Started container app");
  events.record(pod("b"), "Normal", "Started", "Started container app");
  events.record(pod("a"), "Normal", "Started", "Started container app");
  events.record(pod("c"), "Normal", "Started", "Started container app");
  expect(events.list().map((e) => e.involvedObject.name)).toEqual(["a", "c"]);
});
