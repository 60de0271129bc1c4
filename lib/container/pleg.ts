// The Go kubelet's generic PLEG for runtimes without an event stream (containerd 1.6 has no
// GetContainerEvents): relist every period and turn the difference into lifecycle events, the
// same actions the Docker events stream gives, so the sync loop is triggered the same way.
import type { Clock } from "../clock.ts";
import type { ContainerState, RuntimeEvent } from "./runtime.ts";

/** What a relist sees of one container (or sandbox). */
export interface RelistEntry {
  id: string;
  state: ContainerState;
  labels: Record<string, string>;
}

/** The events that take a container from `before` (undefined: unknown) to `after` (undefined: gone). */
export function transitions(before: ContainerState | undefined, after: ContainerState | undefined): string[] {
  const live = (s: ContainerState | undefined) => s === "running" || s === "restarting" || s === "paused";
  const actions: string[] = [];
  if (before === undefined && after !== undefined) actions.push("create");
  if (!live(before) && live(after)) actions.push("start");
  if (live(before) && !live(after)) actions.push("die");
  if (before !== undefined && after === undefined) actions.push("destroy");
  return actions;
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
        for (const action of transitions(before?.state, after?.state))
          yield { action, containerId: id, labels: (after ?? before)!.labels, time };
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
