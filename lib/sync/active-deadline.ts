// Pure: a pod's activeDeadlineSeconds as the Go kubelet's activeDeadlineHandler judges it: counted from the
// pod's start on this node (status.startTime); once passed, the pod is killed and reported Failed with
// reason DeadlineExceeded (the sync loop does both, as it does for an eviction).
import type { Pod } from "../api/types.ts";

/** The reason and message of a pod past its deadline (status, Warning event), the Go kubelet's words. */
export const DEADLINE_EXCEEDED = {
  reason: "DeadlineExceeded",
  message: "Pod was active on the node longer than the specified deadline",
} as const;

/** Milliseconds until the pod's active deadline (≤ 0: passed); undefined when it has none. */
export function activeDeadlineRemainingMs(pod: Pod, startedAt: number, now: number): number | undefined {
  const seconds = pod.spec.activeDeadlineSeconds;
  return seconds === undefined || seconds === null ? undefined : startedAt + seconds * 1000 - now;
}
