// The Go kubelet's Evented PLEG (pkg/kubelet/pleg/evented.go): lifecycle events from the runtime's own stream
// (CRI GetContainerEvents), the generic relist kept behind it at the long period, at once and every second while
// the stream is down, and for good where the runtime does not serve it. One table of what is known, stamped with
// the time each entry was last true, takes both sources, so a transition is raised once whichever tells it first.
import type { Clock } from "../../clock.ts";
import type { ContainerState, RuntimeEvent } from "../runtime.ts";
import { isRuntimeError } from "../runtime.ts";
import { transitions, type RelistEntry } from "./generic.ts";
import type { PlegHealth } from "./health.ts";

/** One event of the runtime's stream, as the entry it makes true: `state` undefined when the container was deleted. */
export interface StreamedEntry {
  id: string;
  state: ContainerState | undefined;
  labels: Record<string, string>;
  /** When the runtime says it happened, nanoseconds since the epoch. */
  createdAtNs: number;
}

/** Upstream's periods (pkg/kubelet/kubelet.go): the relist behind a working stream, and the relist without one. */
export const EVENTED_RELIST_PERIOD_MS = 300_000;
export const GENERIC_RELIST_PERIOD_MS = 1_000;

/** gRPC's connection back-off (1 s, ×1.6, at most 120 s), which the Go kubelet's stream retries ride on. */
export function streamRetryDelayMs(failures: number): number {
  return Math.min(Math.round(1000 * 1.6 ** Math.max(0, failures - 1)), 120_000);
}

export interface EventedPlegOptions {
  clock: Clock;
  signal: AbortSignal;
  /** The relist behind a working stream (300 s) and without one (1 s). */
  eventedRelistPeriodMs?: number;
  relistPeriodMs?: number;
  log: { info(message: string): void; warn(message: string): void };
  /** Each relist's duration and the interval since the previous one began, seconds (the generic PLEG's metrics). */
  relisted?(durationSeconds: number, intervalSeconds: number | undefined): void;
  /** kubelet_evented_pleg_connection_success_count / _error_count / _latency_seconds. */
  connected?(): void;
  connectionFailed?(): void;
  eventLatency?(seconds: number): void;
  /** Told of each relist, the stream's state and the events waiting (pleg/health.ts, /healthz's "pleg"). */
  health?: Pick<PlegHealth, "relisted" | "streaming" | "queued">;
}

interface Known {
  state: ContainerState | undefined;
  labels: Record<string, string>;
  /** The time (ns) the entry was last known true: older news of it is stale. */
  stampNs: number;
}

/**
 * Lifecycle events until the signal aborts; throws when a relist fails (the runtime is away), as the generic PLEG
 * does. The first relist is the baseline: what exists then raises no event unless the stream already spoke of it.
 */
export async function* eventedEvents(
  relist: () => Promise<RelistEntry[]>,
  openStream: (signal: AbortSignal, opened: () => void) => AsyncIterable<StreamedEntry>,
  options: EventedPlegOptions,
): AsyncGenerator<RuntimeEvent> {
  const { clock } = options;
  // The loops stop with the caller's signal, and also when this generator ends (a failed relist, a reader gone).
  const inner = new AbortController();
  const stopInner = () => inner.abort();
  options.signal.addEventListener("abort", stopInner, { once: true });
  const signal = inner.signal;
  const eventedPeriod = options.eventedRelistPeriodMs ?? EVENTED_RELIST_PERIOD_MS;
  const genericPeriod = options.relistPeriodMs ?? GENERIC_RELIST_PERIOD_MS;
  const known = new Map<string, Known>();
  const queue: RuntimeEvent[] = [];
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  let streaming = false;
  let baselined = false;
  let relistWanted = false;
  let endWait = () => {};
  /** Has the relist loop list again as soon as it can: at once when waiting, else right after the list under way. */
  const relistNow = () => {
    relistWanted = true;
    endWait();
  };

  /** Makes `state` the entry's, unless newer news is known; raises its transitions when `emit`. */
  const apply = (
    id: string,
    state: ContainerState | undefined,
    labels: Record<string, string>,
    stampNs: number,
    emit: boolean,
  ) => {
    const before = known.get(id);
    if (before && stampNs < before.stampNs) return;
    // A container's labels never change; the first told are kept (a deleted one's event may carry only its pod's).
    known.set(id, { state, labels: before?.labels ?? labels, stampNs });
    if (!emit) return;
    // Upstream's Evented PLEG raises nothing for a container created; its generic PLEG, the Docker adapter and the
    // runtime contract raise ContainerChanged, and so does this one: the same events whichever PLEG runs.
    const time = clock.now();
    for (const type of transitions(before?.state, state))
      queue.push({ type, containerId: id, labels: known.get(id)!.labels, time });
    options.health?.queued(queue.length);
    notify();
  };

  const relistOnce = async (previousStart: number | undefined) => {
    relistWanted = false;
    const start = clock.now();
    const stampNs = start * 1e6;
    const listed = new Map((await relist()).map((e) => [e.id, e]));
    options.health?.relisted();
    options.relisted?.(
      (clock.now() - start) / 1000,
      previousStart === undefined ? undefined : (start - previousStart) / 1000,
    );
    // What was known first, then what is new, in that order (the order events are raised in).
    for (const [id, before] of known) {
      if (before.stampNs > stampNs) continue; // the stream spoke of it after this list was taken
      const entry = listed.get(id);
      if (!entry && before.state === undefined) {
        known.delete(id); // a deletion the list confirms: nothing later can be news of it
        continue;
      }
      // Unchanged, the relist's usual answer: only the time it was last true moves, nothing is raised or woken.
      if (entry && entry.state === before.state) before.stampNs = stampNs;
      else apply(id, entry?.state, entry?.labels ?? before.labels, stampNs, true);
    }
    for (const [id, entry] of listed) if (!known.has(id)) apply(id, entry.state, entry.labels, stampNs, baselined);
    baselined = true;
    return start;
  };

  const relistLoop = async () => {
    let previousStart: number | undefined;
    while (!signal.aborted) {
      previousStart = await relistOnce(previousStart);
      if (relistWanted || signal.aborted) continue;
      const interrupt = new AbortController();
      endWait = () => interrupt.abort();
      signal.addEventListener("abort", endWait, { once: true });
      await clock.sleep(streaming ? eventedPeriod : genericPeriod, interrupt.signal).catch(() => {});
      signal.removeEventListener("abort", endWait);
      endWait = () => {};
    }
  };

  const streamLoop = async () => {
    let failures = 0;
    while (!signal.aborted) {
      try {
        const opened = () => {
          options.connected?.();
          if (failures > 0)
            options.log.info(`container events stream open again: relisting every ${eventedPeriod / 1000}s behind it`);
          streaming = true;
          options.health?.streaming(true);
          failures = 0;
          // A relist right after (re)connecting reconciles what the stream could not have told.
          relistNow();
        };
        for await (const e of openStream(signal, opened)) {
          options.eventLatency?.(Math.max(0, clock.now() - e.createdAtNs / 1e6) / 1000);
          apply(e.id, e.state, e.labels, e.createdAtNs, true);
        }
        return; // aborted
      } catch (error) {
        if (signal.aborted) return;
        options.connectionFailed?.();
        const wasStreaming = streaming;
        streaming = false;
        options.health?.streaming(false);
        // What the stream would have told since it broke is relisted at once; a stream that never opened left the
        // relist at its short period all along.
        if (wasStreaming) relistNow();
        if (isRuntimeError(error, "Unimplemented")) {
          options.log.info(`${(error as Error).message}: relisting every ${genericPeriod / 1000}s (the generic PLEG)`);
          return;
        }
        failures++;
        const delay = streamRetryDelayMs(failures);
        if (wasStreaming || failures === 1)
          options.log.warn(
            `container events stream lost: ${(error as Error).message}; relisting every ${genericPeriod / 1000}s until it is back (next try in ${delay / 1000}s)`,
          );
        await clock.sleep(delay, signal).catch(() => {});
      }
    }
  };

  const loops = [
    relistLoop().catch((error: Error) => {
      failure = error;
      notify();
    }),
    streamLoop(),
  ];
  signal.addEventListener("abort", notify, { once: true });
  try {
    while (!signal.aborted) {
      const event = queue.shift();
      if (event) {
        options.health?.queued(queue.length);
        yield event;
        continue;
      }
      if (failure) throw failure;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    options.signal.removeEventListener("abort", stopInner);
    inner.abort();
    await Promise.all(loops);
  }
}
