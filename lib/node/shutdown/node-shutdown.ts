// Graceful node shutdown, as the Go kubelet's nodeshutdown manager (systemd): with shutdownGracePeriod
// or shutdownGracePeriodByPodPriority set, a delay inhibitor lock is taken from systemd-logind; on
// PrepareForShutdown(true) the pods are stopped group by group, lowest priority first, each group
// within its period (shutdownGracePeriod alone makes two: regular pods within shutdownGracePeriod −
// shutdownGracePeriodCriticalPods, then critical ones), each pod reported Failed with reason
// Terminated, the node NotReady and new pods refused (NodeShutdown); then the lock is released. A
// cancelled shutdown (PrepareForShutdown(false)) takes the lock again and admits pods again.
import type { Pod } from "../../api/types.ts";
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { ShutdownState } from "./shutdown-state.ts";

/** What the manager needs of systemd-logind (lib/node/shutdown/logind.ts over D-Bus; a fake in tests). */
export interface Logind {
  /** InhibitDelayMaxUSec, in ms: the longest logind waits for a delay lock. */
  inhibitDelayMaxMs: number;
  /** Takes a delay lock on shutdown; resolves, once granted, to its release. */
  inhibitShutdown(): Promise<() => Promise<void>>;
  onPrepareForShutdown(listener: (active: boolean) => void): void;
  close(): void;
}

/** One priority group: pods at or above `priority` (and below the next group's) get `periodSeconds`. */
export interface ShutdownGroup {
  priority: number;
  periodSeconds: number;
}

/** The Go kubelet's status of a pod stopped for a node shutdown. */
export const SHUTDOWN_REASON = "Terminated";
export const SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown.";

/** scheduling.SystemCriticalPriority: system-cluster-critical; system-node-critical is 1000 above it. */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
const CLASS_PRIORITY: Record<string, number> = {
  "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY,
  "system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
};

/**
 * The Go kubelet's migrateConfig: shutdownGracePeriod and shutdownGracePeriodCriticalPods as two groups, regular
 * pods (priority 0 and up) and critical ones (2000000000 and up); none when the period is 0.
 */
export function migrateConfig(gracePeriodMs: number, criticalPeriodMs: number): ShutdownGroup[] {
  if (gracePeriodMs === 0 || criticalPeriodMs > gracePeriodMs) return [];
  return [
    { priority: 0, periodSeconds: Math.floor((gracePeriodMs - criticalPeriodMs) / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, periodSeconds: Math.floor(criticalPeriodMs / 1000) },
  ];
}

/** The groups node shutdown stops pods by, lowest priority first: shutdownGracePeriodByPodPriority, else migrated. */
export function shutdownGroups(config: {
  shutdownGracePeriod: number;
  shutdownGracePeriodCriticalPods: number;
  shutdownGracePeriodByPodPriority: Array<{ priority: number; shutdownGracePeriodSeconds: number }>;
}): ShutdownGroup[] {
  const groups = config.shutdownGracePeriodByPodPriority.length
    ? config.shutdownGracePeriodByPodPriority.map((p) => ({
        priority: p.priority,
        periodSeconds: p.shutdownGracePeriodSeconds,
      }))
    : migrateConfig(config.shutdownGracePeriod, config.shutdownGracePeriodCriticalPods);
  return groups.sort((a, b) => a.priority - b.priority);
}

/** A pod's priority: spec.priority, else its system priority class's, else 0. */
export function podPriority(pod: Pod): number {
  return pod.spec.priority ?? CLASS_PRIORITY[pod.spec.priorityClassName ?? ""] ?? 0;
}

/**
 * The Go kubelet's groupByPriority over groups sorted by priority: a pod goes to the group with the largest priority
 * at or below its own; a pod below every group goes to the lowest (and one above every group to the highest).
 */
export function groupPods(pods: Pod[], groups: ShutdownGroup[]): Array<{ group: ShutdownGroup; pods: Pod[] }> {
  const grouped = groups.map((group) => ({ group, pods: [] as Pod[] }));
  for (const pod of pods) {
    const priority = podPriority(pod);
    const index = groups.findLastIndex((g) => g.priority <= priority);
    grouped[Math.max(0, index)]!.pods.push(pod);
  }
  return grouped;
}

export interface NodeShutdownOptions {
  /** Sorted by priority (shutdownGroups). */
  groups: ShutdownGroup[];
  /** The setting the groups come from, for messages: shutdownGracePeriod or shutdownGracePeriodByPodPriority. */
  setting: "shutdownGracePeriod" | "shutdownGracePeriodByPodPriority";
  clock: Clock;
  log: Logger;
}

export interface NodeShutdownDeps {
  /** Connects to logind (lazily loads the D-Bus client); throws when logind is not there. */
  connect(): Promise<Logind>;
  /** The pods that run. */
  activePods(): Pod[];
  /** Stops a pod within `graceSeconds` and reports it Failed with `reason` and `message`. */
  stopPod(pod: Pod, graceSeconds: number, reason: string, message: string): Promise<void>;
  /** The last shutdown's start and end, kept across restarts (lib/node/shutdown/shutdown-state.ts). */
  state?: Pick<ShutdownState, "restore" | "started" | "ended">;
}

export interface NodeShutdownManager {
  /** True from PrepareForShutdown(true) until a cancelling PrepareForShutdown(false): the node is not ready. */
  shuttingDown(): boolean;
  /** Takes the lock and watches for shutdown until the signal aborts (then releases the lock). */
  run(signal: AbortSignal): Promise<void>;
}

export function createNodeShutdownManager(options: NodeShutdownOptions, deps: NodeShutdownDeps): NodeShutdownManager {
  const { clock, log } = options;
  // The Go kubelet's periodRequested: what logind must wait at most.
  const total = options.groups.reduce((n, g) => n + g.periodSeconds, 0);
  const byPriority = options.setting === "shutdownGracePeriodByPodPriority";
  const requested = byPriority ? `shutdownGracePeriodByPodPriority, ${total}s in all` : `shutdownGracePeriod ${total}s`;
  const requestedPeriod = byPriority
    ? `the periods of shutdownGracePeriodByPodPriority together (${total}s)`
    : `shutdownGracePeriod (${total}s)`;
  let shuttingDown = false;
  let release: (() => Promise<void>) | undefined;
  let logind: Logind | undefined;

  const lock = async () => {
    release = await logind!.inhibitShutdown();
    log.info(`holding a delay inhibitor lock on shutdown from systemd-logind (${requested})`);
  };
  const unlock = async () => {
    const held = release;
    release = undefined;
    await held?.();
  };

  /** Stops every group in turn, each within its period, then lets logind go on. */
  const shutDown = async () => {
    log.warn(`node is shutting down: stopping pods within ${total}s`);
    await deps.state?.started();
    for (const { group, pods } of groupPods(deps.activePods(), options.groups)) {
      if (!pods.length) continue;
      log.info(
        `shutting down ${pods.length} pod(s) of priority ${group.priority} and above within ${group.periodSeconds}s`,
      );
      const stopped = Promise.all(
        pods.map((pod) =>
          deps
            .stopPod(
              pod,
              Math.min(pod.spec.terminationGracePeriodSeconds ?? 30, group.periodSeconds),
              SHUTDOWN_REASON,
              SHUTDOWN_MESSAGE,
            )
            .catch((error: Error) => log.warn(`cannot stop pod ${pod.metadata.name} for shutdown: ${error.message}`)),
        ),
      );
      const timedOut = new AbortController();
      await Promise.race([stopped, clock.sleep(group.periodSeconds * 1000, timedOut.signal).catch(() => {})]);
      timedOut.abort();
    }
    await deps.state?.ended();
    await unlock();
    log.info("pods stopped for the shutdown; inhibitor lock released");
  };

  return {
    shuttingDown: () => shuttingDown,
    async run(signal) {
      deps.state?.restore();
      try {
        logind = await deps.connect();
      } catch (error) {
        log.warn(`node shutdown is not watched (${requested}): ${(error as Error).message}`);
        return;
      }
      if (logind.inhibitDelayMaxMs < total * 1000)
        log.warn(
          `systemd-logind's InhibitDelayMaxSec (${logind.inhibitDelayMaxMs / 1000}s) is shorter than ${requestedPeriod}: logind shuts down after ${logind.inhibitDelayMaxMs / 1000}s whatever the pods; raise InhibitDelayMaxSec in /etc/systemd/logind.conf.d/`,
        );
      let work = Promise.resolve();
      logind.onPrepareForShutdown((active) => {
        work = work.then(async () => {
          if (active && !shuttingDown) {
            shuttingDown = true;
            await shutDown();
          } else if (!active && shuttingDown) {
            shuttingDown = false;
            log.info("the shutdown was cancelled: taking the inhibitor lock again");
            await lock();
          }
        });
        work = work.catch((error: Error) => log.warn(`node shutdown handling failed: ${error.message}`));
      });
      try {
        await lock();
        await new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
      } catch (error) {
        log.warn(`node shutdown is not watched: ${(error as Error).message}`);
      } finally {
        await unlock().catch(() => {});
        logind.close();
      }
    },
  };
}
