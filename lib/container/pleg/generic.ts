// The Go kubelet's generic PLEG for runtimes without an event stream (containerd 1.6 has no
// GetContainerEvents): relist every period and turn the difference into lifecycle events, the
// same PodLifecycleEventTypes the Docker adapter maps the Engine's events to, so the sync loop is
// triggered the same way.
import type { Clock } from "../../clock.ts";
import type { ContainerState, LifecycleEventType, RuntimeEvent } from "../runtime.ts";

/** What a relist sees of one container (or sandbox). */
export interface RelistEntry {
  id: string;
  state: ContainerState;
  labels: Record<string, string>;
}

/** The generic PLEG's states: "created" is not used by the kubelet, so it counts as unknown (as in Go). */
type PlegState = "running" | "exited" | "unknown" | "nonexistent";

const plegState = (state: ContainerState | undefined): PlegState =>
  state === undefined
    ? "nonexistent"
    : state === "CONTAINER_RUNNING"
      ? "running"
      : state === "CONTAINER_EXITED"
        ? "exited"
        : "unknown";

/** The events that take a container from `before` (undefined: not listed) to `after` (the Go PLEG's generateEvents). */
export function transitions(
  before: ContainerState | undefined,
  after: ContainerState | undefined,
): LifecycleEventType[] {
  const [from, to] = [plegState(before), plegState(after)];
  if (from === to) return [];
  if (to === "running") return ["ContainerStarted"];
  if (to === "exited") return ["ContainerDied"];
  if (to === "unknown") return ["ContainerChanged"];
  return from === "exited" ? ["ContainerRemoved"] : ["ContainerDied", "ContainerRemoved"];
}

/**
 * Relists every `periodMs` until the signal aborts. The first relist is the baseline: what exists
 * then raises no event (the sync loop's first full sync covers it).
 */
export async function* relistEvents(
  relist: () => Promise<RelistEntry[]>,
  options: {
    periodMs: number;
    clock: Clock;
    signal: AbortSignal;
    /** Each relist's duration and the interval since the previous one began, seconds (the Go PLEG's metrics). */
    relisted?(durationSeconds: number, intervalSeconds: number | undefined): void;
  },
): AsyncGenerator<RuntimeEvent> {
  const { clock, signal } = options;
  let known: Map<string, RelistEntry> | undefined;
  let lastStart: number | undefined;
  while (!signal.aborted) {
    const start = clock.now();
    const now = new Map((await relist()).map((e) => [e.id, e]));
    options.relisted?.((clock.now() - start) / 1000, lastStart === undefined ? undefined : (start - lastStart) / 1000);
    lastStart = start;
    if (known) {
      const time = clock.now();
      for (const id of new Set([...known.keys(), ...now.keys()])) {
        const before = known.get(id);
        const after = now.get(id);
        for (const type of transitions(before?.state, after?.state))
          yield { type, containerId: id, labels: (after ?? before)!.labels, time };
      }
    }
    known = now;
    try {
      await clock.sleep(options.periodMs, signal);
    } catch {
      return;
    }
  }
}
