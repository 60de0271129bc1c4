import { expect, test } from "bun:test";
import type { Pod } from "../../api/types.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testPod } from "../../testing/pods.ts";
import { podRow, podTable, type IncludeObject } from "./table.ts";
import { createPodRows } from "./table-rows.ts";

const START = Date.UTC(2026, 0, 1, 12);
const at = (ms: number) => new Date(ms).toISOString();

/** Pod `i` of a mixed fleet: every printPod branch that bears on the row's text, some restarts, some ages. */
function fleetPod(i: number): Pod {
  const kind = i % 9;
  const base = testPod(`web-${i}${i % 13 === 0 ? '-"quoted"-é' : ""}`, {
    nodeName: `node-${i % 7}`,
    ...(kind === 1 ? { initContainers: [{ name: "init", image: "busybox" }] } : {}),
    ...(kind === 2 ? { initContainers: [{ name: "side", image: "busybox", restartPolicy: "Always" }] } : {}),
    ...(kind === 3 ? { readinessGates: [{ conditionType: "example.com/ready" }] } : {}),
  });
  const restarted = (count: number, secondsBefore: number) => ({
    restartCount: count,
    lastState: { terminated: { exitCode: 1, finishedAt: at(START - secondsBefore * 1000) } },
  });
  const app = {
    name: "app",
    image: "",
    imageID: "",
    ready: kind !== 4,
    restartCount: 0,
    state: kind === 4 ? { waiting: { reason: "CrashLoopBackOff" } } : { running: { startedAt: at(START) } },
    ...(i % 3 === 0 ? restarted(i % 5, (i * 37) % 90_000) : {}),
  };
  const status: Pod["status"] = {
    phase: kind === 5 ? "Succeeded" : kind === 6 ? "Failed" : "Running",
    podIP: `10.0.${i >> 8}.${i & 255}`,
    ...(kind === 7 ? {} : { startTime: at(START - i * 1000) }),
    conditions: [{ type: "Ready", status: kind === 3 ? "False" : "True" }],
    containerStatuses: [app],
    ...(kind === 1
      ? { initContainerStatuses: [{ name: "init", image: "", imageID: "", ready: false, restartCount: 0, state: {} }] }
      : {}),
    ...(kind === 2
      ? {
          initContainerStatuses: [
            { name: "side", image: "", imageID: "", ready: true, started: true, ...restarted(2, 400), state: {} },
          ],
        }
      : {}),
  };
  // Ages from seconds to years; kind 7 has no time at all (<unknown>), and some are created in the future.
  const created = i % 4 === 0 ? undefined : at(i % 11 === 0 ? START + 5000 : START - ((i * 7919) % 40_000_000) * 1000);
  return {
    ...base,
    metadata: {
      ...base.metadata,
      namespace: `ns-${i % 3}`,
      resourceVersion: String(i),
      ...(kind === 7 || !created ? {} : { creationTimestamp: created }),
      ...(kind === 8 ? { deletionTimestamp: at(START) } : {}),
      labels: { app: "web", shard: String(i % 4) },
    },
    status,
  } as Pod;
}

const INCLUDES: IncludeObject[] = ["Metadata", "Object", "None"];

test("the Table from kept rows is byte-identical to podTable's JSON for a mixed fleet as the clock moves", async () => {
  const pods = Array.from({ length: 600 }, (_, i) => fleetPod(i));
  const clock = new FakeClock(START);
  const rows = createPodRows();
  // Steps that cross HumanDuration's thresholds (seconds, minutes, hours, days, years) over rows already kept.
  for (const step of [
    0,
    1000,
    59_000,
    61_000,
    9 * 60_000,
    3 * 3600_000,
    26 * 3600_000,
    9 * 86_400_000,
    800 * 86_400_000,
  ]) {
    await clock.advance(step);
    const now = clock.now();
    for (const include of INCLUDES) {
      const metadata = { resourceVersion: "42", continue: "token", remainingItemCount: 3 };
      const expected = JSON.stringify({ ...podTable(pods, { now, include, resourceVersion: "42" }), metadata });
      expect(rows.table(pods, { now, include, metadata })).toBe(expected);
    }
  }
});

test("one pod's kept row is the JSON of podRow, for every includeObject", () => {
  const rows = createPodRows();
  for (let i = 0; i < 60; i++)
    for (const include of INCLUDES)
      expect(rows.row(fleetPod(i), START + 7_000, include)).toBe(
        JSON.stringify(podRow(fleetPod(i), START + 7_000, include)),
      );
});

test("a pod's row is rendered once and reused; the changed pod (a new object, as the pod cache makes) gets its own", () => {
  const rows = createPodRows();
  const pod = fleetPod(1);
  const first = rows.row(pod, START, "Metadata");
  // Edited in place, which the pod cache never does: the kept row is what is served, so it was not rendered again.
  pod.metadata.labels = { changed: "yes" };
  expect(rows.row(pod, START, "Metadata")).toBe(first);
  const changed = { ...pod, metadata: { ...pod.metadata } };
  expect(rows.row(changed, START, "Metadata")).toContain('"changed":"yes"');
});

test("warm renders the rows it is given for that includeObject only, so a later table joins what warm rendered", () => {
  const rows = createPodRows();
  const pods = [fleetPod(1), fleetPod(2)];
  rows.warm(pods, "Metadata");
  // Edited in place after warm (the pod cache never does): the rows served are those rendered by warm.
  for (const pod of pods) pod.metadata.labels = { edited: "after-warm" };
  const options = { now: START, metadata: {} };
  expect(rows.table(pods, { ...options, include: "Metadata" })).not.toContain("after-warm");
  expect(rows.table(pods, { ...options, include: "Object" })).toContain("after-warm");
});

test("an empty Table keeps its columns and has no rows", () => {
  const rows = createPodRows();
  const table = JSON.parse(rows.table([], { now: START, include: "None", metadata: { resourceVersion: "1" } }));
  expect(table.rows).toEqual([]);
  expect(table.columnDefinitions.length).toBe(9);
});
