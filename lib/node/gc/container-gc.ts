// Container garbage collection on its own timer (the Go kubelet's container GC, once a minute):
// dead containers older than --minimum_container_ttl_duration beyond
// --maximum_dead_containers_per_container per container, every dead container of a pod no source
// wants, then the oldest across the node beyond --maximum_dead_containers; then the sandboxes
// (kuberuntime_gc.go's evictSandboxes): a sandbox that is not ready and holds no container goes when
// no source wants its pod, or when a newer sandbox of its pod exists.
import type { Clock } from "../../clock.ts";
import {
  isRuntimeError,
  LABEL,
  type ContainerSummary,
  type PodSandboxSummary,
  type Runtime,
} from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import { GC_LISTING_MAX_AGE_MS, listedContainers, listedSandboxes } from "../../container/shared-listing.ts";

export interface ContainerGcPolicy {
  /** Dead containers younger than this are kept (ms). */
  minAgeMs: number;
  /** Dead instances kept per container of a pod. */
  maxPerPodContainer: number;
  /** Dead containers kept on the node in all; -1 = no limit. */
  maxContainers: number;
}

export interface ContainerGcDeps {
  runtime: Runtime;
  /** The pods sources still want. */
  desiredPods(): ReadonlySet<string>;
  /** Only once every source has reported may an unwanted pod's containers go. */
  allSourcesReady(): boolean;
  clock: Clock;
  log: Logger;
}

/** One collection pass; resolves to the ids removed (containers, then sandboxes). */
export type ContainerGc = () => Promise<string[]>;

/** A container still "created" after this long never started: the sync that made it has given up on it. */
const CREATED_GRACE_MS = 60_000;

const isDead = (c: ContainerSummary, age: number) =>
  c.state === "CONTAINER_EXITED" ||
  c.state === "CONTAINER_UNKNOWN" ||
  (c.state === "CONTAINER_CREATED" && age >= CREATED_GRACE_MS);

export function createContainerGc(policy: ContainerGcPolicy, deps: ContainerGcDeps): ContainerGc {
  return async () => {
    const now = deps.clock.now();
    const listed = await listedContainers(deps.runtime, GC_LISTING_MAX_AGE_MS);
    const dead = listed.filter((c) => isDead(c, now - c.createdAt) && now - c.createdAt >= policy.minAgeMs);
    const desired = deps.desiredPods();
    const doomed = new Set<string>();
    const groups = new Map<string, ContainerSummary[]>();
    for (const c of dead) {
      const uid = c.labels[LABEL.podUid]!;
      if (!desired.has(uid)) {
        if (deps.allSourcesReady()) doomed.add(c.id);
        continue;
      }
      const key = `${uid}/${c.labels[LABEL.containerName]}`;
      (groups.get(key) ?? groups.set(key, []).get(key)!).push(c);
    }
    for (const instances of groups.values()) {
      instances.sort((a, b) => attempt(b) - attempt(a) || b.createdAt - a.createdAt);
      for (const c of instances.slice(Math.max(0, policy.maxPerPodContainer))) doomed.add(c.id);
    }
    if (policy.maxContainers >= 0) {
      // Listings give creation times in whole seconds; inspect (ms) to order containers made in the same second.
      const left = await Promise.all(
        dead
          .filter((c) => !doomed.has(c.id))
          .map((c) =>
            dead.length - doomed.size > policy.maxContainers ? deps.runtime.inspectContainer(c.id).catch(() => c) : c,
          ),
      );
      left.sort((a, b) => a.createdAt - b.createdAt);
      for (const c of left.slice(0, Math.max(0, left.length - policy.maxContainers))) doomed.add(c.id);
    }
    const removed: string[] = [];
    const remove = async (id: string, what: string, call: (id: string) => Promise<void>) => {
      try {
        await call(id);
        removed.push(id);
      } catch (error) {
        if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
        deps.log.warn(
          `container garbage collection: cannot remove ${what} ${id.slice(0, 12)}: ${(error as Error).message}`,
        );
      }
    };
    for (const id of doomed) await remove(id, "container", (id) => deps.runtime.removeContainer(id));
    const containers = removed.length;
    const holding = new Set(listed.filter((c) => !doomed.has(c.id)).map((c) => c.podSandboxId));
    for (const id of evictableSandboxes(
      await listedSandboxes(deps.runtime, GC_LISTING_MAX_AGE_MS),
      holding,
      desired,
      deps.allSourcesReady(),
    ))
      await remove(id, "pod sandbox", (id) => deps.runtime.removePodSandbox(id));
    if (removed.length)
      deps.log.info(
        `container garbage collection removed ${containers} dead containers and ${removed.length - containers} pod sandboxes`,
      );
    return removed;
  };
}

/**
 * Sandboxes that may go: not ready, holding no container, and either of a pod no source wants (once every source
 * has reported) or not the newest of their pod (the sync reads the newest one's attempt).
 */
function evictableSandboxes(
  sandboxes: PodSandboxSummary[],
  holding: ReadonlySet<string>,
  desired: ReadonlySet<string>,
  allSourcesReady: boolean,
): string[] {
  const byPod = new Map<string, PodSandboxSummary[]>();
  for (const s of sandboxes) (byPod.get(s.metadata.uid) ?? byPod.set(s.metadata.uid, []).get(s.metadata.uid)!).push(s);
  const evictable: string[] = [];
  for (const [uid, own] of byPod) {
    if (!desired.has(uid) && !allSourcesReady) continue;
    const newest = own.reduce((a, b) =>
      b.metadata.attempt > a.metadata.attempt ||
      (b.metadata.attempt === a.metadata.attempt && b.createdAt > a.createdAt)
        ? b
        : a,
    );
    for (const s of own)
      if (s.state === "notready" && !holding.has(s.id) && (!desired.has(uid) || s !== newest)) evictable.push(s.id);
  }
  return evictable;
}

function attempt(c: ContainerSummary): number {
  return Number(c.labels[LABEL.restartCount] ?? 0);
}
