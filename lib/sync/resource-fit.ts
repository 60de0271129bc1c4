// Pure: the Go kubelet's resource fit at admission (the predicate handler's noderesources.Fits): a pod's
// cpu and memory requests — as resourcehelper.PodRequests counts them (app containers and sidecars, or the
// largest need during initialization; see api/qos.ts podTotals), plus its overhead — must fit in the node's
// allocatable beside the requests of the pods admitted before it; so must its ephemeral-storage request
// where the node's allocatable names one (localStorageCapacityIsolation).
import { milliCpu, parseQuantity } from "../api/quantity.ts";
import { podTotals } from "../api/qos.ts";
import type { Pod } from "../api/types.ts";
import { podStorageRequest } from "../node/eviction/local-storage.ts";

/** CPU in millicores and memory in bytes. */
export interface Requests {
  milliCpu: number;
  memoryBytes: number;
  /** ephemeral-storage in bytes: in allocatable only with localStorageCapacityIsolation (then checked). */
  ephemeralStorageBytes?: number;
}

const none = (): Requests => ({ milliCpu: 0, memoryBytes: 0 });

/** The pod's requests with its overhead (computePodResourceRequest); a limit without a request counts as one. */
export function podRequests(pod: Pod): Requests {
  const { requests } = podTotals(pod);
  const storage = podStorageRequest(pod);
  const total: Requests = {
    milliCpu: requests.cpu,
    memoryBytes: requests.memory,
    ...(storage > 0 ? { ephemeralStorageBytes: storage } : {}),
  };
  const overhead = pod.spec.overhead ?? {};
  if (overhead.cpu !== undefined) total.milliCpu += milliCpu(overhead.cpu) ?? 0;
  if (overhead.memory !== undefined) total.memoryBytes += parseQuantity(overhead.memory) ?? 0;
  return total;
}

/** The requests of several pods together. */
export function sumRequests(pods: Pod[]): Requests {
  return pods.map(podRequests).reduce(
    (sum, r) => ({
      milliCpu: sum.milliCpu + r.milliCpu,
      memoryBytes: sum.memoryBytes + r.memoryBytes,
      ...(sum.ephemeralStorageBytes || r.ephemeralStorageBytes
        ? { ephemeralStorageBytes: (sum.ephemeralStorageBytes ?? 0) + (r.ephemeralStorageBytes ?? 0) }
        : {}),
    }),
    none(),
  );
}

/** A resource a pod does not fit in, with the Go kubelet's numbers. */
export interface Insufficient {
  resource: "cpu" | "memory" | "ephemeral-storage";
  requested: number;
  used: number;
  capacity: number;
}

/** The Go kubelet's InsufficientResourceError text: `Node didn't have enough resource: cpu, requested: …`. */
export const insufficientResourceMessage = (short: Insufficient) =>
  `Node didn't have enough resource: ${short.resource}, requested: ${short.requested}, used: ${short.used}, capacity: ${short.capacity}`;

/** The first resource the pod does not fit in, with the Go kubelet's numbers; undefined when it fits. */
export function insufficientResource(pod: Pod, used: Requests, allocatable: Requests): Insufficient | undefined {
  const wanted = podRequests(pod);
  const checks: Array<[Insufficient["resource"], number, number, number]> = [
    ["cpu", wanted.milliCpu, used.milliCpu, allocatable.milliCpu],
    ["memory", wanted.memoryBytes, used.memoryBytes, allocatable.memoryBytes],
  ];
  if (allocatable.ephemeralStorageBytes !== undefined)
    checks.push([
      "ephemeral-storage",
      wanted.ephemeralStorageBytes ?? 0,
      used.ephemeralStorageBytes ?? 0,
      allocatable.ephemeralStorageBytes,
    ]);
  for (const [resource, requested, inUse, capacity] of checks)
    if (requested > 0 && requested + inUse > capacity)
      return { resource, requested: Math.round(requested), used: Math.round(inUse), capacity: Math.round(capacity) };
  return undefined;
}
