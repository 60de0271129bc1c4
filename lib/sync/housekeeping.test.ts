// Housekeeping: orphans stopped and leftovers removed once every source has reported; the figures set.
import { describe, expect, test } from "bun:test";
import type { ContainerDetails, PodSandboxDetails } from "../container/runtime.ts";
import type { WorkingPods } from "../metrics.ts";
import { createHousekeeping, runningFigures, workingPods, type HousekeepingPods } from "./housekeeping.ts";
import type { Observed } from "./pod-plan.ts";

/** A listed pod: a sandbox in `sandbox` state and containers running, created or exited. */
const listed = (sandbox: PodSandboxDetails["state"], ...states: Array<"running" | "created" | "exited">): Observed => ({
  sandboxes: [{ state: sandbox } as PodSandboxDetails],
  containers: states.map(
    (s) =>
      ({
        running: s === "running",
        state: s === "created" ? "CONTAINER_CREATED" : "CONTAINER_EXITED",
      }) as ContainerDetails,
  ),
});

/** Housekeeping with recording deps; the node lists `observed`, has pod directories `dirs`, a source wants `wanted`. */
function harness(dirs: string[]) {
  const calls: string[] = [];
  let running: [number, Record<string, number>] | undefined;
  let working: WorkingPods[] | undefined;
  const housekeeping = createHousekeeping({
    volumes: { podDirs: async () => dirs, teardown: async (uid) => void calls.push(`teardown ${uid}`) },
    cgroups: { removeOrphans: async (active) => (calls.push(`cgroups keep ${[...active].sort()}`), []) },
    allocations: { removeOrphans: (isWanted) => void calls.push(`allocations keep ${["a", "b"].filter(isWanted)}`) },
    metrics: {
      setRunning: (pods, containers) => (running = [pods, containers]),
      setWorkingPods: (counts) => (working = counts),
    },
  });
  const pods = (wanted: string[], sourcesReady: boolean): HousekeepingPods => ({
    sourcesReady,
    isWanted: (uid) => wanted.includes(uid),
    wanted: () => wanted,
    stop: (uid) => void calls.push(`stop ${uid}`),
    workers: () => [{ state: "syncing", wanted: true, known: true }],
  });
  return { housekeeping, pods, calls, running: () => running, working: () => working };
}

describe("housekeeping", () => {
  test("before every source has reported nothing is cleaned up, and the figures are set", async () => {
    const h = harness(["a", "gone"]);
    await h.housekeeping.cleanUp(new Map([["b", listed("ready", "running")]]), h.pods(["a"], false));
    expect(h.calls).toEqual([]);
    expect(h.running()).toEqual([1, { running: 1 }]);
    expect(h.working()).toEqual([{ lifecycle: "sync", config: "desired", static: true, count: 1 }]);
  });

  test("once every source has reported, orphans are stopped and what is left of pods no source wants goes", async () => {
    const h = harness(["a", "b", "gone"]);
    await h.housekeeping.cleanUp(new Map([["b", listed("ready", "running")]]), h.pods(["a"], true));
    expect(h.calls).toEqual(["allocations keep a", "stop b", "teardown gone", "cgroups keep a,b"]);
  });

  test("a pod's pass changes the running figures of the last listing for that pod alone", async () => {
    const h = harness([]);
    await h.housekeeping.cleanUp(new Map([["a", listed("ready", "running")]]), h.pods(["a", "b"], false));
    h.housekeeping.podObserved("b", listed("ready", "running", "exited"));
    expect(h.running()).toEqual([2, { running: 2, exited: 1 }]);
    h.housekeeping.podObserved("a", { sandboxes: [], containers: [] });
    expect(h.running()).toEqual([1, { running: 1, exited: 1 }]);
  });

  test("the running figures count pods with a ready sandbox and containers by state", () => {
    const observed = new Map([
      ["a", listed("ready", "running", "exited")],
      ["b", listed("notready", "created", "exited")],
    ]);
    expect(runningFigures(observed)).toEqual({ runningPods: 1, containers: { running: 1, exited: 2, created: 1 } });
  });

  test("kubelet_working_pods counts workers by state, by whether a source wants them and whether their spec is known", () => {
    expect(
      workingPods([
        { state: "syncing", wanted: true, known: true },
        { state: "terminating", wanted: false, known: true },
        { state: "terminating", wanted: false, known: true },
        { state: "terminated", wanted: false, known: false },
      ]),
    ).toEqual([
      { lifecycle: "sync", config: "desired", static: true, count: 1 },
      { lifecycle: "terminating", config: "orphan", static: true, count: 2 },
      { lifecycle: "terminated", config: "runtime_only", static: false, count: 1 },
    ]);
  });
});
