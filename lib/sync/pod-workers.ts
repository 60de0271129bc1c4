// Pod workers (the Go kubelet's pkg/kubelet/pod_workers.go): one worker per pod, each with an explicit state —
// syncing → terminating → terminated — changed in one place (nextState). A worker runs one pass at a time for its
// pod: a sync, or a termination (preStop hooks, the grace period, the kill), image pulls included. Passes of
// different pods never wait on each other: nothing is shared between workers but the runtime itself. A pod told
// to stop while it syncs has that sync cancelled (its signal aborts), so a stalled pull never delays its kill.
import type { Clock, Timer } from "../clock.ts";

/** Where a pod's worker is: running it towards its spec, stopping it, or done with it (nothing of it runs). */
export type PodWorkerState = "syncing" | "terminating" | "terminated";

/**
 * What the pod should come to, as the sync loop sees it now: `run` (wanted and admitted), `stop` (no source wants
 * it, or it was rejected or evicted: its containers are stopped and removed) or `rest` (it finished, or it is
 * an orphan while not every source has reported: nothing starts, nothing is killed).
 */
export type PodGoal = "run" | "stop" | "rest";

/**
 * The transitions, all of them. A terminating pod finishes its termination before anything else (it leaves only
 * through `terminated()`); a terminated pod that is wanted again (a changed manifest, a re-added file) syncs anew,
 * as the Go kubelet restarts a static pod once its termination completed.
 */
export function nextState(state: PodWorkerState, goal: PodGoal): PodWorkerState {
  if (state === "terminating") return "terminating";
  if (goal === "run") return "syncing";
  if (goal === "stop") return "terminating";
  return "terminated";
}

/** The work of one pod, by state; the sync loop supplies it. */
export interface PodWorkerSteps {
  /** The pod's goal now (asked at the start of each pass). */
  goal(): PodGoal;
  /** One pass of a syncing pod: observe, plan, execute, update its status; `signal` aborts when it must stop. */
  sync(signal: AbortSignal): Promise<void>;
  /** Stops and removes everything of the pod on the runtime (preStop, grace period, kill); resolves when done. */
  terminate(): Promise<void>;
  /** After every pass, with the state it ended in (the loop forgets a terminated pod no source wants). */
  settled(state: PodWorkerState): void;
  /** A pass failed: log it; the worker tries again after `retryMs`. */
  failed(error: Error): void;
}

export interface PodWorker {
  readonly state: PodWorkerState;
  /** A pass is running. */
  readonly busy: boolean;
  /** Asks for a pass now; one asked for while a pass runs starts when it ends (passes coalesce). */
  update(): void;
  /** Asks for a pass in `ms` unless one is asked for sooner (a back-off ends). */
  retryAfter(ms: number): void;
  /** No pass starts any more; a pending retry is cancelled. The pass in flight, if any, ends on its own. */
  stop(): void;
}

export interface PodWorkerOptions {
  clock: Clock;
  /** Wait after a failed pass (default 5 s). */
  retryMs?: number;
}

export function createPodWorker(options: PodWorkerOptions, steps: PodWorkerSteps): PodWorker {
  const { clock } = options;
  let state: PodWorkerState = "syncing";
  let busy = false;
  let again = false;
  let stopped = false;
  let retry: Timer | undefined;
  let syncing: AbortController | undefined;

  // A pass acts on the goal as it is when the pass starts; whatever changes the goal meanwhile asks for another pass.
  const pass = async () => {
    state = nextState(state, steps.goal());
    if (state === "syncing") {
      syncing = new AbortController();
      await steps.sync(syncing.signal).finally(() => (syncing = undefined));
    } else if (state === "terminating") {
      await steps.terminate();
      state = "terminated";
    }
  };

  const run = async () => {
    busy = true;
    try {
      await pass();
    } catch (error) {
      steps.failed(error as Error);
      worker.retryAfter(options.retryMs ?? 5000);
    } finally {
      busy = false;
    }
    if (again && !stopped) {
      again = false;
      worker.update();
    } else steps.settled(state);
  };

  const worker: PodWorker = {
    get state() {
      return state;
    },
    get busy() {
      return busy;
    },
    update() {
      if (stopped) return;
      if (busy) {
        again = true;
        // The sync in flight is cancelled: what the pod waits on (a pull) no longer matters, its kill does.
        if (nextState(state, steps.goal()) !== "syncing") syncing?.abort();
        return;
      }
      retry?.cancel();
      retry = undefined;
      void run();
    },
    retryAfter(ms) {
      if (stopped) return;
      retry?.cancel();
      retry = clock.setTimeout(() => {
        retry = undefined;
        worker.update();
      }, ms);
    },
    stop() {
      stopped = true;
      syncing?.abort();
      retry?.cancel();
      retry = undefined;
    },
  };
  return worker;
}
