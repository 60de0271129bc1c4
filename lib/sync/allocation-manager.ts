// The allocation manager (pkg/kubelet/allocation): admission, allocated resources and their checkpoint, resizes.
import type { Pod } from "../api/types.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { Allocation, AllocationCheckpoint } from "../node/state/allocation-file.ts";
import {
  admissionOrder,
  admitPod,
  OUT_OF_PODS,
  rejectedStatus,
  type AdmissionPolicy,
  type Rejection,
} from "./admission.ts";
import {
  allocationOf,
  pendingResizeOrder,
  resizeAllocation,
  resizeEventMessage,
  withAllocation,
} from "./pod-allocation.ts";
import type { ResizeStatus } from "./pod-status.ts";
import { sumRequests } from "./resource-fit.ts";
import type { StatusManager } from "./status-manager.ts";

export interface AllocationManagerOptions {
  /** --max_pods, the host-namespace sources and the node's allocatable; absent = every pod is admitted as it asks. */
  admission?: AdmissionPolicy;
  /** The node's IP, for a rejected pod's status. */
  hostIP: string;
}

export interface AllocationManagerDeps {
  events: EventRecorder;
  /** The pods a source wants now, as their specs ask, in the order the loop first saw them. */
  pods(): Pod[];
  /** A rejection is reported as the pod's status; a deferred resize waits since its condition's transition. */
  statuses: Pick<StatusManager, "get" | "set" | "changed">;
  /** Asks for a pass of the pod: it was admitted after all, or its pending resize was allocated or changed. */
  sync(uid: string): void;
  /** Keeps the allocations across kubelet restarts: a deferred resize stays deferred. */
  checkpoint?: AllocationCheckpoint;
}

export interface AllocationManager {
  /** The pod with the resources allocated to it (what it is synced and reported with); undefined when none is. */
  allocated(uid: string): Pod | undefined;
  /** The resize the pod asks for that is not allocated: its PodResizePending condition (Deferred or Infeasible). */
  pending(uid: string): ResizeStatus | undefined;
  /** Why the pod is not admitted (it is reported as Failed and none of its containers run). */
  rejection(uid: string): Rejection | undefined;
  /**
   * Decides a new or changed pod against the pods admitted before it. A rejection is reported once (status, Warning
   * event); a pod admitted before (`held`) is decided with the resources it was allocated: an edit of them is a resize,
   * which never rejects it.
   */
  admit(pod: Pod, held?: boolean): void;
  /** No source wants the pod any more: its rejection and pending resize go; its allocation stays until remove(). */
  release(uid: string): void;
  /** The pod's record ended: its allocation goes, from the checkpoint too. */
  remove(uid: string): void;
  /** Checkpointed allocations of pods no source wants (the Go kubelet's RemoveOrphanedPods) go. */
  removeOrphans(isWanted: (uid: string) => boolean): void;
  /**
   * Deferred resizes, tried again when room may have been freed (a pod left or shrank) and on every resync, in the Go
   * kubelet's order (pendingResizeOrder; RetryPendingResizes): the pods whose resize is allocated, or whose reason
   * changed, are a new version and sync.
   */
  retryPendingResizes(): void;
  /** Pods refused for lack of room get the room an admitted pod left, oldest first; those admitted sync. */
  readmit(): void;
}

/** What the manager keeps of one pod. */
interface PodAllocation {
  allocated?: Pod;
  pending?: ResizeStatus;
  rejected?: Rejection;
}

/**
 * The allocation manager: admits each new or changed pod beside the pods admitted before it, keeps the resources
 * allocated to each (checkpointed in node/state/allocation-file.ts, so a restart loses no deferred resize), and
 * allocates in-place resizes when they fit, Deferred or Infeasible until then (the pure rules are pod-allocation.ts's
 * and admission.ts's). It asks the sync loop for the pods a source wants.
 */
export function createAllocationManager(
  options: AllocationManagerOptions,
  deps: AllocationManagerDeps,
): AllocationManager {
  const { events, statuses } = deps;
  const pods = new Map<string, PodAllocation>();
  const entryOf = (uid: string) => pods.get(uid) ?? pods.set(uid, {}).get(uid)!;
  /** Allocations the run before this one checkpointed, of pods not admitted again yet. */
  const checkpointed = new Map(Object.entries(deps.checkpoint?.load() ?? {}));
  let saved = "";
  /** Checkpoints every allocation, when one changed. */
  const save = () => {
    if (!deps.checkpoint) return;
    const state: Record<string, Allocation> = Object.fromEntries(checkpointed);
    for (const [uid, entry] of pods) if (entry.allocated) state[uid] = allocationOf(entry.allocated);
    const text = JSON.stringify(state);
    if (text === saved) return;
    saved = text;
    deps.checkpoint.save(state);
  };

  /** The pods admitted beside `uid`'s, with the resources allocated to them. */
  const admittedBeside = (uid: string) =>
    deps
      .pods()
      .filter((pod) => pod.metadata.uid !== uid && !pods.get(pod.metadata.uid)?.rejected)
      .map((pod) => pods.get(pod.metadata.uid)?.allocated ?? pod);

  const admit = (pod: Pod, held = false) => {
    const uid = pod.metadata.uid;
    const entry = entryOf(uid);
    // What it was allocated in this run, or in the one before (a kubelet restart does not lose a deferred resize).
    const restored = checkpointed.get(uid);
    checkpointed.delete(uid);
    const allocation = held && entry.allocated ? allocationOf(entry.allocated) : restored;
    const candidate = allocation ? withAllocation(pod, allocation) : pod;
    const policy = options.admission;
    if (!policy) {
      entry.allocated = pod;
      return;
    }
    const admitted = admittedBeside(uid);
    const rejection = admitPod(candidate, admitted.length, policy, sumRequests(admitted));
    const before = entry.rejected;
    entry.rejected = rejection;
    if (!rejection) {
      entry.allocated = candidate;
      if (before) statuses.set(uid, undefined);
      allocateResize(pod, entry);
      save();
      return;
    }
    entry.allocated = undefined;
    entry.pending = undefined;
    save();
    statuses.set(uid, rejectedStatus(rejection, options.hostIP));
    if (before?.message === rejection.message) return;
    // A Warning event is also the log line (the recorder logs warnings).
    events.record(pod, "Warning", rejection.reason, rejection.message);
  };

  /**
   * Allocates the resize `pod` (its spec as it asks) wants when it fits, the Go kubelet's handlePodResourcesResize:
   * Infeasible beyond the node's allocatable, Deferred while the other pods' allocations leave no room (a Warning
   * event when that changes), else allocated (ResizeStarted) and carried out by the pod's next sync. True when
   * allocated.
   */
  const allocateResize = (pod: Pod, entry: PodAllocation): boolean => {
    const { allocated } = entry;
    const pending =
      allocated &&
      resizeAllocation(pod, allocated, () => admittedBeside(pod.metadata.uid), options.admission?.allocatable);
    if (!pending || pending === "none") {
      entry.pending = undefined;
      return false;
    }
    if (pending === "allocate") {
      entry.allocated = pod;
      entry.pending = undefined;
      events.record(pod, "Normal", "ResizeStarted", resizeEventMessage("Pod resize started", pod));
      return true;
    }
    if (entry.pending?.reason !== pending.reason || entry.pending.message !== pending.message)
      events.record(
        pod,
        "Warning",
        `Resize${pending.reason}`,
        resizeEventMessage(`Pod resize ${pending.reason}`, pod, pending.message),
      );
    entry.pending = pending;
    return false;
  };

  return {
    allocated: (uid) => pods.get(uid)?.allocated,
    pending: (uid) => pods.get(uid)?.pending,
    rejection: (uid) => pods.get(uid)?.rejected,
    admit,
    release(uid) {
      const entry = pods.get(uid);
      if (!entry) return;
      entry.rejected = undefined;
      entry.pending = undefined;
    },
    remove(uid) {
      pods.delete(uid);
      save();
    },
    removeOrphans(isWanted) {
      for (const uid of checkpointed.keys()) if (!isWanted(uid)) checkpointed.delete(uid);
      save();
    },
    retryPendingResizes() {
      const deferred = deps.pods().flatMap((pod) => {
        const entry = pods.get(pod.metadata.uid);
        if (entry?.pending?.reason !== "Deferred" || entry.rejected) return [];
        const condition = statuses.get(pod.metadata.uid)?.conditions?.find((c) => c.type === "PodResizePending");
        return [{ entry, pod, allocated: entry.allocated!, since: Date.parse(condition?.lastTransitionTime ?? "") }];
      });
      for (const { entry, pod } of pendingResizeOrder(deferred)) {
        const before = entry.pending?.message;
        if (allocateResize(pod, entry) || entry.pending?.message !== before) {
          statuses.changed();
          deps.sync(pod.metadata.uid);
        }
      }
      save();
    },
    readmit() {
      const waiting = deps.pods().filter((pod) => pods.get(pod.metadata.uid)?.rejected?.reason === OUT_OF_PODS);
      for (const pod of admissionOrder(waiting)) {
        admit(pod);
        if (!pods.get(pod.metadata.uid)?.rejected) deps.sync(pod.metadata.uid);
      }
    },
  };
}
