// The sorted snapshots of the lists begun lately, by revision, so every later page of a list is cut from the snapshot
// its first page was read at: a 30,000-pod walk in 500-row pages costs one sort and 60 slices, not 60 sorts.
//
// Decision: snapshots of lists begun in the last SNAPSHOT_TTL_MS (at most MAX_SNAPSHOTS) are kept in memory; a token
// naming any other revision (too old, or issued by another server behind the load balancer) gets upstream's 410 for
// a compacted revision (list-chunk.ts), and a client that follows its token reads on from the newest snapshot.
// Nothing is kept that a list cannot build again.
import type { Clock } from "../../clock.ts";
import { sortedSnapshot, type ChunkSource, type Snapshot } from "./list-chunk.ts";

/** How long a list's snapshot is kept after its last page was served. */
export const SNAPSHOT_TTL_MS = 5 * 60_000;
/** Snapshots kept at once (the least recently used goes first). */
export const MAX_SNAPSHOTS = 8;

export interface ListSnapshotsOptions<T> {
  /** The object's key relative to the resource: namespace/name, or name for a cluster-scoped resource. */
  keyOf(object: T): string;
  /**
   * Every change of the objects changes the revision (a pod cache's, etcd's for pods), so a list begun at a revision
   * already kept reuses its sorted snapshot. Unset: objects may change at one revision (a node's heartbeat, a
   * lease's expiry), so each first page is sorted from what the read gives.
   */
  revisioned?: boolean;
}

export interface ListSnapshots<T> {
  /**
   * The pages' source over `read` (the objects now and their revision); `history` rebuilds an older revision's
   * objects when the cache behind the list keeps its events (the node's pod cache), else only kept ones are read.
   */
  source(
    read: () => { revision: number; objects: T[] },
    history?: (revision: number) => T[] | undefined,
  ): ChunkSource<T>;
  /** Snapshots held now (the tests read it). */
  size(): number;
}

export function createListSnapshots<T>(
  options: ListSnapshotsOptions<T>,
  deps: { clock: Pick<Clock, "now"> },
): ListSnapshots<T> {
  const kept = new Map<number, Snapshot<T> & { used: number }>();
  const evict = (now: number) => {
    for (const [revision, snapshot] of kept) if (now - snapshot.used > SNAPSHOT_TTL_MS) kept.delete(revision);
    while (kept.size > MAX_SNAPSHOTS) {
      const oldest = [...kept.values()].reduce((a, b) => (a.used <= b.used ? a : b));
      kept.delete(oldest.revision);
    }
  };
  const keep = (revision: number, objects: () => T[] | undefined, fresh = false): Snapshot<T> | undefined => {
    const now = deps.clock.now();
    evict(now);
    let snapshot = fresh ? undefined : kept.get(revision);
    if (!snapshot) {
      const read = objects();
      if (!read) return undefined;
      snapshot = { ...sortedSnapshot(revision, read, options.keyOf), used: now };
      kept.set(revision, snapshot);
      evict(now);
    }
    snapshot.used = now;
    return snapshot;
  };
  return {
    source: (read, history) => ({
      current: () => {
        const { revision, objects } = read();
        return keep(revision, () => objects, !options.revisioned)!;
      },
      at: (revision) => keep(revision, () => history?.(revision)),
    }),
    size: () => kept.size,
  };
}
