// Kubernetes-style events (Pulled, Started, BackOff, Unhealthy…) kept in a bounded ring
// for GET /events and for runonce's failure reasons, and logged as the kubelet's account of its work:
// one line per pod lifecycle step, `namespace/name: Pulling image "…"`, repeats folded as the events are.
import { systemClock, type Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";

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
    /** Said in the log line only (the event keeps Kubernetes' message): `grace period 30s`. */
    note?: string,
  ): void;
  /** Oldest first. */
  list(): KubeEvent[];
  /** Calls `listener` with each event recorded (new or counted again) and each dropped from the ring; returns its stop. */
  subscribe(listener: (event: KubeEvent, change: "recorded" | "dropped") => void): () => void;
}

/** The node as an event's involved object. */
export function nodeRef(name: string): { kind: "Node"; metadata: { namespace: string; name: string; uid: string } } {
  return { kind: "Node", metadata: { namespace: "", name, uid: name } };
}

/** Reasons logged once per node, however many pods they concern; each pod's event stays in /events. */
const ONCE_PER_NODE = new Set(["MissingClusterDNS"]);

export interface EventRecorderOptions {
  capacity?: number;
  clock?: Clock;
  log?: Logger;
  /** The level of Normal events' lines: info (default, `run`), or debug where the caller shows progress itself (runonce). */
  normalLevel?: "info" | "debug";
}

export function createEventRecorder(options: EventRecorderOptions = {}): EventRecorder {
  const capacity = options.capacity ?? 1000;
  const clock = options.clock ?? systemClock;
  const byKey = new Map<string, KubeEvent>();
  const saidOnce = new Set<string>();
  const listeners = new Set<(event: KubeEvent, change: "recorded" | "dropped") => void>();
  const tell = (event: KubeEvent, change: "recorded" | "dropped") => {
    for (const listener of listeners) listener(event, change);
  };

  /** The event's line: the first of a kind, then its 2nd, 4th, 8th… repeat, so a loop is seen but does not flood. */
  const logEvent = (event: KubeEvent, note: string | undefined) => {
    const log = options.log;
    if (!log) return;
    const { kind, namespace, name, fieldPath } = event.involvedObject;
    const fields = {
      [kind === "Node" ? "node" : "pod"]: kind === "Node" ? name : `${namespace}/${name}`,
      reason: event.reason,
      ...(fieldPath ? { fieldPath } : {}),
    };
    if (ONCE_PER_NODE.has(event.reason)) {
      if (saidOnce.has(event.reason)) return;
      saidOnce.add(event.reason);
      const general = event.message.replace(/^pod: "[^"]*"\. /, "");
      return log.warn(`${event.reason}: ${general} (said once for all pods; each pod's event is in /events)`, fields);
    }
    if (event.count & (event.count - 1)) return;
    const who = kind === "Node" ? `node ${name}` : `${namespace}/${name}`;
    const line = `${who}: ${event.message}${note ? ` (${note})` : ""}${event.count > 1 ? ` (${event.count} times)` : ""}`;
    if (event.type === "Warning") log.warn(line, fields);
    else if (options.normalLevel === "debug") log.debug(line, fields);
    else log.info(line, fields);
  };

  return {
    record(pod, type, reason, message, fieldPath, note) {
      const { namespace, name, uid } = pod.metadata;
      const key = `${uid}\0${fieldPath ?? ""}\0${reason}\0${message}`;
      const now = new Date(clock.now()).toISOString();
      let event = byKey.get(key);
      if (event) {
        byKey.delete(key); // re-insert so Map order stays "last seen" order
        event.count++;
        event.lastTimestamp = now;
        byKey.set(key, event);
      } else {
        event = {
          type,
          reason,
          message,
          involvedObject: { kind: pod.kind ?? "Pod", namespace, name, uid, ...(fieldPath ? { fieldPath } : {}) },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        };
        byKey.set(key, event);
        if (byKey.size > capacity) {
          const oldest = byKey.keys().next().value!;
          const dropped = byKey.get(oldest)!;
          byKey.delete(oldest);
          tell(dropped, "dropped");
        }
      }
      logEvent(event, note);
      tell(event, "recorded");
    },
    list: () => [...byKey.values()],
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
