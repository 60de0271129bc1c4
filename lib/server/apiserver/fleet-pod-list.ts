// Fleet serve's pods list in pages (`limit`/`continue`, as kubectl's --chunk-size and client-go's pager ask): each
// list starts from the pod cache's snapshot at its revision, sorted once (list-snapshots.ts), and every later page
// of that list is cut from the same snapshot by the API's own pager (list-chunk.ts). Watches fall through to the
// API's own pod routes.
import { Hono, type Context } from "hono";
import type { Clock } from "../../clock.ts";
import { podKey, type Pod } from "../../api/types.ts";
import { listChunk } from "./list-chunk.ts";
import { createListSnapshots } from "./list-snapshots.ts";
import { podFields, POD_SELECTABLE_FIELDS } from "./pods.ts";
import { isTrue } from "./request-info.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { wantsTable, type IncludeObject } from "./table.ts";
import { createPodRows } from "./table-rows.ts";
import type { PodCache } from "./watch.ts";

export { SNAPSHOT_TTL_MS } from "./list-snapshots.ts";

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
  const snapshots = createListSnapshots<Pod>({ keyOf: podKey, revisioned: true }, { clock });
  const source = snapshots.source(() => {
    const { revision, pods } = cache.list();
    return { revision, objects: pods };
  });
  // A 30,000-pod Table is 15 MB of JSON: each pod's row is rendered once and joined, not built and stringified again.
  const rows = createPodRows();

  const list = (c: Context, namespace: string | undefined) => {
    const q = (name: string) => c.req.query(name) ?? "";
    const labels = parseLabelSelector(q("labelSelector"));
    const fields = parseFieldSelector(q("fieldSelector"), POD_SELECTABLE_FIELDS);
    const filtered = labels.requirements.length > 0 || fields.requirements.length > 0;
    const matches = (pod: Pod) => labels.matches(pod.metadata.labels) && fields.matches(podFields(pod));
    const page = listChunk(
      source,
      {
        limit: c.req.query("limit"),
        continue: c.req.query("continue"),
        resourceVersion: c.req.query("resourceVersion"),
      },
      // A list small enough to send at once is cheaper whole than in pages kubectl's own rate limit spaces out
      // (fleet-serve-flags.ts says why).
      {
        scope: namespace === undefined ? "" : `${namespace}/`,
        matches: filtered ? matches : undefined,
        maxUnpaged: deps.maxUnpaged,
      },
    );
    const metadata = {
      resourceVersion: String(page.revision),
      ...(page.continue ? { continue: page.continue } : {}),
      ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    };
    if (wantsTable(c.req.header("accept"))) {
      const include = (c.req.query("includeObject") as IncludeObject | undefined) ?? "Metadata";
      return c.body(rows.table(page.items, { now: clock.now(), include, metadata }), 200, {
        "content-type": "application/json",
      });
    }
    return c.json({ kind: "PodList", apiVersion: "v1", metadata, items: page.items });
  };
  const app = new Hono();
  app.get("/api/v1/pods", (c, next) => (isTrue(c.req.query("watch")) ? next() : list(c, undefined)));
  app.get("/api/v1/namespaces/:namespace/pods", (c, next) =>
    isTrue(c.req.query("watch")) ? next() : list(c, c.req.param("namespace")),
  );
  return {
    app,
    snapshots: () => snapshots.size(),
    warm() {
      rows.warm(source.current().objects, "Metadata");
    },
  };
}
