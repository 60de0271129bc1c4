// Layer node/: the managers that serve every pod on the node — images (pulls, policies, QPS),
// volumes, probes, back-off, the event recorder (this file), image and container GC, eviction,
// the stats analyzer and node status. Imports api/, the container/ Runtime port and the shared
// log, clock and metrics; never sync/ or server/.
//
// Kubernetes-style events (Pulled, Started, BackOff, Unhealthy…) kept in a bounded ring
// for GET /events and for runonce's failure reasons.
import { systemClock, type Clock } from "../clock.ts";
import type { Logger } from "../log.ts";

/** A Kubernetes core/v1 Event, trimmed to what a standalone kubelet can fill in. */
export interface KubeEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  involvedObject: { kind: "Pod" | "Node"; namespace: string; name: string; uid: string; fieldPath?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
}

/** Records events; repeats of the same object/reason/message are folded into one with a count. */
export interface EventRecorder {
  record(
    /** A pod, or the node (kind "Node": image GC, eviction, system OOM). */
    pod: { kind?: "Pod" | "Node"; metadata: { namespace: string; name: string; uid: string } },
    type: KubeEvent["type"],
    reason: string,
    message: string,
    fieldPath?: string,
  ): void;
  /** Oldest first. */
  list(): KubeEvent[];
}

/** The node as an event's involved object. */
export function nodeRef(name: string): { kind: "Node"; metadata: { namespace: string; name: string; uid: string } } {
  return { kind: "Node", metadata: { namespace: "", name, uid: name } };
}

export function createEventRecorder(options: { capacity?: number; clock?: Clock; log?: Logger } = {}): EventRecorder {
  const capacity = options.capacity ?? 1000;
  const clock = options.clock ?? systemClock;
  const byKey = new Map<string, KubeEvent>();
  return {
    record(pod, type, reason, message, fieldPath) {
      const { namespace, name, uid } = pod.metadata;
      const key = `${uid}\0${fieldPath ?? ""}\0${reason}\0${message}`;
      const now = new Date(clock.now()).toISOString();
      const seen = byKey.get(key);
      if (seen) {
        byKey.delete(key); // re-insert so Map order stays "last seen" order
        seen.count++;
        seen.lastTimestamp = now;
        byKey.set(key, seen);
      } else {
        byKey.set(key, {
          type,
          reason,
          message,
          involvedObject: { kind: pod.kind ?? "Pod", namespace, name, uid, ...(fieldPath ? { fieldPath } : {}) },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        });
        if (byKey.size > capacity) byKey.delete(byKey.keys().next().value!);
      }
      const log = type === "Warning" ? options.log?.warn : options.log?.debug;
      log?.call(options.log, message, {
        [pod.kind === "Node" ? "node" : "pod"]: pod.kind === "Node" ? name : `${namespace}/${name}`,
        reason,
        ...(fieldPath ? { fieldPath } : {}),
      });
    },
    list: () => [...byKey.values()],
  };
}
