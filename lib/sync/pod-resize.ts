// Pure: in-place resize (KEP-1287) of one running container — whether a manifest edit that changes only its
// resources is applied to it as it runs, restarts it (its resizePolicy says RestartContainer for a changed
// resource), or is already in effect — and the resources a container runs with, as its status reports them.
import { changedFields, containerFieldHashes } from "../api/hash.ts";
import type { V1Container } from "../api/types.ts";
import { containerLinuxResources } from "../container/container-config.ts";
import { LABEL, type ContainerDetails, type LinuxResources } from "../container/runtime.ts";

/** --cpu_cfs_quota and --cpu_cfs_quota_period, which turn a cpu limit into the runtime's quota. */
export interface ResizeOptions {
  cfsQuota?: boolean;
  cfsPeriodUs?: number;
}

export type ResizableResource = "cpu" | "memory";

/** A running container to give new resources without a restart. */
export interface ContainerResize {
  spec: V1Container;
  container: ContainerDetails;
  /** What it runs with now. */
  from: LinuxResources;
  /** What its spec asks for. */
  to: LinuxResources;
  /** The resources that change, cpu first. */
  resources: ResizableResource[];
}

/** What a running container needs for its resources: nothing, a restart (with why), or a resize. */
export type ResizeDecision =
  | { kind: "none" }
  | { kind: "restart"; message: string }
  | { kind: "resize"; resize: ContainerResize };

/** Container fields an edit may change and still be applied in place. */
const RESIZABLE = new Set(["resources", "resizePolicy"]);

/** The container's resizePolicy for a resource: NotRequired unless it says RestartContainer. */
export const resizePolicyOf = (spec: V1Container, resource: ResizableResource) =>
  spec.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy ?? "NotRequired";

/**
 * The resize a running container needs, or undefined when its spec changed beyond its resources (it is replaced, as
 * before) or the runtime does not report what it runs with. `changed`: its spec hash differs from its label's.
 * Removing a limit restarts it: neither runtime can lift a limit in place.
 */
export function planResize(
  spec: V1Container,
  container: ContainerDetails,
  changed: boolean,
  options: ResizeOptions,
): ResizeDecision | undefined {
  const from = container.resources;
  if (!from) return changed ? undefined : { kind: "none" };
  if (changed) {
    const fields = changedFields(container.labels[LABEL.fieldHashes], containerFieldHashes(spec));
    if (!fields?.length || fields.some((f) => !RESIZABLE.has(f))) return undefined;
  }
  const to = containerLinuxResources(spec, options);
  const resources: ResizableResource[] = [];
  if (
    from.cpu_shares !== to.cpu_shares ||
    from.cpu_quota !== to.cpu_quota ||
    (to.cpu_quota > 0 && from.cpu_period !== to.cpu_period)
  )
    resources.push("cpu");
  if (from.memory_limit_in_bytes !== to.memory_limit_in_bytes) resources.push("memory");
  if (resources.length === 0) return { kind: "none" };
  const lifted =
    (from.cpu_quota > 0 && to.cpu_quota === 0) || (from.memory_limit_in_bytes > 0 && to.memory_limit_in_bytes === 0);
  // The Go kubelet's words (computePodResizeAction), whichever made the restart necessary.
  if (lifted || resources.some((r) => resizePolicyOf(spec, r) === "RestartContainer"))
    return { kind: "restart", message: `Container ${spec.name} resize requires restart` };
  return { kind: "resize", resize: { spec, container, from, to, resources } };
}

/**
 * The requests and limits a container runs with, in Kubernetes quantities (status.containerStatuses[].resources):
 * the cpu limit from the quota, the cpu request from the shares, the memory limit; the memory request is the one
 * the kubelet allocated (nothing at the runtime holds it).
 */
export function runningResources(r: LinuxResources, spec: V1Container) {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (r.cpu_shares > 2 || spec.resources?.requests?.cpu !== undefined)
    requests.cpu = `${Math.ceil((r.cpu_shares * 1000) / 1024)}m`;
  const memoryRequest = spec.resources?.requests?.memory ?? spec.resources?.limits?.memory;
  if (memoryRequest !== undefined) requests.memory = String(memoryRequest);
  if (r.cpu_quota > 0 && r.cpu_period > 0) limits.cpu = `${Math.round((r.cpu_quota * 1000) / r.cpu_period)}m`;
  if (r.memory_limit_in_bytes > 0) limits.memory = String(r.memory_limit_in_bytes);
  return {
    ...(Object.keys(requests).length ? { requests } : {}),
    ...(Object.keys(limits).length ? { limits } : {}),
  };
}

/** A resize in words, for logs and `kubelet plan`: `cpu limit 200m → 500m, memory limit 33554432 → 67108864`. */
export function describeResize(from: LinuxResources, to: LinuxResources): string {
  const cpu = (r: LinuxResources) =>
    r.cpu_quota > 0 && r.cpu_period > 0 ? `${Math.round((r.cpu_quota * 1000) / r.cpu_period)}m` : "none";
  const memory = (r: LinuxResources) => (r.memory_limit_in_bytes > 0 ? String(r.memory_limit_in_bytes) : "none");
  const shares = (r: LinuxResources) => `${Math.ceil((r.cpu_shares * 1000) / 1024)}m`;
  return [
    ["cpu limit", cpu],
    ["cpu request", shares],
    ["memory limit", memory],
  ]
    .map(([what, of]) => [what, (of as typeof cpu)(from), (of as typeof cpu)(to)])
    .filter(([, before, after]) => before !== after)
    .map(([what, before, after]) => `${what} ${before} → ${after}`)
    .join(", ");
}
