// Housekeeping after each full listing (the Go kubelet's HandlePodCleanups): orphans cleaned up, figures set.
import type { KubeletMetrics, WorkingPods } from "../metrics.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import type { AllocationManager } from "./allocation-manager.ts";
import { nothingObserved, type Observed } from "./pod-plan.ts";
import type { PodWorkerState } from "./pod-workers.ts";

export interface HousekeepingDeps {
  volumes: Pick<VolumeManager, "podDirs" | "teardown">;
  cgroups?: Pick<CgroupManager, "removeOrphans">;
  allocations: Pick<AllocationManager, "removeOrphans">;
  metrics: Pick<KubeletMetrics, "setRunning" | "setWorkingPods">;
}

/** One pod worker as kubelet_working_pods counts it. */
export interface WorkerView {
  state: PodWorkerState;
  /** A source wants the pod now. */
  wanted: boolean;
  /** Its spec is known (wanted now or before); false for a pod found on the runtime only. */
  known: boolean;
}

/** What the sync loop tells housekeeping of its pods, asked afresh at each step (a pod may be added meanwhile). */
export interface HousekeepingPods {
  /** Every source has reported: only then is a pod no source lists an orphan. */
  sourcesReady: boolean;
  isWanted(uid: string): boolean;
  /** The pods a source wants now. */
  wanted(): Iterable<string>;
  /** Hands a running pod no source wants to its worker, to stop it. */
  stop(uid: string): void;
  /** Every pod worker. */
  workers(): Iterable<WorkerView>;
}

export interface Housekeeping {
  /** Cleans up after a listing of the node (`observed`, by pod UID) and sets the figures. */
  cleanUp(observed: ReadonlyMap<string, Observed>, pods: HousekeepingPods): Promise<void>;
  /**
   * One pod as its pass left it (nothing observed after it was stopped): the running figures follow at once, not at the next
   * listing a sync period later (upstream sets them every 2 s housekeeping).
   */
  podObserved(uid: string, observed: Observed): void;
}

/**
 * Housekeeping: once every source has reported, what no source wants is cleaned up (running pods handed to their
 * workers to stop, checkpointed allocations, leftover pod directories, pod cgroups); the figures of what runs and of
 * the pod workers are set after every listing.
 */
export function createHousekeeping(deps: HousekeepingDeps): Housekeeping {
  /** The last listing, with each pod's later passes put in. */
  let lastObserved = new Map<string, Observed>();
  const setRunning = () => {
    const { runningPods, containers } = runningFigures(lastObserved);
    deps.metrics.setRunning(runningPods, containers);
  };
  return {
    async cleanUp(observed, pods) {
      if (pods.sourcesReady) {
        deps.allocations.removeOrphans(pods.isWanted);
        for (const uid of observed.keys()) if (!pods.isWanted(uid)) pods.stop(uid);
        const dirs = await deps.volumes.podDirs();
        for (const uid of dirs) if (!pods.isWanted(uid) && !observed.has(uid)) await deps.volumes.teardown(uid);
        await deps.cgroups?.removeOrphans(new Set([...pods.wanted(), ...observed.keys()]));
      }
      lastObserved = new Map(observed);
      setRunning();
      deps.metrics.setWorkingPods(workingPods(pods.workers()));
    },
    podObserved(uid, observed) {
      if (nothingObserved(observed)) lastObserved.delete(uid);
      else lastObserved.set(uid, observed);
      setRunning();
    },
  };
}

/** The Go kubelet's figures of a listing: pods with a ready sandbox, and containers (sandboxes aside) by state. */
export function runningFigures(observed: ReadonlyMap<string, Observed>): {
  runningPods: number;
  containers: Record<string, number>;
} {
  const containers: Record<string, number> = {};
  let runningPods = 0;
  for (const { sandboxes, containers: listed } of observed.values()) {
    if (sandboxes.some((s) => s.state === "ready")) runningPods++;
    for (const c of listed) {
      const state = c.running ? "running" : c.state === "CONTAINER_CREATED" ? "created" : "exited";
      containers[state] = (containers[state] ?? 0) + 1;
    }
  }
  return { runningPods, containers };
}

/** kubelet_working_pods: the pod workers by state, by whether a source wants their pod and whether its spec is known. */
export function workingPods(workers: Iterable<WorkerView>): WorkingPods[] {
  const counts = new Map<string, WorkingPods>();
  for (const worker of workers) {
    const lifecycle = worker.state === "syncing" ? "sync" : worker.state;
    const config = worker.wanted ? "desired" : worker.known ? "orphan" : "runtime_only";
    const key = `${lifecycle}/${config}/${worker.known}`;
    const entry = counts.get(key) ?? counts.set(key, { lifecycle, config, static: worker.known, count: 0 }).get(key)!;
    entry.count++;
  }
  return [...counts.values()];
}
