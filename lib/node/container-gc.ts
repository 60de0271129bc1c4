// Container garbage collection on its own timer (the Go kubelet's container GC, once a minute):
// dead containers older than --minimum_container_ttl_duration beyond
// --maximum_dead_containers_per_container per container, every dead container of a pod no source
// wants, then the oldest across the node beyond --maximum_dead_containers.
import type { Clock } from "../clock.ts";
import { LABEL, type ContainerSummary, type Runtime } from "../container/runtime.ts";
import type { Logger } from "../log.ts";

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

/** One collection pass; resolves to the ids removed. */
export type ContainerGc = () => Promise<string[]>;

/** A container still "created" after this long never started: the sync that made it has given up on it. */
const CREATED_GRACE_MS = 60_000;

const isDead = (c: ContainerSummary, age: number) =>
  c.state === "exited" || c.state === "dead" || (c.state === "created" && age >= CREATED_GRACE_MS);

export function createContainerGc(policy: ContainerGcPolicy, deps: ContainerGcDeps): ContainerGc {
  return async () => {
    const now = deps.clock.now();
    const dead = (await deps.runtime.listContainers()).filter(
      (c) => isDead(c, now - c.createdAt) && now - c.createdAt >= policy.minAgeMs,
    );
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
    for (const id of doomed) {
      try {
        await deps.runtime.removeContainer(id);
        removed.push(id);
      } catch (error) {
        if ((error as { code?: string }).code === "RuntimeUnavailable") throw error;
        deps.log.warn(`container garbage collection: cannot remove ${id.slice(0, 12)}: ${(error as Error).message}`);
      }
    }
    if (removed.length) deps.log.info(`container garbage collection removed ${removed.length} dead containers`);
    return removed;
  };
}

function attempt(c: ContainerSummary): number {
  return Number(c.labels[LABEL.restartCount] ?? 0);
}
