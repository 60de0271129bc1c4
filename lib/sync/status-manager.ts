// The status manager (the Go kubelet's pkg/kubelet/status): each pod's latest status, one version, its listeners.
import type { V1PodStatus } from "../api/types.ts";

export interface StatusManager {
  /** The pod's latest status; undefined before its first (or after a rejection is lifted). */
  get(uid: string): V1PodStatus | undefined;
  /** Keeps `status` as the pod's latest; one that differs from the status kept is a new version. */
  set(uid: string, status: V1PodStatus | undefined): void;
  /** Forgets a pod's status: its pod is gone from the report already, so this is no new version. */
  delete(uid: string): void;
  /** Something else the report shows changed (a pod added, removed or evicted): a new version. */
  changed(): void;
  /** Changes whenever the report would answer differently. */
  version(): number;
  /** Calls `listener` after each new version until the returned function is called. */
  onChange(listener: () => void): () => void;
}

/** The statuses; what a status says is pod-status.ts's, when a pod's status is computed the sync loop's. */
export function createStatusManager(): StatusManager {
  const statuses = new Map<string, V1PodStatus | undefined>();
  const listeners = new Set<() => void>();
  let version = 0;
  /** A new version, and whoever waits for one is told (after the change, so a listener reads it). */
  const changed = () => {
    version++;
    for (const listener of listeners) listener();
  };
  return {
    get: (uid) => statuses.get(uid),
    set(uid, status) {
      const differs = JSON.stringify(statuses.get(uid)) !== JSON.stringify(status);
      statuses.set(uid, status);
      if (differs) changed();
    },
    delete: (uid) => void statuses.delete(uid),
    changed,
    version: () => version,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
