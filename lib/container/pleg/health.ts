// The PLEG's health as upstream's Healthy() (pkg/kubelet/pleg/generic.go, evented.go): unhealthy until a first relist
// succeeds and when the last one is older than the relist threshold, 3 min for the generic PLEG and 10 min while the
// Evented PLEG's stream carries the events (its relist then runs every 300 s). /healthz reports it as "pleg".
import { formatDuration } from "../../api/duration.ts";
import type { Clock } from "../../clock.ts";

/** Upstream's thresholds (pkg/kubelet/kubelet.go genericPlegRelistThreshold, eventedPlegRelistThreshold). */
export const GENERIC_RELIST_THRESHOLD_MS = 180_000;
export const EVENTED_RELIST_THRESHOLD_MS = 600_000;

/** Upstream's plegChannelCapacity: an Evented PLEG with this many events not yet taken by the sync loop is unhealthy. */
export const EVENT_CAPACITY = 1000;

/** Name of the /healthz check. */
export const PLEG_CHECK = "pleg";

export interface PlegHealth {
  /** A relist completed. */
  relisted(): void;
  /** The Evented PLEG's stream opened (true) or broke (false): the threshold follows. */
  streaming(on: boolean): void;
  /** How many events wait for the sync loop (the Evented PLEG's channel). */
  queued(count: number): void;
  /** The /healthz check, upstream's wording in its message. */
  check(): { name: string; ok: boolean; message: string };
  /**
   * When the PLEG was last seen active (ms), as upstream's Healthy() sets kubelet_pleg_last_seen_seconds: the last
   * relist, or now while the Evented PLEG's stream carries the events and its channel is not full; undefined before.
   */
  lastSeen(): number | undefined;
}

/** Go's time.Duration.String() for whole milliseconds: 3m0s, 1h0m0s, 3m5.5s. */
const goDuration = (ms: number) => {
  const text = formatDuration(ms);
  return text.endsWith("h") ? `${text}0m0s` : text.endsWith("m") ? `${text}0s` : text;
};

export function createPlegHealth(options: { clock: Clock }): PlegHealth {
  let lastRelist: number | undefined;
  let streaming = false;
  let waiting = 0;
  let seen: number | undefined;
  return {
    lastSeen() {
      if (streaming && waiting < EVENT_CAPACITY) seen = options.clock.now();
      else if (!streaming && lastRelist !== undefined) seen = lastRelist;
      return seen;
    },
    queued: (count) => void (waiting = count),
    relisted: () => void (lastRelist = options.clock.now()),
    streaming: (on) => void (streaming = on),
    check() {
      // evented.go's own check comes first, then the generic PLEG's at the threshold in effect.
      if (waiting >= EVENT_CAPACITY)
        return {
          name: PLEG_CHECK,
          ok: false,
          message: `EventedPLEG: pleg event channel capacity is full with ${waiting} events`,
        };
      if (lastRelist === undefined) return { name: PLEG_CHECK, ok: false, message: "pleg has yet to be successful" };
      const elapsed = options.clock.now() - lastRelist;
      const threshold = streaming ? EVENTED_RELIST_THRESHOLD_MS : GENERIC_RELIST_THRESHOLD_MS;
      if (elapsed > threshold)
        return {
          name: PLEG_CHECK,
          ok: false,
          message: `pleg was last seen active ${goDuration(elapsed)} ago; threshold is ${goDuration(threshold)}`,
        };
      return { name: PLEG_CHECK, ok: true, message: "ok" };
    },
  };
}
