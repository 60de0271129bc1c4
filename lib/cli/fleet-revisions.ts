// A placed pod's revisions in etcd, as Kubernetes keeps a Deployment's ControllerRevisions: one key per
// revision holding the pod as placed, its manifest hash, who made it, when and why; the oldest pruned
// beyond --revision-history-limit.
import type { Pod } from "../api/types.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";

/** What /registry/revisions/<namespace>/<name>/<revision> holds. */
export interface PodRevision {
  revision: number;
  hash: string;
  pod: Pod;
  /** ISO time it was recorded. */
  createdAt: string;
  /** user@host of the command that made it. */
  createdBy: string;
  /** kubernetes.io/change-cause: --change-cause, else the manifest's annotation of that name. */
  changeCause?: string;
}

export const revisionKeys = {
  prefix: (namespace: string, name: string) => `/registry/revisions/${namespace}/${name}/`,
  // Zero-padded so etcd's key order is the revisions' order.
  revision: (namespace: string, name: string, revision: number) =>
    `/registry/revisions/${namespace}/${name}/${String(revision).padStart(10, "0")}`,
};

/** Every revision of the pod, oldest first. */
export async function listRevisions(
  client: Pick<EtcdClient, "list">,
  namespace: string,
  name: string,
): Promise<PodRevision[]> {
  const { entries } = await client.list(revisionKeys.prefix(namespace, name));
  return entries.map((e) => JSON.parse(e.value) as PodRevision).sort((a, b) => a.revision - b.revision);
}

/**
 * The deletes that keep `limit` revisions besides the ones named in `keep` (the current one and the one a
 * rollout would roll back to are never pruned), oldest first.
 */
export function pruneRevisions(
  revisions: PodRevision[],
  limit: number,
  keep: number[],
  namespace: string,
  name: string,
): Array<{ key: string }> {
  const prunable = revisions.filter((r) => !keep.includes(r.revision));
  return prunable
    .slice(0, Math.max(0, prunable.length - limit))
    .map((r) => ({ key: revisionKeys.revision(namespace, name, r.revision) }));
}
