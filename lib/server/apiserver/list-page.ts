// A list GET answered as kube-apiserver answers an etcd-backed list: `limit`/`continue` pages cut by the API's one
// pager (list-chunk.ts) from a snapshot kept for the list's later pages (list-snapshots.ts), as a <Kind>List or,
// for kubectl, a Table carrying the page's continue token and remainingItemCount.
import type { Context } from "hono";
import type { Clock } from "../../clock.ts";
import { listChunk } from "./list-chunk.ts";
import { createListSnapshots } from "./list-snapshots.ts";
import { respond, type ApiObject, type Printer } from "./table-print.ts";

export interface ListPagesOptions<T extends ApiObject> {
  printer: Printer<T>;
  listKind: string;
  /** The object's key relative to the resource: namespace/name, or name for a cluster-scoped resource. */
  keyOf(object: T): string;
}

/** One list request: the objects now with their revision, the namespace asked (if any) and the selectors (if any). */
export interface ListRequest<T> {
  read(): { revision: number; objects: T[] };
  namespace?: string | undefined;
  matches?: ((object: T) => boolean) | undefined;
}

/** Answers list requests of one resource in pages. */
export function createListPages<T extends ApiObject>(
  options: ListPagesOptions<T>,
  deps: { clock: Pick<Clock, "now"> },
) {
  const snapshots = createListSnapshots<T>({ keyOf: options.keyOf }, deps);
  return (c: Context, request: ListRequest<T>): Response => {
    const answer = (items: T[], revision: number, page: { continue?: string; remainingItemCount?: number } = {}) =>
      respond(c, options.printer, items, {
        listKind: options.listKind,
        resourceVersion: String(revision),
        now: deps.clock.now(),
        page,
      });
    // A list that asks no page keeps the order the resource reads in (events: as recorded), as it did before paging.
    if (!c.req.query("limit") && !c.req.query("continue")) {
      const { revision, objects } = request.read();
      const { namespace, matches } = request;
      const inScope = objects.filter(
        (o) =>
          (!namespace || (o.metadata as { namespace?: string } | undefined)?.namespace === namespace) &&
          (!matches || matches(o)),
      );
      return answer(inScope, revision);
    }
    const page = listChunk(
      snapshots.source(request.read),
      {
        limit: c.req.query("limit"),
        continue: c.req.query("continue"),
        resourceVersion: c.req.query("resourceVersion"),
      },
      { scope: request.namespace ? `${request.namespace}/` : "", matches: request.matches },
    );
    return answer(page.items, page.revision, {
      ...(page.continue ? { continue: page.continue } : {}),
      ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    });
  };
}

/** The selectors given, as one filter (undefined when none narrows the list). */
export function allOf<T>(
  ...filters: Array<((object: T) => boolean) | undefined>
): ((object: T) => boolean) | undefined {
  const given = filters.filter((f): f is (object: T) => boolean => f !== undefined);
  return given.length ? (object) => given.every((f) => f(object)) : undefined;
}
