import { beforeEach, describe, expect, test } from "bun:test";
import { parseDuration } from "../../api/duration.ts";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testPod } from "../../testing/pods.ts";
import type { Pod, V1Container } from "../../api/types.ts";
import { createEvictionManager, type PodUsage } from "./eviction.ts";
import type { PodStorageUse } from "./local-storage.ts";
import { parseThresholds, type Observations } from "./eviction-thresholds.ts";

const Mi = 2 ** 20;
const Gi = 2 ** 30;

const container = (requests?: Record<string, string>, limits?: Record<string, string>): V1Container => ({
  name: "app",
  image: "local/busybox:stable",
  resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) },
});

describe("eviction manager", () => {
  let clock: FakeClock;
  let observations: Observations;
  let pods: Pod[];
  let usage: Map<string, PodUsage>;
  let evicted: Array<{ name: string; message: string; grace?: number }>;
  let emptyDirs: Map<string, number>;
  let reclaimable: number;
  let storage: Map<string, PodStorageUse>;
  let isolation: boolean;
  const manager = (
    hard: Record<string, string>,
    soft: Record<string, string> = {},
    grace: Record<string, string> = {},
    minimumReclaim: Record<string, string> = {},
    maxPodGracePeriodSeconds = 0,
  ) =>
    createEvictionManager(
      {
        thresholds: parseThresholds({ hard, soft, softGracePeriod: grace, minimumReclaim }, parseDuration),
        pressureTransitionPeriodMs: 300_000,
        maxPodGracePeriodSeconds,
        localStorageCapacityIsolation: isolation,
        clock,
        log: silentLogger,
      },
      {
        observe: async () => observations,
        activePods: () => pods.filter((p) => !evicted.some((e) => e.name === p.metadata.name)),
        podUsage: async () => usage,
        storageUse: () => storage,
        dedicatedImageFs: async () => false,
        emptyDirUsage: async (pod, volume) => emptyDirs.get(`${pod.metadata.name}/${volume}`) ?? 0,
        reclaimImages: async (bytes) => {
          const freed = Math.min(bytes, reclaimable);
          reclaimable -= freed;
          observations["imagefs.available"]!.available += freed;
          return freed;
        },
        evict: async (pod, message, grace) =>
          void evicted.push({ name: pod.metadata.name, message, ...(grace === undefined ? {} : { grace }) }),
      },
    );
  const use = (pod: Pod, bytes: number) =>
    usage.set(pod.metadata.uid, { total: bytes, containers: [{ name: "app", usage: bytes }] });
  const memory = (available: number) => (observations["memory.available"] = { available, capacity: 8 * Gi });

  beforeEach(() => {
    clock = new FakeClock();
    observations = {};
    usage = new Map();
    evicted = [];
    emptyDirs = new Map();
    reclaimable = 0;
    storage = new Map();
    isolation = true;
    const guaranteed = testPod("guaranteed", {
      containers: [container({ memory: "1Gi", cpu: "1" }, { memory: "1Gi", cpu: "1" })],
    });
    const burstable = testPod("burstable", { containers: [container({ memory: "100Mi" })] });
    const bestEffort = testPod("best-effort", { containers: [container()] });
    pods = [guaranteed, burstable, bestEffort];
    use(guaranteed, 900 * Mi);
    use(burstable, 120 * Mi);
    use(bestEffort, 50 * Mi);
  });

  test("under a hard memory threshold it evicts the pod furthest over its request (BestEffort here) first, one pod per pass, with the kubelet's message", async () => {
    const m = manager({ "memory.available": "100Mi" });
    memory(50 * Mi);
    await m.synchronize();
    expect(evicted).toEqual([
      {
        name: "best-effort",
        message:
          "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 50Mi, request is 0, has larger consumption of memory. ",
      },
    ]);
    await m.synchronize();
    expect(evicted.map((e) => e.name)).toEqual(["best-effort", "burstable"]);
  });

  test("sets MemoryPressure at once and keeps it for the transition period after the signal recovers", async () => {
    const m = manager({ "memory.available": "100Mi" });
    memory(1 * Gi);
    await m.synchronize();
    expect(m.conditions().find((c) => c.type === "MemoryPressure")).toMatchObject({
      status: "False",
      reason: "KubeletHasSufficientMemory",
    });
    memory(50 * Mi);
    await m.synchronize();
    expect(m.conditions().find((c) => c.type === "MemoryPressure")).toMatchObject({
      status: "True",
      reason: "KubeletHasInsufficientMemory",
    });
    memory(1 * Gi);
    await clock.advance(299_000);
    await m.synchronize();
    expect(m.conditions().find((c) => c.type === "MemoryPressure")!.status).toBe("True");
    await clock.advance(1000);
    await m.synchronize();
    expect(m.conditions().find((c) => c.type === "MemoryPressure")!.status).toBe("False");
  });

  test("a soft threshold evicts only once it has held for its grace period", async () => {
    const m = manager({}, { "memory.available": "1Gi" }, { "memory.available": "1m30s" });
    memory(500 * Mi);
    await m.synchronize();
    await clock.advance(89_000);
    await m.synchronize();
    expect(evicted).toEqual([]);
    expect(m.conditions().find((c) => c.type === "MemoryPressure")!.status).toBe("True");
    await clock.advance(1000);
    await m.synchronize();
    expect(evicted.map((e) => e.name)).toEqual(["best-effort"]);
  });

  test("a signal that recovers within the grace period restarts the grace period", async () => {
    const m = manager({}, { "memory.available": "1Gi" }, { "memory.available": "1m" });
    memory(500 * Mi);
    await m.synchronize();
    await clock.advance(50_000);
    memory(2 * Gi);
    await m.synchronize();
    memory(500 * Mi);
    await clock.advance(10_000);
    await m.synchronize();
    expect(evicted).toEqual([]);
  });

  test("under disk pressure unused images are reclaimed first, and no pod is evicted when that suffices", async () => {
    const m = manager({ "imagefs.available": "15%" });
    observations["imagefs.available"] = { available: 10 * Gi, capacity: 100 * Gi };
    reclaimable = 5 * Gi;
    await m.synchronize();
    expect(evicted).toEqual([]);
    expect(m.conditions().find((c) => c.type === "DiskPressure")!.status).toBe("True");
    observations["imagefs.available"] = { available: 10 * Gi, capacity: 100 * Gi };
    await m.synchronize(); // nothing left to reclaim: a pod goes
    expect(evicted).toHaveLength(1);
    expect(evicted[0]!.message).toStartWith(
      "The node was low on resource: ephemeral-storage. Threshold quantity: 15Gi, available: 10Gi. ",
    );
  });

  test("under disk pressure pods over their ephemeral-storage requests go first, then lower priority, then more use over request", async () => {
    const disk = (name: string, request: string, used: number, priority = 0) => {
      const pod = testPod(name, { priority, containers: [container({ "ephemeral-storage": request })] });
      usage.set(pod.metadata.uid, { total: used, containers: [{ name: "app", usage: used }] });
      return pod;
    };
    pods = [
      disk("within-big-user", "10Gi", 9 * Gi), // uses most, but within its request
      disk("over-high-priority", "1Gi", 2 * Gi, 1000),
      disk("over-little", "1Gi", 1.5 * Gi),
      disk("over-much", "1Gi", 3 * Gi),
    ];
    const m = manager({ "imagefs.available": "15%" });
    observations["imagefs.available"] = { available: 10 * Gi, capacity: 100 * Gi };
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      await m.synchronize();
      order.push(evicted.at(-1)!.name);
    }
    expect(order).toEqual(["over-much", "over-little", "over-high-priority", "within-big-user"]);
    expect(evicted[0]!.message).toBe(
      "The node was low on resource: ephemeral-storage. Threshold quantity: 15Gi, available: 10Gi. Container app was using 3Gi, request is 1Gi, has larger consumption of ephemeral-storage. ",
    );
  });

  test("with memory and disk both under their thresholds, memory is acted on first, as the Go kubelet orders signals", async () => {
    const m = manager({ "imagefs.available": "15%", "memory.available": "100Mi" });
    observations["imagefs.available"] = { available: 10 * Gi, capacity: 100 * Gi };
    memory(50 * Mi);
    await m.synchronize();
    expect(evicted).toHaveLength(1);
    expect(evicted[0]!.message).toStartWith("The node was low on resource: memory. ");
  });

  test("a disk emptyDir over its sizeLimit evicts its pod, whatever the thresholds", async () => {
    const limited = testPod("limited", {
      containers: [container()],
      volumes: [
        { name: "scratch", emptyDir: { sizeLimit: "10Mi" } },
        { name: "ram", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
      ],
    });
    pods.push(limited);
    const m = manager({});
    emptyDirs.set("limited/ram", 5 * Mi); // tmpfs enforces its own size
    emptyDirs.set("limited/scratch", 10 * Mi);
    await m.synchronize();
    expect(evicted).toEqual([]);
    emptyDirs.set("limited/scratch", 10 * Mi + 1);
    await m.synchronize();
    expect(evicted).toEqual([
      { name: "limited", message: 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ', grace: 1 },
    ]);
  });

  test("a container over its ephemeral-storage limit evicts its pod at once with the kubelet's message; critical pods never", async () => {
    const limited = testPod("writer", {
      containers: [
        { ...container(undefined, { "ephemeral-storage": "20Mi" }), name: "a" },
        { ...container(undefined, { "ephemeral-storage": "1Gi" }), name: "b" },
      ],
    });
    const critical = testPod("critical-writer", {
      priorityClassName: "system-node-critical",
      containers: [container(undefined, { "ephemeral-storage": "20Mi" })],
    });
    pods.push(limited, critical);
    const m = manager({});
    const wrote = (pod: Pod, name: string, bytes: number) =>
      storage.set(pod.metadata.uid, { containers: [{ name, rootfsBytes: bytes, logsBytes: 0 }], volumes: new Map() });
    wrote(limited, "a", 20 * Mi);
    wrote(critical, "app", 60 * Mi);
    await m.synchronize();
    expect(evicted).toEqual([]);
    wrote(limited, "a", 60 * Mi);
    expect(await m.synchronize()).toBe(limited.metadata.uid);
    expect(evicted).toEqual([
      { name: "writer", message: 'Container a exceeded its local ephemeral storage limit "20Mi". ', grace: 1 },
    ]);
  });

  test("with localStorageCapacityIsolation false no pod is evicted for its local storage", async () => {
    isolation = false;
    const limited = testPod("writer", {
      containers: [container(undefined, { "ephemeral-storage": "20Mi" })],
      volumes: [{ name: "scratch", emptyDir: { sizeLimit: "1Mi" } }],
    });
    pods.push(limited);
    storage.set(limited.metadata.uid, {
      containers: [{ name: "app", rootfsBytes: 60 * Mi, logsBytes: 0 }],
      volumes: new Map(),
    });
    emptyDirs.set("writer/scratch", 2 * Mi);
    await manager({}).synchronize();
    expect(evicted).toEqual([]);
  });

  test("a pod not measured yet is never chosen, however the ranking would place it", async () => {
    usage.delete(pods[2]!.metadata.uid); // best-effort: no stats yet (as 0 it would rank first: 0 over its request)
    use(pods[1]!, 50 * Mi); // burstable and guaranteed within their requests
    const m = manager({ "memory.available": "100Mi" });
    memory(50 * Mi);
    await m.synchronize();
    expect(evicted.map((e) => e.name)).toEqual(["burstable"]);
  });

  test("critical pods are evicted last, lower priority first", async () => {
    const critical = testPod("critical", { priorityClassName: "system-node-critical", containers: [container()] });
    const low = testPod("low", { priority: -5, containers: [container({ memory: "100Mi" })] });
    pods = [critical, low];
    use(critical, 2 * Gi);
    use(low, 300 * Mi);
    const m = manager({ "memory.available": "100Mi" });
    memory(50 * Mi);
    await m.synchronize();
    await m.synchronize();
    expect(evicted.map((e) => e.name)).toEqual(["low", "critical"]);
  });

  test("pid.available below its threshold sets PIDPressure and evicts the lowest priority pod, reclaiming no images", async () => {
    const m = manager({ "pid.available": "1000" });
    observations["pid.available"] = { available: 800, capacity: 32768 };
    observations["imagefs.available"] = { available: 0, capacity: Gi };
    reclaimable = Gi;
    pods[0]!.spec.priority = 10;
    pods[2]!.spec.priority = 5;
    for (const p of pods) use(p, 0);
    await m.synchronize();
    expect(m.conditions().find((c) => c.type === "PIDPressure")).toMatchObject({
      status: "True",
      reason: "KubeletHasInsufficientPID",
      message: "kubelet has insufficient PID available",
    });
    expect(evicted).toEqual([
      { name: "burstable", message: "The node was low on resource: pids. Threshold quantity: 1000, available: 800. " },
    ]);
    expect(reclaimable).toBe(Gi);
  });

  test("under PID pressure, among pods of one priority, the pod with the most processes is evicted", async () => {
    const m = manager({ "pid.available": "1000" });
    observations["pid.available"] = { available: 800, capacity: 32768 };
    use(pods[0]!, 5);
    use(pods[1]!, 2);
    use(pods[2]!, 400);
    await m.synchronize();
    expect(evicted.map((e) => e.name)).toEqual(["best-effort"]);
  });

  test("with evictionMinimumReclaim a met threshold holds, and evicts, until the threshold plus the minimum is available", async () => {
    const m = manager({ "memory.available": "100Mi" }, {}, {}, { "memory.available": "200Mi" });
    memory(50 * Mi);
    await m.synchronize();
    memory(150 * Mi); // above the threshold, below threshold + minimum reclaim
    await m.synchronize();
    expect(evicted.map((e) => e.name)).toEqual(["best-effort", "burstable"]);
    memory(350 * Mi);
    await m.synchronize();
    expect(evicted).toHaveLength(2);
    memory(150 * Mi); // no longer met before: the threshold alone counts again
    await m.synchronize();
    expect(evicted).toHaveLength(2);
  });

  test("disk pressure reclaims images up to the threshold plus the minimum reclaim", async () => {
    const m = manager({ "imagefs.available": "15%" }, {}, {}, { "imagefs.available": "5Gi" });
    observations["imagefs.available"] = { available: 10 * Gi, capacity: 100 * Gi };
    reclaimable = 100 * Gi;
    await m.synchronize();
    expect(observations["imagefs.available"]!.available).toBe(20 * Gi);
    expect(evicted).toEqual([]);
  });

  test("a soft threshold's victim stops within evictionMaxPodGracePeriod, a hard threshold's with its own grace period", async () => {
    const soft = manager({}, { "memory.available": "100Mi" }, { "memory.available": "30s" }, {}, 10);
    memory(50 * Mi);
    await soft.synchronize();
    await clock.advance(30_000);
    await soft.synchronize();
    expect(evicted.map((e) => e.grace)).toEqual([10]);
    await manager({ "memory.available": "100Mi" }, {}, {}, {}, 10).synchronize();
    expect(evicted.map((e) => e.grace)).toEqual([10, undefined]);
  });
});
