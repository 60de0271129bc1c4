// The allocation manager: admission, resizes allocated, Deferred or Infeasible, and the allocations' checkpoint.
import { describe, expect, test } from "bun:test";
import type { Pod } from "../api/types.ts";
import { createEventRecorder } from "../node/events/events.ts";
import type { Allocation } from "../node/state/allocation-file.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { testPod } from "../testing/pods.ts";
import type { AdmissionPolicy } from "./admission.ts";
import { createAllocationManager } from "./allocation-manager.ts";
import { createStatusManager } from "./status-manager.ts";

const policy: AdmissionPolicy = {
  maxPods: 2,
  hostNetworkSources: ["*"],
  hostPidSources: ["*"],
  hostIpcSources: ["*"],
  allocatable: { milliCpu: 1000, memoryBytes: 2 ** 33 },
};

/** A pod whose one container "app" is limited (so requests) `cpu`, created on `day` of January. */
const sized = (name: string, cpu: string, day = 1): Pod => {
  const pod = testPod(name, {
    containers: [{ name: "app", image: "local/busybox:stable", resources: { limits: { cpu } } }],
  });
  return { ...pod, metadata: { ...pod.metadata, uid: name, creationTimestamp: `2026-01-0${day}T00:00:00Z` } };
};
const cpuOf = (pod: Pod | undefined) => pod?.spec.containers[0]!.resources?.limits?.cpu;

/** The manager with the pods a source wants kept as the sync loop keeps them; `synced` are the passes it asked for. */
function harness(admission: AdmissionPolicy | null = policy, saved?: { state: Record<string, Allocation> }) {
  const clock = new FakeClock();
  const events = createEventRecorder({ clock });
  const statuses = createStatusManager();
  const wanted = new Map<string, Pod>();
  const synced: string[] = [];
  const checkpoint = saved && {
    load: () => saved.state,
    save: (state: Record<string, Allocation>) => (saved.state = structuredClone(state)),
  };
  const allocations = createAllocationManager(
    { ...(admission ? { admission } : {}), hostIP: "10.0.0.1" },
    {
      events,
      statuses,
      pods: () => [...wanted.values()],
      sync: (uid) => synced.push(uid),
      ...(checkpoint ? { checkpoint } : {}),
    },
  );
  /** A source wants `pod` (new, or changed while `held`). */
  const want = (pod: Pod) => {
    const held = wanted.has(pod.metadata.uid) && !allocations.rejection(pod.metadata.uid);
    wanted.set(pod.metadata.uid, pod);
    allocations.admit(pod, held);
  };
  const unwant = (uid: string) => {
    wanted.delete(uid);
    allocations.release(uid);
  };
  return { events, statuses, allocations, synced, want, unwant };
}

describe("allocation manager", () => {
  test("without an admission policy every pod is admitted with the resources it asks", () => {
    const h = harness(null);
    for (const name of ["a", "b", "c"]) h.want(sized(name, "900m"));
    expect(["a", "b", "c"].map((uid) => [cpuOf(h.allocations.allocated(uid)), h.allocations.rejection(uid)])).toEqual([
      ["900m", undefined],
      ["900m", undefined],
      ["900m", undefined],
    ]);
  });

  test("a pod beyond maxPods is rejected, reported Failed, with one Warning event however often it is decided", () => {
    const h = harness();
    h.want(sized("a", "100m"));
    h.want(sized("b", "100m"));
    h.want(sized("c", "100m"));
    h.allocations.admit(sized("c", "100m"));
    expect(h.allocations.rejection("c")?.reason).toBe("OutOfpods");
    expect(h.allocations.allocated("c")).toBeUndefined();
    expect(h.statuses.get("c")).toMatchObject({ phase: "Failed", reason: "OutOfpods", hostIP: "10.0.0.1" });
    expect(h.events.list().filter((e) => e.reason === "OutOfpods")).toMatchObject([{ type: "Warning", count: 1 }]);
  });

  test("a rejected pod no source wants any more is no longer rejected", () => {
    const h = harness();
    for (const name of ["a", "b", "c"]) h.want(sized(name, "100m"));
    h.unwant("c");
    expect(h.allocations.rejection("c")).toBeUndefined();
  });

  test("pods refused for room are admitted, oldest first, when an admitted pod leaves, and synced", () => {
    const h = harness();
    for (const [name, day] of [
      ["a", 1],
      ["b", 2],
      ["d", 4],
      ["c", 3],
    ] as const)
      h.want(sized(name, "100m", day));
    h.unwant("a");
    h.allocations.readmit();
    expect(h.synced).toEqual(["c"]);
    expect([h.allocations.rejection("c"), h.allocations.rejection("d")?.reason]).toEqual([undefined, "OutOfpods"]);
    expect(h.statuses.get("c")).toBeUndefined();
  });

  test("a released pod keeps its allocation, for its termination, until it is removed", () => {
    const h = harness();
    h.want(sized("a", "100m"));
    h.unwant("a");
    expect(cpuOf(h.allocations.allocated("a"))).toBe("100m");
    h.allocations.remove("a");
    expect(h.allocations.allocated("a")).toBeUndefined();
  });

  test("a resize that fits the node but not beside the other pods is Deferred, then allocated once room is freed", () => {
    const h = harness({ ...policy, maxPods: 10 });
    h.want(sized("big", "600m"));
    h.want(sized("web", "300m"));
    h.want(sized("web", "500m"));
    expect(h.allocations.pending("web")).toEqual({
      type: "PodResizePending",
      reason: "Deferred",
      message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    });
    expect(cpuOf(h.allocations.allocated("web"))).toBe("300m");
    expect(h.events.list().map((e) => e.reason)).toEqual(["ResizeDeferred"]);
    const version = h.statuses.version();
    h.allocations.retryPendingResizes();
    expect([h.synced, h.statuses.version()]).toEqual([[], version]);
    h.unwant("big");
    h.allocations.retryPendingResizes();
    expect(h.allocations.pending("web")).toBeUndefined();
    expect(cpuOf(h.allocations.allocated("web"))).toBe("500m");
    expect(h.synced).toEqual(["web"]);
    expect(h.statuses.version()).toBe(version + 1);
    expect(h.events.list().map((e) => e.reason)).toEqual(["ResizeDeferred", "ResizeStarted"]);
  });

  test("a resize beyond the node's allocatable is Infeasible and the pod keeps what it was allocated", () => {
    const h = harness();
    h.want(sized("web", "300m"));
    h.want(sized("web", "1500m"));
    expect(h.allocations.pending("web")).toMatchObject({
      reason: "Infeasible",
      message: "Node didn't have enough capacity: cpu, requested: 1500, capacity: 1000",
    });
    expect([cpuOf(h.allocations.allocated("web")), h.allocations.rejection("web")]).toEqual(["300m", undefined]);
  });

  test("allocations are checkpointed, and after a restart a pod is admitted with what it was allocated", () => {
    const saved = { state: {} as Record<string, Allocation> };
    const first = harness({ ...policy, maxPods: 10 }, saved);
    first.want(sized("big", "600m"));
    first.want(sized("web", "300m"));
    first.want(sized("web", "500m"));
    expect(saved.state).toEqual({
      big: { app: { limits: { cpu: "600m" } } },
      web: { app: { limits: { cpu: "300m" } } },
    });
    const second = harness({ ...policy, maxPods: 10 }, saved);
    second.want(sized("big", "600m"));
    second.want(sized("web", "500m"));
    expect([cpuOf(second.allocations.allocated("web")), second.allocations.pending("web")?.reason]).toEqual([
      "300m",
      "Deferred",
    ]);
  });

  test("checkpointed allocations of pods no source wants go with removeOrphans; a removed pod's go at once", () => {
    const saved = {
      state: { gone: { app: {} }, web: { app: { limits: { cpu: "300m" } } } } as Record<string, Allocation>,
    };
    const h = harness(policy, saved);
    h.want(sized("a", "100m"));
    h.allocations.removeOrphans((uid) => uid === "a" || uid === "web");
    expect(Object.keys(saved.state).sort()).toEqual(["a", "web"]);
    h.allocations.remove("a");
    expect(Object.keys(saved.state)).toEqual(["web"]);
  });
});
