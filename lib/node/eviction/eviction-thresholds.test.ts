import { describe, expect, test } from "bun:test";
import { parseDuration } from "../../api/duration.ts";
import type { Pod } from "../../api/types.ts";
import type { StatsSummary } from "../stats/stats-analyzer.ts";
import {
  evictionUsage,
  formatBytes,
  parseThresholds,
  rankForEviction,
  thresholdQuantity,
  thresholdsMet,
  type RankedPod,
  type ThresholdSettings,
} from "./eviction-thresholds.ts";

const Mi = 2 ** 20;
const Gi = 2 ** 30;

/** "a<1,b<2" the way the flag parser hands it over. */
const map = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split(",")
      .filter(Boolean)
      .map((pair) => pair.split(/[<=]/) as [string, string]),
  );
const settings = (hard: string, soft = "", grace = ""): ThresholdSettings => ({
  hard: map(hard),
  soft: map(soft),
  softGracePeriod: map(grace),
});
const parse = (s: ThresholdSettings) =>
  parseThresholds(s, parseDuration).map(({ signal, quantity, percentage, gracePeriodMs }) => ({
    signal,
    ...(quantity !== undefined ? { quantity } : { percentage }),
    gracePeriodMs,
  }));

// The Go kubelet's TestParseThresholdConfig table (eviction/helpers_test.go), minus min-reclaim.
describe("threshold parsing (the Go kubelet's cases)", () => {
  test("no values gives no thresholds", () => expect(parse(settings(""))).toEqual([]));
  test("all flag values: a hard and a soft memory threshold with its grace period", () =>
    expect(parse(settings("memory.available<150Mi", "memory.available<300Mi", "memory.available=30s"))).toEqual([
      { signal: "memory.available", quantity: 150 * Mi, gracePeriodMs: 0 },
      { signal: "memory.available", quantity: 300 * Mi, gracePeriodMs: 30_000 },
    ]));
  test("all flag values in percentages", () =>
    expect(parse(settings("memory.available<10%", "memory.available<30%", "memory.available=30s"))).toEqual([
      { signal: "memory.available", percentage: 0.1, gracePeriodMs: 0 },
      { signal: "memory.available", percentage: 0.3, gracePeriodMs: 30_000 },
    ]));
  test("disk flag values", () =>
    expect(
      parse(
        settings(
          "imagefs.available<150Mi,nodefs.available<100Mi",
          "imagefs.available<300Mi,nodefs.available<200Mi",
          "imagefs.available=30s,nodefs.available=30s",
        ),
      ),
    ).toEqual([
      { signal: "imagefs.available", quantity: 150 * Mi, gracePeriodMs: 0 },
      { signal: "nodefs.available", quantity: 100 * Mi, gracePeriodMs: 0 },
      { signal: "imagefs.available", quantity: 300 * Mi, gracePeriodMs: 30_000 },
      { signal: "nodefs.available", quantity: 200 * Mi, gracePeriodMs: 30_000 },
    ]));
  test("disk flag values in percentages", () =>
    expect(parse(settings("imagefs.available<15%,nodefs.available<10.5%"))).toEqual([
      { signal: "imagefs.available", percentage: 0.15, gracePeriodMs: 0 },
      { signal: "nodefs.available", percentage: 0.105, gracePeriodMs: 0 },
    ]));
  test("inode flag values", () =>
    expect(parse(settings("imagefs.inodesFree<150Mi,nodefs.inodesFree<100Mi"))).toEqual([
      { signal: "imagefs.inodesFree", quantity: 150 * Mi, gracePeriodMs: 0 },
      { signal: "nodefs.inodesFree", quantity: 100 * Mi, gracePeriodMs: 0 },
    ]));
  const errors: Array<[string, ThresholdSettings, RegExp]> = [
    ["invalid signal", settings("mem.available<150Mi"), /--eviction_hard: unsupported eviction signal "mem.available"/],
    ["valid and invalid signal", settings("memory.available<150Mi,invalid.foo<150Mi"), /"invalid.foo"/],
    ["hard signal negative", settings("memory.available<-150Mi"), /must not be negative/],
    ["hard signal negative percentage", settings("memory.available<-15%"), /between 0% and 100%/],
    [
      "soft signal negative",
      settings("", "memory.available<-150Mi", "memory.available=30s"),
      /--eviction_soft: .*negative/,
    ],
    ["soft without a grace period", settings("", "memory.available<150Mi"), /add --eviction_soft_grace_period/],
    [
      "soft with a negative grace period",
      settings("", "memory.available<150Mi", "memory.available=-30s"),
      /must be positive/,
    ],
    [
      "a grace period without a soft threshold",
      settings("", "", "memory.available=30s"),
      /no --eviction_soft threshold/,
    ],
    ["a malformed quantity", settings("memory.available<lots"), /expected a quantity such as 100Mi/],
    [
      "a minimum reclaim of an unknown signal",
      { ...settings("memory.available<100Mi"), minimumReclaim: { "mem.available": "1Gi" } },
      /--eviction_minimum_reclaim: unsupported eviction signal "mem.available"/,
    ],
  ];
  for (const [name, input, message] of errors)
    test(`rejects ${name} with a message naming the flag`, () =>
      expect(() => parseThresholds(input, parseDuration)).toThrow(message));
});

describe("threshold arithmetic", () => {
  const [memory, nodefs] = parseThresholds(settings("memory.available<100Mi,nodefs.available<10%"), parseDuration);
  test("a percentage threshold is a share of the signal's capacity", () => {
    expect(thresholdQuantity(nodefs!, 50 * Gi)).toBe(5 * Gi);
    expect(thresholdQuantity(memory!, 50 * Gi)).toBe(100 * Mi);
  });
  test("a threshold is met only when available is strictly below it", () => {
    const met = (available: number) =>
      thresholdsMet([memory!], { "memory.available": { available, capacity: 8 * Gi } }).length;
    expect([met(99 * Mi), met(100 * Mi), met(101 * Mi)]).toEqual([1, 0, 0]);
  });
  test("with its minimum reclaim enforced a threshold is met until the threshold plus the minimum is available", () => {
    const [nodefsWithReclaim] = parseThresholds(
      { ...settings("nodefs.available<10%"), minimumReclaim: { "nodefs.available": "1Gi" } },
      parseDuration,
    );
    const met = (available: number, enforce: boolean) =>
      thresholdsMet([nodefsWithReclaim!], { "nodefs.available": { available, capacity: 50 * Gi } }, enforce).length;
    expect([met(5.5 * Gi, false), met(5.5 * Gi, true), met(6 * Gi, true)]).toEqual([0, 1, 0]);
  });
  test("a signal that was not measured meets no threshold", () => {
    expect(thresholdsMet([memory!, nodefs!], { "nodefs.available": { available: 1, capacity: 100 } })).toEqual([
      nodefs!,
    ]);
  });
  test("bytes are written the Kubernetes way in messages", () =>
    expect([100 * Mi, 3 * Gi, 1536, 1.5 * Mi + 1].map(formatBytes)).toEqual(["100Mi", "3Gi", "1536", "1536Ki"]));
});

// The Go kubelet's ordering tests (TestOrderedByQoS, TestOrderedByPriority, TestOrderedByExceedsRequestMemory).
describe("eviction ranking", () => {
  const pod = (uid: string, request: number, usage: number, priority = 0, critical = false): RankedPod => ({
    uid,
    request,
    usage,
    priority,
    critical,
  });
  const order = (pods: RankedPod[]) => rankForEviction(pods).map((p) => p.uid);
  test("BestEffort goes first; among pods within their requests the one furthest under its request goes last", () => {
    const bestEffort = pod("best-effort", 0, 10 * Mi);
    const burstable = pod("burstable", 100 * Mi, 90 * Mi);
    const guaranteed = pod("guaranteed", 200 * Mi, 100 * Mi);
    expect(order([guaranteed, burstable, bestEffort])).toEqual(["best-effort", "burstable", "guaranteed"]);
  });
  test("pods above their requests go before pods within them, whatever their usage", () => {
    expect(order([pod("within", 1 * Gi, 900 * Mi), pod("over", 100 * Mi, 101 * Mi)])).toEqual(["over", "within"]);
  });
  test("lower priority goes first among pods over their requests", () => {
    expect(order([pod("high", 0, 500 * Mi, 1000), pod("low", 0, 10 * Mi, -10), pod("mid", 0, 20 * Mi, 0)])).toEqual([
      "low",
      "mid",
      "high",
    ]);
  });
  test("the largest consumer above its request goes first at equal priority", () => {
    expect(order([pod("small", 0, 10 * Mi), pod("large", 100 * Mi, 400 * Mi), pod("medium", 0, 200 * Mi)])).toEqual([
      "large",
      "medium",
      "small",
    ]);
  });
  test("critical pods go last whatever they use", () => {
    expect(order([pod("critical", 0, 1 * Gi, 0, true), pod("normal", 1 * Gi, 1 * Mi)])).toEqual(["normal", "critical"]);
  });
  test("under PID pressure lower priority goes first, then the pod with the most processes", () => {
    const pids = (pods: RankedPod[]) => rankForEviction(pods, "pids").map((p) => p.uid);
    expect(pids([pod("few", 0, 3), pod("many", 0, 300), pod("some", 0, 30)])).toEqual(["many", "some", "few"]);
    // No request to exceed: a pod not counted (0, no pod cgroup) of lower priority still goes first.
    expect(pids([pod("many-high", 0, 300, 100), pod("uncounted-low", 0, 0, -1), pod("few", 0, 3)])).toEqual([
      "uncounted-low",
      "few",
      "many-high",
    ]);
  });
});

describe("each pod's use of the starved resource", () => {
  const fs = (usedBytes: number, inodesUsed: number) => ({ time: "", usedBytes, inodesUsed });
  const container = (name: string, workingSetBytes: number, rootfs: number, logs: number) => ({
    name,
    startTime: "",
    cpu: { time: "", usageCoreNanoSeconds: 0 },
    memory: { time: "", usageBytes: workingSetBytes * 2, workingSetBytes },
    rootfs: fs(rootfs, rootfs / 100),
    logs: fs(logs, 1),
  });
  const podStats = (uid: string) => ({
    podRef: { name: uid, namespace: "default", uid },
    containers: [container("app", 1000, 300, 20), container("side", 500, 100, 5)],
    volume: [{ ...fs(4000, 7), name: "data" }],
  });
  const summary = { pods: [podStats("u1"), podStats("u2")] } as unknown as StatsSummary;
  const pods = [{ metadata: { uid: "u1" } }] as Pod[];

  test("memory is the containers' working set; ephemeral-storage adds layers, logs and volumes; inodes count layers and volumes", () => {
    expect(evictionUsage(summary, pods, "memory").get("u1")).toEqual({
      total: 1500,
      containers: [
        { name: "app", usage: 1000 },
        { name: "side", usage: 500 },
      ],
    });
    expect(evictionUsage(summary, pods, "ephemeral-storage").get("u1")?.total).toBe(320 + 105 + 4000);
    expect(evictionUsage(summary, pods, "inodes").get("u1")?.total).toBe(3 + 1 + 7);
  });

  test("pids are the pod's process count (process_stats), 0 where the pod has no cgroup stats", () => {
    const counted = {
      pods: [{ ...podStats("u1"), process_stats: { process_count: 42 } }, podStats("u2")],
    } as unknown as StatsSummary;
    const both = [...pods, { metadata: { uid: "u2" } }] as Pod[];
    const usage = evictionUsage(counted, both, "pids");
    expect(usage.get("u1")).toEqual({
      total: 42,
      containers: [
        { name: "app", usage: 0 },
        { name: "side", usage: 0 },
      ],
    });
    expect(usage.get("u2")?.total).toBe(0);
  });

  test("only the pods asked about, and none before the first collection", () => {
    expect([...evictionUsage(summary, pods, "memory").keys()]).toEqual(["u1"]);
    expect(evictionUsage(undefined, pods, "memory").size).toBe(0);
  });
});
