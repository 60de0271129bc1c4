// Local ephemeral storage limits (the Go kubelet's localStorageEviction, with localStorageCapacityIsolation):
// which limit a pod's use breaks — an emptyDir over its sizeLimit, the pod over the sum of its containers'
// ephemeral-storage limits, or one container's writable layer and logs over its own limit — in upstream's
// order and words. Pure: the eviction manager measures and evicts.
import { parseQuantity } from "../../api/quantity.ts";
import type { Pod, V1Container } from "../../api/types.ts";
import { formatBytes } from "./eviction-thresholds.ts";
import type { StatsSummary } from "../stats/stats-analyzer.ts";

/** What one pod uses of the node's ephemeral storage (bytes), as the last stats collection measured it. */
export interface PodStorageUse {
  /** Per container (the newest of each name): its writable layer and its log files. */
  containers: Array<{ name: string; rootfsBytes: number; logsBytes: number }>;
  /** Per emptyDir volume, by volume name. */
  volumes: Map<string, number>;
}

/** Each measured pod's storage use, by uid, from the resource analyzer's summary. */
export function podStorageUse(summary: StatsSummary | undefined): Map<string, PodStorageUse> {
  const use = new Map<string, PodStorageUse>();
  for (const pod of summary?.pods ?? [])
    use.set(pod.podRef.uid, {
      containers: pod.containers.map((c) => ({
        name: c.name,
        rootfsBytes: c.rootfs?.usedBytes ?? 0,
        logsBytes: c.logs?.usedBytes ?? 0,
      })),
      volumes: new Map(pod.volume.map((v) => [v.name, v.usedBytes])),
    });
  return use;
}

/** A container's ephemeral-storage limit in bytes with its text, when it has one (a zero limit is none). */
function storageLimit(container: V1Container): { bytes: number; text: string } | undefined {
  const text = container.resources?.limits?.["ephemeral-storage"];
  const bytes = text === undefined ? undefined : parseQuantity(text);
  return bytes ? { bytes, text: String(text) } : undefined;
}

/**
 * The pod's ephemeral-storage limit as resourcehelper.PodLimits sums it: the app containers' and sidecars' limits,
 * or a larger init container's; undefined when no container has one. Its text is the limit as written when one
 * container gives it, else the sum in binary units.
 */
export function podStorageLimit(pod: Pod): { bytes: number; text: string } | undefined {
  const sidecar = (c: V1Container) => (c as { restartPolicy?: string }).restartPolicy === "Always";
  const inits = pod.spec.initContainers ?? [];
  const running = [...pod.spec.containers, ...inits.filter(sidecar)];
  const limited = running.map(storageLimit).filter((l) => l !== undefined);
  let bytes = limited.reduce((n, l) => n + l.bytes, 0);
  let text = limited.length === 1 ? limited[0]!.text : formatBytes(bytes);
  for (const init of inits.filter((c) => !sidecar(c))) {
    const limit = storageLimit(init);
    if (limit && limit.bytes > bytes) ({ bytes, text } = limit);
  }
  return bytes > 0 ? { bytes, text } : undefined;
}

/** The pod's ephemeral-storage request (sum as PodRequests counts it; a limit without a request counts as one). */
export function podStorageRequest(pod: Pod): number {
  const sidecar = (c: V1Container) => (c as { restartPolicy?: string }).restartPolicy === "Always";
  const of = (c: V1Container) => {
    const text = c.resources?.requests?.["ephemeral-storage"] ?? c.resources?.limits?.["ephemeral-storage"];
    return text === undefined ? 0 : (parseQuantity(text) ?? 0);
  };
  const inits = pod.spec.initContainers ?? [];
  let sum = pod.spec.containers.reduce((n, c) => n + of(c), 0);
  let sidecars = 0;
  let initPeak = 0;
  for (const init of inits) {
    if (sidecar(init)) {
      sum += of(init);
      sidecars += of(init);
    }
    initPeak = Math.max(initPeak, sidecar(init) ? sidecars : of(init) + sidecars);
  }
  const overhead = pod.spec.overhead?.["ephemeral-storage"];
  return Math.max(sum, initPeak) + (overhead === undefined ? 0 : (parseQuantity(overhead) ?? 0));
}

export interface StorageOptions {
  /** The image filesystem is not root_dir's: a container's writable layer is then not its ephemeral storage. */
  dedicatedImageFs: boolean;
}

/**
 * Why the pod must be evicted for its local storage, in the Go kubelet's words, or undefined: the pod-level limit
 * (every container's writable layer and logs plus its emptyDirs), then each container's own (logs, plus the
 * writable layer when the image filesystem is root_dir's). emptyDir sizeLimits are measured afresh by the caller.
 */
export function storageLimitViolation(pod: Pod, use: PodStorageUse, options: StorageOptions): string | undefined {
  const podLimit = podStorageLimit(pod);
  if (podLimit) {
    const total =
      use.containers.reduce((n, c) => n + c.rootfsBytes + c.logsBytes, 0) +
      [...use.volumes.values()].reduce((n, b) => n + b, 0);
    if (total > podLimit.bytes)
      return `Pod ephemeral local storage usage exceeds the total limit of containers ${podLimit.text}. `;
  }
  const limits = new Map(pod.spec.containers.map((c) => [c.name, storageLimit(c)]));
  for (const c of use.containers) {
    const limit = limits.get(c.name);
    const used = c.logsBytes + (options.dedicatedImageFs ? 0 : c.rootfsBytes);
    if (limit && used > limit.bytes)
      return `Container ${c.name} exceeded its local ephemeral storage limit "${limit.text}". `;
  }
  return undefined;
}
