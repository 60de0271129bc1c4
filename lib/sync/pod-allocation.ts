// Pure: the resources the kubelet allocated to an admitted pod, and whether an edit of them (an in-place resize,
// KEP-1287) is allocated now, Deferred or Infeasible — the Go kubelet's allocation manager (pkg/kubelet/allocation:
// handlePodResourcesResize, the resize admit handler's node-allocatable check, then the predicate handler's fit
// beside the other pods' allocated resources). Until its resize is allocated, a pod is synced with what it was
// allocated: its containers keep their resources and its status their allocatedResources. The allocations outlive a
// kubelet restart (the Go kubelet's allocated_pods_state checkpoint), so a deferred resize stays deferred.
import type { Pod, V1Container } from "../api/types.ts";
import type { Allocation } from "../node/state/allocation-file.ts";
import { podQosClass } from "../api/qos.ts";
import type { ResizeStatus } from "./pod-status.ts";
import {
  insufficientResource,
  insufficientResourceMessage,
  podRequests,
  sumRequests,
  type Requests,
} from "./resource-fit.ts";

/** What `pod` allocates to each of its containers: what its spec asks. */
export function allocationOf(pod: Pod): Allocation {
  return Object.fromEntries(
    [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => [c.name, c.resources ?? {}]),
  );
}

/** `pod` with each container's resources as `allocation` has them (a container it does not name keeps its own). */
export function withAllocation(pod: Pod, allocation: Allocation): Pod {
  const allocate = (c: V1Container): V1Container => {
    const resources = allocation[c.name];
    if (!resources) return c;
    const { resources: _, ...rest } = c;
    return Object.keys(resources).length ? { ...rest, resources } : rest;
  };
  return {
    ...pod,
    spec: {
      ...pod.spec,
      ...(pod.spec.initContainers ? { initContainers: pod.spec.initContainers.map(allocate) } : {}),
      containers: pod.spec.containers.map(allocate),
    },
  };
}

/** Whether `pod` asks for other resources than `allocated` gives it: a resize to allocate. */
export function resizeRequested(pod: Pod, allocated: Pod): boolean {
  return (
    JSON.stringify(resourceSummary(pod)) !==
    JSON.stringify(resourceSummary(withAllocation(pod, allocationOf(allocated))))
  );
}

/**
 * What the resize `pod` asks for beyond `allocated` comes to, beside `others()` (the other admitted pods, as
 * allocated) on a node with `allocatable` (absent: not checked): "none" when it asks for none, "allocate" when it
 * fits, else its PodResizePending condition (resizeFit).
 */
export function resizeAllocation(
  pod: Pod,
  allocated: Pod,
  others: () => Pod[],
  allocatable: Requests | undefined,
): "none" | "allocate" | ResizeStatus {
  if (!resizeRequested(pod, allocated)) return "none";
  return (allocatable && resizeFit(pod, others(), allocatable)) || "allocate";
}

/**
 * Whether a resize of `pod` (its requests as its spec now asks) can be allocated beside `others` (the other admitted
 * pods, as allocated) on a node with `allocatable`: undefined when it can, else its PodResizePending condition —
 * Infeasible when the pod alone exceeds the node's allocatable (memory named first, as the Go kubelet), Deferred when
 * it fits the node but not beside the others (retried when they shrink or leave).
 */
export function resizeFit(pod: Pod, others: Pod[], allocatable: Requests): ResizeStatus | undefined {
  const wanted = podRequests(pod);
  if (wanted.memoryBytes > allocatable.memoryBytes || wanted.milliCpu > allocatable.milliCpu) {
    const over =
      wanted.memoryBytes > allocatable.memoryBytes
        ? `memory, requested: ${Math.round(wanted.memoryBytes)}, capacity: ${Math.round(allocatable.memoryBytes)}`
        : `cpu, requested: ${Math.round(wanted.milliCpu)}, capacity: ${Math.round(allocatable.milliCpu)}`;
    return { type: "PodResizePending", reason: "Infeasible", message: `Node didn't have enough capacity: ${over}` };
  }
  const short = insufficientResource(pod, sumRequests(others), allocatable);
  return short && { type: "PodResizePending", reason: "Deferred", message: insufficientResourceMessage(short) };
}

/** A resize waiting for room: the pod as its spec asks, as allocated, and since when it waits (ms; NaN = unknown). */
export interface PendingResize {
  pod: Pod;
  allocated: Pod;
  since: number;
}

/**
 * The order deferred resizes are tried in, the Go kubelet's sortPendingResizes: resizes that increase no request
 * first, then higher spec.priority, then Guaranteed pods, then those waiting longest (unknown last).
 */
export function pendingResizeOrder<T extends PendingResize>(pending: T[]): T[] {
  const increasing = (p: T) => {
    const [was, wants] = [podRequests(p.allocated), podRequests(p.pod)];
    return wants.milliCpu > was.milliCpu || wants.memoryBytes > was.memoryBytes;
  };
  const guaranteed = (p: T) => podQosClass(p.pod) === "Guaranteed";
  const since = (p: T) => (Number.isNaN(p.since) ? Infinity : p.since);
  return [...pending].sort(
    (a, b) =>
      Number(increasing(a)) - Number(increasing(b)) ||
      (b.pod.spec.priority ?? 0) - (a.pod.spec.priority ?? 0) ||
      Number(guaranteed(b)) - Number(guaranteed(a)) ||
      since(a) - since(b),
  );
}

/**
 * A resize event's message, the Go kubelet's (events.podResizeMessage): `Pod resize started: {"containers":[{"name":
 * "app","resources":{"limits":{"cpu":"500m"}}}],"generation":1}`, with `"error"` when one is given.
 */
export function resizeEventMessage(prefix: string, pod: Pod, error?: string): string {
  return `${prefix}: ${JSON.stringify({
    ...resourceSummary(pod),
    generation: pod.metadata.generation ?? 0,
    ...(error ? { error } : {}),
  })}`;
}

/** Each container's resources, keys sorted as Go's encoding/json writes a map. */
function resourceSummary(pod: Pod) {
  const summary = (c: V1Container) => ({ name: c.name, resources: sorted(c.resources ?? {}) });
  const inits = (pod.spec.initContainers ?? []).map(summary);
  return { ...(inits.length ? { initContainers: inits } : {}), containers: pod.spec.containers.map(summary) };
}

/** A value with its object keys sorted and its numbers as quantity strings. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value !== "object" || value === null) return typeof value === "number" ? String(value) : value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
  );
}
