// The protocol every pod source speaks to the merge store (pods, and the ConfigMaps and Secrets beside them).
// Folder sources/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import type { ConfigObject } from "../api/config-objects.ts";
import type { Pod, RejectedPod, SourceName } from "../api/types.ts";

/**
 * A full snapshot of what a source wants: every pod it currently lists, and the pods it
 * could not accept (parse errors) so the store can report them. Sources send a snapshot
 * on every change, an empty one when the origin says "nothing", and nothing when nothing
 * changed.
 */
export interface SourceSnapshot {
  pods: Pod[];
  rejected: RejectedPod[];
  /** The ConfigMaps and Secrets it lists (absent: none). */
  configs?: ConfigObject[];
  /**
   * Set when the origin cannot be read as a pod source at all (a path that does not exist, a file that is
   * not a manifest): why, and the fix. The store then keeps the source's pods as they are and reports the
   * source not ready, so a typo in a path never stops what runs.
   */
  notReady?: string;
}

/** The snapshot, or its reason thrown (code SourceNotReady) when the source is not ready: for one-shot reads (runonce, plan). */
export function requireReady(snapshot: SourceSnapshot): SourceSnapshot {
  if (snapshot.notReady === undefined) return snapshot;
  throw Object.assign(new Error(snapshot.notReady), { code: "SourceNotReady" });
}

/** What a rejection says when the pods of its last good version keep running (the store and last-good.ts say it). */
export const KEEPING = "keeping the last good version";

/** Stops a running source; resolves when its watchers and timers are gone. */
export type StopSource = () => Promise<void>;

/** A pod source: started with a callback that receives its snapshots. */
export interface PodSource {
  readonly name: SourceName;
  start(emit: (snapshot: SourceSnapshot) => void): StopSource;
}

/** What makes two snapshots the same: pod and config identities and hashes, and the standing problems. */
export function snapshotSignature(snapshot: SourceSnapshot): string {
  const configs = (snapshot.configs ?? []).map(
    (c) =>
      `${c.kind}/${c.metadata.namespace}/${c.metadata.name}#${c.metadata.annotations["kubernetes.io/config.hash"]}`,
  );
  const pods = snapshot.pods.map(
    (p) =>
      `${p.metadata.namespace}/${p.metadata.name}@${p.metadata.uid}#${p.metadata.annotations["kubernetes.io/config.hash"]}`,
  );
  const rejected = snapshot.rejected.map(
    (r) => `${r.origin}|${r.document}|${r.pod}|${r.issues.map((i) => `${i.path}:${i.type}:${i.detail}`).join(";")}`,
  );
  return JSON.stringify([pods, rejected, configs, snapshot.notReady ?? null]);
}
