// In-place resize (KEP-1287) of running containers on the runtime, pod cgroup first and last (doPodResizeAction).
import type { Logger } from "../log.ts";
import type { LinuxResources, Runtime } from "../container/runtime.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { EventRecorder } from "../node/events/events.ts";
import { podKey, type Pod } from "../api/types.ts";
import { resizeEventMessage } from "./pod-allocation.ts";
import { describeResize, type ContainerResize } from "./pod-resize.ts";
import type { ResizeStatus } from "./pod-status.ts";

export interface ContainerResizerDeps {
  runtime: Pick<Runtime, "stats" | "updateContainerResources">;
  /** Pod cgroups (cgroupsPerQOS); absent = Docker's default cgroup. */
  cgroups?: Pick<CgroupManager, "resizePod">;
  log: Logger;
  events: EventRecorder;
}

/** Resizes `resizes` of `pod` (the ids resized go to `done.resized`); returns the condition of what is left undone. */
export type ContainerResizer = (
  pod: Pod,
  resizes: ContainerResize[],
  done: { resized: string[] },
) => Promise<ResizeStatus | undefined>;

/**
 * Applies resizes to running containers, the pod cgroup grown before them and set to its new size after them (the
 * Go kubelet's order). The pod comes with its allocated resources (the sync loop decides whether a resize fits the
 * node: Deferred, Infeasible). A memory limit below what the container uses now is left as it is, the rest applied
 * (PodResizeInProgress, Error, in the Go kubelet's words).
 */
export function createContainerResizer(deps: ContainerResizerDeps): ContainerResizer {
  const { runtime, log, events } = deps;
  return async (
    pod: Pod,
    resizes: ContainerResize[],
    done: { resized: string[] },
  ): Promise<ResizeStatus | undefined> => {
    const refused: string[] = [];
    const updates: Array<[ContainerResize, LinuxResources]> = [];
    for (const r of resizes) {
      let to = r.to;
      if (r.resources.includes("memory") && to.memory_limit_in_bytes < r.from.memory_limit_in_bytes) {
        const usage = (await runtime.stats(r.container.id)).memoryWorkingSetBytes;
        if (usage > to.memory_limit_in_bytes) {
          refused.push(
            `attempting to set container "${r.spec.name}" memory limit (${to.memory_limit_in_bytes}) below current usage (${usage})`,
          );
          to = { ...to, memory_limit_in_bytes: r.from.memory_limit_in_bytes };
        }
      }
      updates.push([r, to]);
    }
    // One refusal as it is, several as a list (the Go kubelet's aggregated errors).
    const blocked = refused.length
      ? `cannot decrease memory limits: ${refused.length === 1 ? refused[0] : `[${refused.join(", ")}]`}`
      : undefined;
    await deps.cgroups?.resizePod(pod, "grow");
    for (const [r, to] of updates) {
      await runtime.updateContainerResources(r.container.id, to);
      log.info(`pod ${podKey(pod)}: resized container ${r.spec.name} in place (${describeResize(r.from, to)})`);
      done.resized.push(r.container.id);
    }
    // While a decrease waits, the pod cgroup keeps room for what its container still has.
    if (!blocked) await deps.cgroups?.resizePod(pod, "final");
    if (blocked) events.record(pod, "Warning", "ResizeError", resizeEventMessage("Pod resize error", pod, blocked));
    else events.record(pod, "Normal", "ResizeCompleted", resizeEventMessage("Pod resize completed", pod));
    return blocked ? { type: "PodResizeInProgress", reason: "Error", message: blocked } : undefined;
  };
}
