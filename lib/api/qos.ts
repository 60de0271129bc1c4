// Pure: a pod's QoS class, its cgroup's resource totals and each container's oom_score_adj, with
// the kubelet's own rules (pkg/apis/core/v1/helper/qos, pkg/kubelet/cm/helpers_linux.go,
// pkg/kubelet/qos/policy.go).
import { milliCpu, parseQuantity } from "./quantity.ts";
import { isSidecar, type Pod, type V1Container } from "./types.ts";

export type QosClass = "Guaranteed" | "Burstable" | "BestEffort";

/** oom_score_adj of Guaranteed containers and of the pod sandbox, as the kubelet sets them. */
export const GUARANTEED_OOM_SCORE_ADJ = -997;
export const POD_INFRA_OOM_SCORE_ADJ = -998;
export const BESTEFFORT_OOM_SCORE_ADJ = 1000;

const COMPUTE = ["cpu", "memory"] as const;

/** A container's cpu (millicores) and memory (bytes) requests and limits; an unset request defaults to the limit. */
export function containerResources(container: V1Container): {
  requests: { cpu?: number; memory?: number };
  limits: { cpu?: number; memory?: number };
} {
  const read = (values: Record<string, string | number> | undefined) => ({
    ...(values?.cpu !== undefined ? { cpu: milliCpu(values.cpu) } : {}),
    ...(values?.memory !== undefined ? { memory: parseQuantity(values.memory) } : {}),
  });
  const limits = read(container.resources?.limits as Record<string, string | number> | undefined);
  const requests = { ...limits, ...read(container.resources?.requests as Record<string, string | number> | undefined) };
  return { requests, limits };
}

/** The kubelet's GetPodQOS over init and app containers. */
export function podQosClass(pod: Pod): QosClass {
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const { requests, limits } = containerResources(c);
    for (const name of COMPUTE) {
      if ((requests[name] ?? 0) > 0 || limits[name] !== undefined) any = true;
      if (limits[name] === undefined || requests[name] !== limits[name]) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

/**
 * The pod's effective requests and limits as the scheduler and the kubelet count them (resourcehelper.PodRequests):
 * the app containers' sum plus every sidecar's, or the largest need during initialization if greater — a regular
 * init container's own plus the sidecars started before it.
 */
export function podTotals(pod: Pod): {
  requests: { cpu: number; memory: number };
  /** undefined when some container has no limit for that resource (the pod is then unbounded in it). */
  limits: { cpu?: number; memory?: number };
} {
  const apps = pod.spec.containers.map(containerResources);
  const inits = (pod.spec.initContainers ?? []).map((c) => ({ sidecar: isSidecar(c), ...containerResources(c) }));
  const total = (name: (typeof COMPUTE)[number], of: (r: ReturnType<typeof containerResources>) => number) => {
    let sum = apps.reduce((n, r) => n + of(r), 0);
    let sidecars = 0;
    let initPeak = 0;
    for (const init of inits) {
      if (init.sidecar) {
        sum += of(init);
        sidecars += of(init);
      }
      initPeak = Math.max(initPeak, init.sidecar ? sidecars : of(init) + sidecars);
    }
    return Math.max(sum, initPeak);
  };
  const requests = { cpu: 0, memory: 0 };
  const limits: { cpu?: number; memory?: number } = {};
  for (const name of COMPUTE) {
    requests[name] = total(name, (r) => r.requests[name] ?? 0);
    if ([...apps, ...inits].every((r) => r.limits[name] !== undefined))
      limits[name] = total(name, (r) => r.limits[name]!);
  }
  return { requests, limits };
}

/** The kubelet's GetContainerOOMScoreAdjust: Guaranteed -997, BestEffort 1000, Burstable by its memory request. */
export function containerOomScoreAdj(pod: Pod, container: V1Container, memoryCapacity: number): number {
  const qos = podQosClass(pod);
  if (qos === "Guaranteed") return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === "BestEffort") return BESTEFFORT_OOM_SCORE_ADJ;
  const byRequest = (request: number) =>
    memoryCapacity > 0 ? 1000 - Math.trunc((1000 * request) / memoryCapacity) : 1000;
  let adjust = byRequest(containerResources(container).requests.memory ?? 0);
  // A sidecar is killed no sooner than the app containers: at most the score of the smallest app memory request.
  if ((pod.spec.initContainers ?? []).includes(container) && isSidecar(container)) {
    const smallest = Math.min(...pod.spec.containers.map((c) => containerResources(c).requests.memory ?? 0));
    adjust = Math.min(adjust, byRequest(smallest));
  }
  // Burstable stays above any Guaranteed container and below BestEffort.
  if (adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (adjust === BESTEFFORT_OOM_SCORE_ADJ) return adjust - 1;
  return adjust;
}
