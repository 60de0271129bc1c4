// Fleet serve's pods list in pages (`limit`/`continue`, as kubectl's --chunk-size and client-go's pager ask): each
// list starts from the pod cache's snapshot at its revision, sorted once in etcd key order (namespace/name), and
// every later page of that list is read from the same snapshot, so a 30,000-pod walk in 500-row pages costs one
// sort and 60 slices, not 60 passes over the fleet. Watches fall through to the API's own pod routes.
//
// Decision: the snapshots of lists begun in the last SNAPSHOT_TTL_MS (at most MAX_SNAPSHOTS) are kept in memory;
// a continue token naming any other revision (too old, or issued by another fleet serve behind the load balancer)
// gets upstream's 410 for a compacted revision, with the token for an inconsistent remainder, and a client that
// follows it (rv -1) reads on from the newest snapshot. Fleet serve stays stateless: nothing is kept that a list
// cannot build again.
import { Hono, type Context } from "hono";
import type { Clock } from "../../clock.ts";
import type { Pod } from "../../api/types.ts";
import { badRequest, expired } from "./api-status.ts";
import { ContinueTokenError, decodeContinue, encodeContinue, INCONSISTENT_CONTINUE } from "./continue-token.ts";
import { podFields, POD_SELECTABLE_FIELDS } from "./pods.ts";
import { isTrue } from "./request-info.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { wantsTable, type IncludeObject } from "./table.ts";
import { createPodRows } from "./table-rows.ts";
import type { PodCache } from "./watch.ts";

/** Where kube-apiserver keeps pods; continue tokens carry keys relative to it, as upstream's do. */
export const PODS_PREFIX = "/registry/pods/";
/** How long a list's snapshot is kept after its last page was served. */
export const SNAPSHOT_TTL_MS = 5 * 60_000;
/** Snapshots kept at once (the least recently used goes first). */
export const MAX_SNAPSHOTS = 8;

interface Snapshot {
  revision: number;
  /** `namespace/name`, sorted as etcd orders keys (UTF-16 order equals byte order for Kubernetes names). */
  keys: string[];
  pods: Pod[];
  used: number;
}

/** The first index whose key is >= `key`. */
function lowerBound(keys: string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index past the keys that start with `prefix`. */
function prefixEnd(keys: string[], from: number, prefix: string): number {
  if (prefix === "") return keys.length;
  // "/" + 1 is "0": every key under `prefix/` sorts before `prefix0`.
  return Math.max(
    from,
    lowerBound(keys, prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)),
  );
}

export interface FleetPodListDeps {
  cache: Pick<PodCache, "list">;
  clock: Clock;
  /** A list begun with at most this many pods in scope is answered whole, its limit ignored (0: always paged). */
  maxUnpaged?: number;
}

export interface FleetPodList {
  /** GET /api/v1/pods and /api/v1/namespaces/{namespace}/pods without watch=true. */
  app: Hono;
  /** Snapshots held now (the tests read it). */
  snapshots(): number;
  /**
   * Builds the newest snapshot and renders its rows as kubectl asks for them (`includeObject=Metadata`), so that the
   * first list after a start costs what later ones do.
   */
  warm(): void;
}

export function createFleetPodList(deps: FleetPodListDeps): FleetPodList {
  const { cache, clock } = deps;
  const snapshots = new Map<number, Snapshot>();
  // A 30,000-pod Table is 15 MB of JSON: each pod's row is rendered once and joined, not built and stringified again.
  const rows = createPodRows();

  const evict = (now: number) => {
    for (const [revision, snapshot] of snapshots) if (now - snapshot.used > SNAPSHOT_TTL_MS) snapshots.delete(revision);
    while (snapshots.size > MAX_SNAPSHOTS) {
      const oldest = [...snapshots.values()].reduce((a, b) => (a.used <= b.used ? a : b));
      snapshots.delete(oldest.revision);
    }
  };

  /** The newest pods, as a snapshot kept for the pages after this one. */
  const current = (now: number): Snapshot => {
    const { revision, pods } = cache.list();
    let snapshot = snapshots.get(revision);
    if (!snapshot) {
      const rows = pods.map((pod) => ({ key: `${pod.metadata.namespace}/${pod.metadata.name}`, pod }));
      rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      snapshot = { revision, keys: rows.map((r) => r.key), pods: rows.map((r) => r.pod), used: now };
      snapshots.set(revision, snapshot);
    }
    snapshot.used = now;
    evict(now);
    return snapshot;
  };

  const list = (c: Context, namespace: string | undefined) => {
    const q = (name: string) => c.req.query(name) ?? "";
    const labels = parseLabelSelector(q("labelSelector"));
    const fields = parseFieldSelector(q("fieldSelector"), POD_SELECTABLE_FIELDS);
    const filtered = labels.requirements.length > 0 || fields.requirements.length > 0;
    const limitText = q("limit");
    let limit = limitText === "" ? 0 : Number(limitText);
    if (!Number.isSafeInteger(limit))
      throw badRequest(`limit: Invalid value: "${limitText}": must be an integer (the most items a page holds)`);
    const keyPrefix = namespace === undefined ? PODS_PREFIX : `${PODS_PREFIX}${namespace}/`;
    /** Keys relative to PODS_PREFIX: the snapshot's own. */
    const scope = namespace === undefined ? "" : `${namespace}/`;
    const now = clock.now();
    evict(now);
    let snapshot: Snapshot;
    let from = scope;
    const token = q("continue");
    if (token !== "") {
      const rv = q("resourceVersion");
      if (rv !== "" && rv !== "0") throw badRequest("specifying resource version is not allowed when using continue");
      let start;
      try {
        start = decodeContinue(token, keyPrefix);
      } catch (error) {
        if (error instanceof ContinueTokenError) throw badRequest(`invalid continue token: ${error.message}`);
        throw error;
      }
      from = start.fromKey.slice(PODS_PREFIX.length);
      if (from < scope) from = scope;
      const kept = start.rv < 0 ? current(now) : snapshots.get(start.rv);
      if (!kept) {
        const gone = expired(INCONSISTENT_CONTINUE);
        const remainder = encodeContinue(start.fromKey, keyPrefix, -1);
        (gone.status as unknown as { metadata: { continue: string } }).metadata = { continue: remainder };
        throw gone;
      }
      kept.used = now;
      snapshot = kept;
    } else snapshot = current(now);

    const matches = (pod: Pod) => labels.matches(pod.metadata.labels) && fields.matches(podFields(pod));
    const first = lowerBound(snapshot.keys, from);
    const end = prefixEnd(snapshot.keys, first, scope);
    // As kube-apiserver's watch cache answers resourceVersion=0 whole; and a list small enough to send at once is
    // cheaper whole than in pages kubectl's own rate limit spaces out (fleet-serve-flags.ts says why).
    const whole = q("resourceVersion") === "0" || end - first <= (deps.maxUnpaged ?? 0);
    if (token === "" && whole) limit = 0;
    const items: Pod[] = [];
    let next = first;
    for (; next < end && (limit <= 0 || items.length < limit); next++) {
      const pod = snapshot.pods[next]!;
      if (!filtered || matches(pod)) items.push(pod);
    }
    const metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number } = {
      resourceVersion: String(snapshot.revision),
    };
    if (limit > 0 && next < end) {
      metadata.continue = encodeContinue(
        `${PODS_PREFIX}${snapshot.keys[next - 1]}\u0000`,
        keyPrefix,
        snapshot.revision,
      );
      // As upstream: the count is only given when no selector makes it a guess.
      if (!filtered) metadata.remainingItemCount = end - next;
    }
    if (wantsTable(c.req.header("accept"))) {
      const include = (c.req.query("includeObject") as IncludeObject | undefined) ?? "Metadata";
      return c.body(rows.table(items, { now, include, metadata }), 200, { "content-type": "application/json" });
    }
    return c.json({ kind: "PodList", apiVersion: "v1", metadata, items });
  };

  const app = new Hono();
  app.get("/api/v1/pods", (c, next) => (isTrue(c.req.query("watch")) ? next() : list(c, undefined)));
  app.get("/api/v1/namespaces/:namespace/pods", (c, next) =>
    isTrue(c.req.query("watch")) ? next() : list(c, c.req.param("namespace")),
  );
  return {
    app,
    snapshots: () => snapshots.size,
    warm() {
      rows.warm(current(clock.now()).pods, "Metadata");
    },
  };
}
