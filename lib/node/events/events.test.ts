// The event recorder: repeats folded into one event with a count, and a bounded ring (the kubelet keeps
// events of pods long gone, up to its capacity, and never more).
import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import type { Logger } from "../../log.ts";
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

function recordingLog() {
  const lines: string[] = [];
  const log: Logger = {
    debug: (m) => lines.push(`debug ${m}`),
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => log,
  };
  return { lines, log };
}

test("each lifecycle step is a line at the default level naming the pod; a Killing line says its grace period", () => {
  const { lines, log } = recordingLog();
  const events = createEventRecorder({ log });
  events.record(pod("web"), "Normal", "Pulling", 'Pulling image "busybox:1.35"');
  events.record(pod("web"), "Normal", "Started", "Started container app", "spec.containers{app}");
  events.record(pod("web"), "Normal", "Killing", "Stopping container app", "spec.containers{app}", "grace period 30s");
  events.record(pod("web"), "Warning", "BackOff", "Back-off restarting failed container app");
  expect(lines).toEqual([
    'info default/web: Pulling image "busybox:1.35"',
    "info default/web: Started container app",
    "info default/web: Stopping container app (grace period 30s)",
    "warn default/web: Back-off restarting failed container app",
  ]);
});

test("repeats are logged as they fold: the 2nd, 4th, 8th… with their count", () => {
  const { lines, log } = recordingLog();
  const events = createEventRecorder({ log });
  for (let i = 0; i < 9; i++)
    events.record(pod("web"), "Warning", "BackOff", "Back-off restarting failed container app");
  expect(lines).toEqual([
    "warn default/web: Back-off restarting failed container app",
    "warn default/web: Back-off restarting failed container app (2 times)",
    "warn default/web: Back-off restarting failed container app (4 times)",
    "warn default/web: Back-off restarting failed container app (8 times)",
  ]);
});

test("MissingClusterDNS is an event for every pod and one line for the node", () => {
  const { lines, log } = recordingLog();
  const events = createEventRecorder({ log });
  for (const name of ["web", "worker"])
    events.record(
      pod(name),
      "Warning",
      "MissingClusterDNS",
      `pod: "${name}_default(uid-${name})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
    );
  expect(events.list().map((e) => e.involvedObject.name)).toEqual(["web", "worker"]);
  expect(lines).toEqual([
    'warn MissingClusterDNS: kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy. (said once for all pods; each pod\'s event is in /events)',
  ]);
});

test("Normal events go to debug where the caller shows its own progress (runonce)", () => {
  const { lines, log } = recordingLog();
  createEventRecorder({ log, normalLevel: "debug" }).record(pod("web"), "Normal", "Pulled", "Pulled");
  expect(lines).toEqual(["debug default/web: Pulled"]);
});
