// Pure: a fleet rollout's arithmetic and judgement: --max-unavailable/--max-surge as nodes or percent,
// the batches, which containers a change restarts, and what one node's records in etcd say about the
// new pod (Ready, failed, still coming, or the node unavailable).
import { stableJson } from "../api/hash.ts";
import type { Pod, V1Node, V1PodStatus } from "../api/types.ts";

/** Waiting reasons that fail a batch at once: the new spec cannot run (Kubernetes' own reasons). */
export const FAILING_REASONS = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "ErrImageNeverPull",
  "CrashLoopBackOff",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
]);

/** In NodeBaseline.failing: the pod itself had failed (phase Failed). */
const FAILED_POD = "";

/** "3" or "25%": a count of nodes, or a share of them; undefined when it is neither. */
export function parseIntOrPercent(value: string): { count: number } | { percent: number } | undefined {
  const match = /^(\d+)(%?)$/.exec(value.trim());
  if (!match) return undefined;
  const n = Number(match[1]);
  if (match[2]) return n <= 100 ? { percent: n } : undefined;
  return { count: n };
}

/**
 * Nodes per batch as Kubernetes resolves a rolling update: maxUnavailable's percent rounded down, maxSurge's up,
 * and when both come to 0, one node (progress must be possible).
 */
export function batchSizes(
  maxUnavailable: string,
  maxSurge: string,
  total: number,
): { unavailable: number; surge: number } {
  const resolve = (value: string, roundUp: boolean) => {
    const parsed = parseIntOrPercent(value)!;
    if ("count" in parsed) return parsed.count;
    const exact = (parsed.percent * total) / 100;
    return roundUp ? Math.ceil(exact) : Math.floor(exact);
  };
  const surge = Math.min(total, resolve(maxSurge, true));
  const unavailable = Math.min(total, resolve(maxUnavailable, false));
  return { unavailable: unavailable === 0 && surge === 0 ? 1 : unavailable, surge };
}

/** The nodes in batches of `size`, in name order. */
export function planBatches(nodes: string[], size: number): string[][] {
  const sorted = [...nodes].sort();
  const batches: string[][] = [];
  for (let i = 0; i < sorted.length; i += Math.max(1, size)) batches.push(sorted.slice(i, i + Math.max(1, size)));
  return batches;
}

/**
 * The name of a node's surge copy of the pod at `hash`: a second pod beside the old one (a pod's name is its identity
 * on a node), suffixed with the revision's hash as a Deployment's pods carry its pod-template-hash.
 */
export function surgeName(name: string, hash: string): string {
  return `${name}-${hash.slice(0, 10)}`;
}

/** The pod renamed as its surge copy: the same spec and manifest hash, so the node reports it at that revision. */
export function surgeCopy(pod: Pod, hash: string): Pod {
  return { ...pod, metadata: { ...pod.metadata, name: surgeName(pod.metadata.name, hash) } };
}

/**
 * Why the pod cannot run twice on one node (so --max-surge cannot apply), or undefined: a fixed hostPort, or
 * hostNetwork with ports (each port is then a port of the host).
 */
export function surgeBlocker(pod: Pod): string | undefined {
  for (const [i, c] of pod.spec.containers.entries())
    for (const [j, port] of (c.ports ?? []).entries()) {
      if (port.hostPort) return `spec.containers[${i}].ports[${j}].hostPort ${port.hostPort} is fixed`;
      if (pod.spec.hostNetwork)
        return `spec.hostNetwork with spec.containers[${i}].ports[${j}].containerPort ${port.containerPort}`;
    }
  return undefined;
}

/**
 * Containers a change from `before` to `after` restarts: those whose spec differs, or every container when the
 * pod-level spec differs (a new sandbox).
 */
export function restartedContainers(before: Pod | undefined, after: Pod): string[] {
  const names = after.spec.containers.map((c) => c.name);
  if (!before) return names;
  const { containers: _a, ...podLevel } = after.spec;
  const { containers: _b, ...podLevelBefore } = before.spec;
  if (stableJson(podLevel) !== stableJson(podLevelBefore)) return names;
  const old = new Map(before.spec.containers.map((c) => [c.name, stableJson(c)]));
  return after.spec.containers.filter((c) => old.get(c.name) !== stableJson(c)).map((c) => c.name);
}

/** What the driver remembers of a node before its batch is written: whether it already ran the target, its containers. */
export interface NodeBaseline {
  /** The node already ran the target manifest: nothing restarts there. */
  atTarget: boolean;
  /** Container name → containerID before the write. */
  ids: Record<string, string>;
  /**
   * Containers failing before the write (a rollback from a bad image): their failure, still reported until the node
   * has acted on the write, is not the new pod's; it can only time out.
   */
  failing?: string[];
}

/** One node's records, as read from etcd. */
export interface NodeRecords {
  /** The Node record (absent: its lease expired, or it never registered). */
  node?: V1Node;
  cordoned: boolean;
  /** The manifest hash the node reports running for this pod. */
  running?: string;
  status?: V1PodStatus;
}

export type NodeVerdict =
  | { state: "ready" }
  | { state: "pending"; reason: string }
  | { state: "failed"; reason: string; message: string }
  | { state: "unavailable"; reason: string };

/** A baseline from a node's records before its batch: the containers now running there. */
export function baselineOf(records: NodeRecords, targetHash: string): NodeBaseline {
  const ids: Record<string, string> = {};
  const failing: string[] = [];
  for (const c of records.status?.containerStatuses ?? []) {
    if (c.containerID) ids[c.name] = c.containerID;
    if (FAILING_REASONS.has(c.state?.waiting?.reason ?? "")) failing.push(c.name);
  }
  if (records.status?.phase === "Failed") failing.push(FAILED_POD);
  return { atTarget: records.running === targetHash, ids, ...(failing.length ? { failing } : {}) };
}

/**
 * What a node's records say about the pod at `targetHash`: ready once the node runs that manifest, the pod is Ready
 * and every container the change restarts has a new container (the status of the old ones is not taken for the new);
 * failed on a waiting reason of FAILING_REASONS; unavailable when the node is down, NotReady or cordoned.
 */
export function judgeNode(
  records: NodeRecords,
  targetHash: string,
  restarted: string[],
  baseline: NodeBaseline | undefined,
): NodeVerdict {
  if (!records.node) return { state: "unavailable", reason: "down (no lease)" };
  if (records.cordoned) return { state: "unavailable", reason: "cordoned" };
  const nodeReady = records.node.status?.conditions?.find((c) => c.type === "Ready");
  if (nodeReady?.status !== "True") return { state: "unavailable", reason: "NotReady" };
  if (records.running !== targetHash) return { state: "pending", reason: "not yet running the new manifest" };
  const containers = records.status?.containerStatuses ?? [];
  // Refused by the node (admission: OutOfcpu, OutOfpods, …), unless it was already so before the write.
  if (records.status?.phase === "Failed" && !baseline?.failing?.includes(FAILED_POD)) {
    const reason = records.status.reason ?? "Failed";
    return { state: "failed", reason, message: `pod ${reason}: ${records.status.message ?? ""}` };
  }
  for (const c of containers) {
    const reason = c.state?.waiting?.reason;
    if (reason && FAILING_REASONS.has(reason) && !baseline?.failing?.includes(c.name))
      return { state: "failed", reason, message: `container ${c.name}: ${reason}: ${c.state?.waiting?.message ?? ""}` };
  }
  if (!baseline?.atTarget) {
    const stale = restarted.filter((name) => {
      const id = containers.find((c) => c.name === name)?.containerID;
      return !id || id === baseline?.ids[name];
    });
    if (stale.length > 0) return { state: "pending", reason: `container ${stale[0]} not yet restarted` };
  }
  const ready = records.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True") return { state: "pending", reason: "pod not Ready" };
  return { state: "ready" };
}
