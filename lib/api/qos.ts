// Pure: a pod's QoS class and the oom_score_adj the Go kubelet gives its containers by class
// (pkg/kubelet/qos/policy.go), so the kernel kills best-effort work first under memory pressure.
import { parseQuantity } from "./quantity.ts";
import type { Pod, V1Container } from "./types.ts";

/** oom_score_adj of the pod infra container (PodInfraOOMAdj). */
export const POD_INFRA_OOM_SCORE_ADJ = -998;
const GUARANTEED_OOM_SCORE_ADJ = -997;
const BEST_EFFORT_OOM_SCORE_ADJ = 1000;

/** Guaranteed, Burstable or BestEffort, by Kubernetes' rules. */
export function qosClass(pod: Pod): "Guaranteed" | "Burstable" | "BestEffort" {
  const containers = pod.spec.containers;
  const any = containers.some(
    (c) => Object.keys(c.resources?.requests ?? {}).length || Object.keys(c.resources?.limits ?? {}).length,
  );
  if (!any) return "BestEffort";
  const guaranteed = containers.every((c) =>
    ["cpu", "memory"].every(
      (r) =>
        c.resources?.limits?.[r] !== undefined &&
        (c.resources?.requests?.[r] === undefined ||
          String(c.resources.requests[r]) === String(c.resources.limits![r])),
    ),
  );
  return guaranteed ? "Guaranteed" : "Burstable";
}

/** The oom_score_adj of one container: by QoS class; burstable ones by their share of node memory. */
export function containerOomScoreAdj(pod: Pod, container: V1Container, memoryCapacity: number): number {
  const qos = qosClass(pod);
  if (qos === "Guaranteed") return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === "BestEffort") return BEST_EFFORT_OOM_SCORE_ADJ;
  const request = container.resources?.requests?.memory ?? container.resources?.limits?.memory;
  const bytes = request !== undefined ? (parseQuantity(request) ?? 0) : 0;
  const score = memoryCapacity > 0 ? 1000 - Math.floor((1000 * bytes) / memoryCapacity) : BEST_EFFORT_OOM_SCORE_ADJ;
  // Burstable stays strictly between the guaranteed and best-effort scores.
  return Math.min(BEST_EFFORT_OOM_SCORE_ADJ - 1, Math.max(1000 + GUARANTEED_OOM_SCORE_ADJ, score));
}
