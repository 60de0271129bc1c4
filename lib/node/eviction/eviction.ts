// The eviction manager (the Go kubelet's eviction manager, every 10 s): measures the signals,
// keeps the MemoryPressure/DiskPressure/PIDPressure conditions (held for --eviction_pressure_transition_period
// after the last time a threshold was met), evicts a pod over its local storage limits (a disk emptyDir
// over its sizeLimit, the pod's or a container's ephemeral-storage limit: local-storage.ts), and under a threshold past its grace period first reclaims images (disk), then
// evicts one pod per pass in the kubelet's order.
import type { Clock } from "../../clock.ts";
import { parseQuantity } from "../../api/quantity.ts";
import type { Pod } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import { storageLimitViolation, type PodStorageUse } from "./local-storage.ts";
import {
  formatBytes,
  pressureCondition,
  rankForEviction,
  reclaimTarget,
  starvedResource,
  thresholdQuantity,
  thresholdsMet,
  SIGNALS,
  type Observations,
  type Signal,
  type StarvedResource,
  type Threshold,
} from "./eviction-thresholds.ts";

export interface EvictionOptions {
  thresholds: Threshold[];
  /** evictionMaxPodGracePeriod: the most seconds a pod evicted by a soft threshold gets (0 = its own). */
  maxPodGracePeriodSeconds?: number;
  pressureTransitionPeriodMs: number;
  /** localStorageCapacityIsolation (default true): pods over their ephemeral-storage limits or emptyDir sizeLimit are evicted. */
  localStorageCapacityIsolation?: boolean;
  clock: Clock;
  log: Logger;
}

/** One pod's use of the starved resource, with its containers' share (memory) for the message. */
export interface PodUsage {
  total: number;
  containers: Array<{ name: string; usage: number }>;
}

export interface EvictionDeps {
  /** Measures the signals now. */
  observe(): Promise<Observations>;
  /** Pods that run and may be evicted (not yet evicted, not terminated). */
  activePods(): Pod[];
  /** Use of `resource` per pod uid (memory: working set; ephemeral-storage: bytes; inodes: count). */
  podUsage(pods: Pod[], resource: StarvedResource): Promise<Map<string, PodUsage>>;
  /** Bytes used by a pod's disk-backed emptyDir volume (a bounded walk). */
  emptyDirUsage(pod: Pod, volume: string): Promise<number>;
  /** Each measured pod's ephemeral storage use by uid (the last stats collection); absent = not measured. */
  storageUse?(): Map<string, PodStorageUse>;
  /** Whether the image filesystem is another filesystem than root_dir's (then writable layers are not pods' ephemeral storage). */
  dedicatedImageFs?(): Promise<boolean>;
  /** Frees image filesystem space (image GC); resolves to the bytes freed. */
  reclaimImages(bytes: number): Promise<number>;
  /** Stops the pod (within `graceSeconds` when given) and marks it Failed with reason Evicted and `message`. */
  evict(pod: Pod, message: string, graceSeconds?: number): Promise<void>;
}

/** A node condition the manager keeps (the Kubernetes NodeCondition shape). */
export interface NodeCondition {
  type: "MemoryPressure" | "DiskPressure" | "PIDPressure";
  status: "True" | "False";
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface EvictionManager {
  /** One pass; resolves to the evicted pod's uid, if any. */
  synchronize(): Promise<string | undefined>;
  conditions(): NodeCondition[];
}

/** Memory first, then the node's filesystem, then the image filesystem: SIGNALS is in the Go kubelet's signal order. */
const SIGNAL_ORDER: readonly Signal[] = SIGNALS;
const CRITICAL_PRIORITY = 2_000_000_000;
/** The Go kubelet's immediateEvictionGracePeriodSeconds: local storage limits give a pod 1 s to stop. */
const IMMEDIATE_EVICTION_GRACE_SECONDS = 1;
const CRITICAL_CLASSES = new Set(["system-node-critical", "system-cluster-critical"]);

export function createEvictionManager(options: EvictionOptions, deps: EvictionDeps): EvictionManager {
  const { clock, log } = options;
  const firstObserved = new Map<Threshold, number>();
  /** Thresholds met on the last pass: they hold until their minimum reclaim is available too (evictionMinimumReclaim). */
  let lastMet: Threshold[] = [];
  const lastObserved = new Map<NodeCondition["type"], number>();
  const conditions = new Map<NodeCondition["type"], NodeCondition>();
  for (const type of ["MemoryPressure", "DiskPressure", "PIDPressure"] as const)
    conditions.set(type, condition(type, false, new Date(clock.now()).toISOString()));

  const updateConditions = (met: Threshold[]) => {
    const now = clock.now();
    for (const t of met) lastObserved.set(pressureCondition(t.signal), now);
    for (const [type, before] of conditions) {
      const seen = lastObserved.get(type);
      const pressure = seen !== undefined && now - seen < options.pressureTransitionPeriodMs;
      if ((before.status === "True") !== pressure) {
        conditions.set(type, condition(type, pressure, new Date(now).toISOString()));
        log.info(`node condition ${type} is now ${pressure ? "True" : "False"}`);
      }
    }
  };

  /** A disk emptyDir over its sizeLimit (measured now): the Go kubelet's message, or undefined. */
  const emptyDirOverLimit = async (pod: Pod): Promise<string | undefined> => {
    for (const volume of pod.spec.volumes ?? []) {
      const limit = volume.emptyDir?.sizeLimit;
      if (limit === undefined || volume.emptyDir?.medium === "Memory") continue;
      const used = await deps.emptyDirUsage(pod, volume.name);
      if (used > parseQuantity(limit)!)
        return `Usage of EmptyDir volume "${volume.name}" exceeds the limit "${limit}". `;
    }
    return undefined;
  };

  /**
   * The Go kubelet's localStorageEviction, whatever the thresholds: every pod over an emptyDir sizeLimit, its own
   * ephemeral-storage limit or a container's, evicted at once (1 s grace); critical pods never. Resolves to the
   * first evicted pod's uid.
   */
  const localStorageEviction = async (): Promise<string | undefined> => {
    if (options.localStorageCapacityIsolation === false) return undefined;
    const use = deps.storageUse?.();
    const dedicatedImageFs = (await deps.dedicatedImageFs?.()) ?? false;
    let first: string | undefined;
    for (const pod of deps.activePods()) {
      if (isCritical(pod)) continue;
      const measured = use?.get(pod.metadata.uid);
      const message =
        (await emptyDirOverLimit(pod)) ?? (measured && storageLimitViolation(pod, measured, { dedicatedImageFs }));
      if (!message) continue;
      log.info(`evicting pod ${pod.metadata.namespace}/${pod.metadata.name}: ${message.trim()}`);
      await deps.evict(pod, message, IMMEDIATE_EVICTION_GRACE_SECONDS);
      first ??= pod.metadata.uid;
    }
    return first;
  };

  return {
    async synchronize() {
      let observations = await deps.observe();
      const unresolved = thresholdsMet(lastMet, observations, true);
      const met = thresholdsMet(options.thresholds, observations).filter((t) => !unresolved.includes(t));
      met.push(...unresolved);
      lastMet = met;
      const now = clock.now();
      for (const t of options.thresholds) {
        if (!met.includes(t)) firstObserved.delete(t);
        else if (!firstObserved.has(t)) firstObserved.set(t, now);
      }
      updateConditions(met);
      const evictedForStorage = await localStorageEviction();
      if (evictedForStorage) return evictedForStorage;
      const passed = met
        .filter((t) => now - firstObserved.get(t)! >= t.gracePeriodMs)
        .sort((a, b) => SIGNAL_ORDER.indexOf(a.signal) - SIGNAL_ORDER.indexOf(b.signal));
      const threshold = passed[0];
      if (!threshold) return undefined;
      const resource = starvedResource(threshold.signal);
      if (resource !== "memory" && resource !== "pids") {
        // Node-level reclaim first: unused images, then measure again.
        const seen = observations[threshold.signal]!;
        const needed = reclaimTarget(threshold, seen.capacity) - seen.available;
        if (resource === "ephemeral-storage") await deps.reclaimImages(needed);
        observations = await deps.observe();
        if (!thresholdsMet([threshold], observations, true).length) {
          log.info(`${threshold.signal} back above its threshold after reclaiming images: no pod evicted`);
          return undefined;
        }
      }
      const active = deps.activePods();
      const usage = await deps.podUsage(active, resource);
      // A pod not measured yet (just started) is not ranked: an unknown usage must not pick the victim.
      const pods = active.filter((p) => usage.has(p.metadata.uid));
      if (!pods.length) {
        log.warn(`${threshold.signal} below its threshold, but no measured pod can be evicted`);
        return undefined;
      }
      const byUid = new Map(pods.map((p) => [p.metadata.uid, p]));
      const ranked = rankForEviction(
        pods.map((p) => ({
          uid: p.metadata.uid,
          priority: p.spec.priority ?? 0,
          critical: isCritical(p),
          request: podRequest(p, resource),
          usage: usage.get(p.metadata.uid)?.total ?? 0,
        })),
        resource,
      );
      const victim = byUid.get(ranked[0]!.uid)!;
      const seen = observations[threshold.signal]!;
      // A soft threshold's victim stops within evictionMaxPodGracePeriod; a hard one's with its own grace period.
      const maxGrace = options.maxPodGracePeriodSeconds ?? 0;
      await deps.evict(
        victim,
        evictionMessage(threshold, seen.available, seen.capacity, resource, victim, usage.get(victim.metadata.uid)),
        ...(threshold.gracePeriodMs > 0 && maxGrace > 0 ? [maxGrace] : []),
      );
      return victim.metadata.uid;
    },
    conditions: () => [...conditions.values()],
  };
}

/** The Go kubelet's reasons and messages of the two conditions, [pressure, no pressure]. */
const WORDING: Record<NodeCondition["type"], Array<[string, string]>> = {
  MemoryPressure: [
    ["KubeletHasInsufficientMemory", "kubelet has insufficient memory available"],
    ["KubeletHasSufficientMemory", "kubelet has sufficient memory available"],
  ],
  DiskPressure: [
    ["KubeletHasDiskPressure", "kubelet has disk pressure"],
    ["KubeletHasNoDiskPressure", "kubelet has no disk pressure"],
  ],
  PIDPressure: [
    ["KubeletHasInsufficientPID", "kubelet has insufficient PID available"],
    ["KubeletHasSufficientPID", "kubelet has sufficient PID available"],
  ],
};

function condition(type: NodeCondition["type"], pressure: boolean, at: string): NodeCondition {
  const [reason, message] = WORDING[type][pressure ? 0 : 1]!;
  return { type, status: pressure ? "True" : "False", reason, message, lastTransitionTime: at };
}

function isCritical(pod: Pod): boolean {
  return (pod.spec.priority ?? 0) >= CRITICAL_PRIORITY || CRITICAL_CLASSES.has(pod.spec.priorityClassName ?? "");
}

const REQUEST_NAME: Record<StarvedResource, string | undefined> = {
  memory: "memory",
  "ephemeral-storage": "ephemeral-storage",
  inodes: undefined,
  pids: undefined,
};

function containerRequest(c: Pod["spec"]["containers"][number], resource: StarvedResource): number {
  const name = REQUEST_NAME[resource];
  const value = name ? (c.resources?.requests?.[name] ?? c.resources?.limits?.[name]) : undefined;
  return value === undefined ? 0 : (parseQuantity(value) ?? 0);
}

/** The pod's request for the resource (a limit without a request counts as the request, as API defaulting does). */
function podRequest(pod: Pod, resource: StarvedResource): number {
  return pod.spec.containers.reduce((n, c) => n + containerRequest(c, resource), 0);
}

/** The Go kubelet's eviction message. */
function evictionMessage(
  threshold: Threshold,
  available: number,
  capacity: number,
  resource: StarvedResource,
  pod: Pod,
  usage: PodUsage | undefined,
): string {
  // Process counts are plain numbers, not bytes.
  const amount = resource === "pids" ? (n: number) => String(Math.round(n)) : formatBytes;
  const quantity = threshold.quantity !== undefined ? threshold.text : amount(thresholdQuantity(threshold, capacity));
  let message = `The node was low on resource: ${resource}. Threshold quantity: ${quantity}, available: ${amount(available)}. `;
  for (const c of usage?.containers ?? []) {
    const spec = pod.spec.containers.find((s) => s.name === c.name);
    const request = spec ? containerRequest(spec, resource) : 0;
    if (c.usage > request)
      message += `Container ${c.name} was using ${formatBytes(c.usage)}, request is ${formatBytes(request)}, has larger consumption of ${resource}. `;
  }
  return message;
}
