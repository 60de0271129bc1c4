// Pure eviction arithmetic, after the Go kubelet's eviction helpers: parsing --eviction_hard /
// --eviction_soft / --eviction_soft_grace_period into thresholds, deciding which thresholds an
// observation meets, each pod's use of the starved resource (from /stats/summary) and ranking pods
// for eviction under memory or disk pressure.
import { parseQuantity } from "../../api/quantity.ts";
import { KubeletError, type Pod } from "../../api/types.ts";
import type { PodUsage } from "./eviction.ts";
import type { StatsSummary } from "../stats/stats-analyzer.ts";

/** The eviction signals this kubelet measures (the Go kubelet's names). */
export const SIGNALS = [
  "memory.available",
  "nodefs.available",
  "nodefs.inodesFree",
  "imagefs.available",
  "imagefs.inodesFree",
  "pid.available",
] as const;
export type Signal = (typeof SIGNALS)[number];

/** The node resource a signal starves, as named in conditions and eviction messages. */
export type StarvedResource = "memory" | "ephemeral-storage" | "inodes" | "pids";

/** One threshold: `signal < value`, either a quantity or a fraction of capacity. */
export interface Threshold {
  signal: Signal;
  quantity?: number;
  /** 0–1 of the signal's capacity. */
  percentage?: number;
  /** 0 for hard thresholds. */
  gracePeriodMs: number;
  /** The text the user gave, for messages ("100Mi", "10%"). */
  text: string;
  /** evictionMinimumReclaim: once met, the threshold holds until this much more is available. */
  minReclaim?: { quantity?: number; percentage?: number };
}

/** What a signal measured: how much is available out of how much. */
export interface Observation {
  available: number;
  capacity: number;
}

export type Observations = Partial<Record<Signal, Observation>>;

export interface ThresholdSettings {
  hard: Record<string, string>;
  soft: Record<string, string>;
  softGracePeriod: Record<string, string>;
  minimumReclaim?: Record<string, string>;
}

/** Parses the flags into thresholds; bad input throws InvalidValue naming the flag, the signal and the fix. */
export function parseThresholds(settings: ThresholdSettings, parseDuration: (text: string) => number): Threshold[] {
  const thresholds: Threshold[] = [];
  const signal = (flag: string, name: string): Signal => {
    if ((SIGNALS as readonly string[]).includes(name)) return name as Signal;
    throw new KubeletError(
      "InvalidValue",
      `invalid value for --${flag}: unsupported eviction signal "${name}" (supported: ${SIGNALS.join(", ")})`,
    );
  };
  const value = (flag: string, name: string, text: string): Pick<Threshold, "quantity" | "percentage"> => {
    const bad = (why: string) =>
      new KubeletError("InvalidValue", `invalid value for --${flag}: ${name}<${text}: ${why}`);
    if (text.endsWith("%")) {
      const percent = Number(text.slice(0, -1));
      if (!Number.isFinite(percent) || text === "%") throw bad("expected a percentage such as 10%");
      if (percent < 0 || percent > 100) throw bad("a percentage must be between 0% and 100%");
      return { percentage: percent / 100 };
    }
    const quantity = parseQuantity(text);
    if (quantity === undefined) throw bad("expected a quantity such as 100Mi or a percentage such as 10%");
    if (quantity < 0) throw bad("a threshold must not be negative");
    return { quantity };
  };
  const minReclaim = new Map(
    Object.entries(settings.minimumReclaim ?? {}).map(([name, text]) => [
      signal("eviction_minimum_reclaim", name),
      value("eviction_minimum_reclaim", name, text),
    ]),
  );
  for (const [name, text] of Object.entries(settings.hard)) {
    thresholds.push({
      signal: signal("eviction_hard", name),
      ...value("eviction_hard", name, text),
      gracePeriodMs: 0,
      text,
    });
  }
  for (const name of Object.keys(settings.softGracePeriod)) {
    signal("eviction_soft_grace_period", name);
    if (!(name in settings.soft))
      throw new KubeletError(
        "InvalidValue",
        `invalid value for --eviction_soft_grace_period: ${name} has a grace period but no --eviction_soft threshold`,
      );
  }
  for (const [name, text] of Object.entries(settings.soft)) {
    const grace = settings.softGracePeriod[name];
    if (grace === undefined)
      throw new KubeletError(
        "InvalidValue",
        `invalid value for --eviction_soft: ${name} needs a grace period: add --eviction_soft_grace_period ${name}=1m30s`,
      );
    let gracePeriodMs: number;
    try {
      gracePeriodMs = parseDuration(grace);
    } catch (error) {
      throw new KubeletError(
        "InvalidValue",
        `invalid value for --eviction_soft_grace_period: ${name}=${grace}: ${(error as Error).message}`,
      );
    }
    if (gracePeriodMs <= 0)
      throw new KubeletError(
        "InvalidValue",
        `invalid value for --eviction_soft_grace_period: ${name}=${grace}: the grace period must be positive`,
      );
    thresholds.push({
      signal: signal("eviction_soft", name),
      ...value("eviction_soft", name, text),
      gracePeriodMs,
      text,
    });
  }
  for (const t of thresholds) {
    const reclaim = minReclaim.get(t.signal);
    if (reclaim) t.minReclaim = reclaim;
  }
  return thresholds;
}

/** The threshold's quantity for a capacity (a percentage is of the capacity). */
export function thresholdQuantity(threshold: Pick<Threshold, "quantity" | "percentage">, capacity: number): number {
  return threshold.quantity ?? Math.round((threshold.percentage ?? 0) * capacity);
}

/**
 * Thresholds the observations meet (available below the threshold; with `enforceMinReclaim`, below the threshold
 * plus its minimum reclaim); unmeasured signals meet none.
 */
export function thresholdsMet(
  thresholds: Threshold[],
  observations: Observations,
  enforceMinReclaim = false,
): Threshold[] {
  return thresholds.filter((t) => {
    const seen = observations[t.signal];
    return seen !== undefined && seen.available < reclaimTarget(t, seen.capacity, enforceMinReclaim);
  });
}

/** The availability eviction works towards: the threshold, plus its minimum reclaim when enforced. */
export function reclaimTarget(threshold: Threshold, capacity: number, enforceMinReclaim = true): number {
  const extra = enforceMinReclaim && threshold.minReclaim ? thresholdQuantity(threshold.minReclaim, capacity) : 0;
  return thresholdQuantity(threshold, capacity) + extra;
}

/** The resource a signal starves. */
export function starvedResource(signal: Signal): StarvedResource {
  if (signal === "memory.available") return "memory";
  if (signal === "pid.available") return "pids";
  return signal.endsWith("inodesFree") ? "inodes" : "ephemeral-storage";
}

/** The node condition a signal sets. */
export function pressureCondition(signal: Signal): "MemoryPressure" | "DiskPressure" | "PIDPressure" {
  if (signal === "pid.available") return "PIDPressure";
  return signal === "memory.available" ? "MemoryPressure" : "DiskPressure";
}

/**
 * Each pod's use of the starved resource, from the stats analyzer's last summary, as the Go kubelet's
 * rankers read it: memory is the containers' working set; ephemeral-storage their writable layers,
 * logs and the pod's volumes; inodes the layers' and volumes' inodes; pids the pod's process count
 * (process_stats, from its cgroup's pids controller; 0 without pod cgroups, ranking by priority alone).
 * Pods missing from the summary are absent.
 */
export function evictionUsage(
  summary: StatsSummary | undefined,
  pods: Pod[],
  resource: StarvedResource,
): Map<string, PodUsage> {
  const usage = new Map<string, PodUsage>();
  const wanted = new Set(pods.map((p) => p.metadata.uid));
  for (const pod of summary?.pods ?? []) {
    if (!wanted.has(pod.podRef.uid)) continue;
    const containers = pod.containers.map((c) => ({
      name: c.name,
      usage:
        resource === "memory"
          ? (c.memory?.workingSetBytes ?? 0)
          : // Processes are counted per pod, not per container (the Go kubelet names no container for pids).
            resource === "pids"
            ? 0
            : resource === "inodes"
              ? (c.rootfs?.inodesUsed ?? 0)
              : (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0),
    }));
    const volumes = pod.volume.reduce((n, v) => n + (resource === "inodes" ? v.inodesUsed : v.usedBytes), 0);
    usage.set(pod.podRef.uid, {
      total:
        resource === "pids"
          ? (pod.process_stats?.process_count ?? 0)
          : containers.reduce((n, c) => n + c.usage, 0) + (resource === "memory" ? 0 : volumes),
      containers,
    });
  }
  return usage;
}

/** What the ranking knows of one pod. */
export interface RankedPod {
  uid: string;
  /** spec.priority (0 when unset). */
  priority: number;
  /** Critical pods (system-node-critical, system-cluster-critical or priority ≥ 2000000000) go last. */
  critical: boolean;
  /** Sum of the containers' requests for the starved resource (bytes). */
  request: number;
  /** Usage of the starved resource (bytes, or inodes). */
  usage: number;
}

/**
 * The kubelet's eviction order: non-critical before critical, pods using more than they request before pods
 * within their requests, lower priority first, then the largest usage (above request) first. BestEffort pods request
 * nothing, so any usage exceeds it: they go before Burstable pods within their requests. Under PID pressure there
 * are no requests (the Go kubelet's rankPIDPressure): lower priority first, then the most processes.
 */
export function rankForEviction(pods: RankedPod[], resource?: StarvedResource): RankedPod[] {
  const exceeds = (p: RankedPod) => (resource === "pids" ? 0 : Number(p.usage > p.request));
  return [...pods].sort(
    (a, b) =>
      Number(a.critical) - Number(b.critical) ||
      exceeds(b) - exceeds(a) ||
      a.priority - b.priority ||
      b.usage - b.request - (a.usage - a.request),
  );
}

/** Bytes the Kubernetes way in messages: 104857600 → "100Mi", 1536 → "1536". */
export function formatBytes(bytes: number): string {
  for (const [suffix, size] of [
    ["Gi", 2 ** 30],
    ["Mi", 2 ** 20],
    ["Ki", 2 ** 10],
  ] as const)
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${suffix}`;
  if (bytes >= 2 ** 20) return `${Math.round(bytes / 2 ** 10)}Ki`;
  return String(Math.round(bytes));
}
