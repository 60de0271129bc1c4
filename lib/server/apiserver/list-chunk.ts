// One page of a list as the API server's storage answers `limit` and `continue`, cut from a snapshot sorted once in
// key order (namespace/name, or name for a cluster-scoped resource): at most `limit` of the objects matching, a
// continue token resuming after the last one at the same snapshot, and remainingItemCount when no selector narrows
// the list. A token whose snapshot is no longer kept is 410 Expired with the token for an inconsistent remainder.
import { ApiError, badRequest, expired, type ApiStatus } from "./api-status.ts";
import { ContinueTokenError, decodeContinue, encodeContinue, INCONSISTENT_CONTINUE } from "./continue-token.ts";

/** The objects of a list at one revision, sorted by key; keys are relative to the resource (no /registry prefix). */
export interface Snapshot<T> {
  revision: number;
  /** Sorted as etcd orders keys (UTF-16 order equals byte order for Kubernetes names). */
  keys: string[];
  objects: T[];
}

/** `objects` at `revision`, sorted by `keyOf` (namespace/name, or name for a cluster-scoped resource). */
export function sortedSnapshot<T>(revision: number, objects: T[], keyOf: (object: T) => string): Snapshot<T> {
  const keyed = objects.map((object) => ({ key: keyOf(object), object }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { revision, keys: keyed.map((e) => e.key), objects: keyed.map((e) => e.object) };
}

/** What a list reads from. */
export interface ChunkSource<T> {
  /** The objects now. */
  current(): Snapshot<T>;
  /** The objects as they were at `revision`, or undefined when that snapshot is no longer kept. */
  at(revision: number): Snapshot<T> | undefined;
}

/** The list's query parameters that paging reads. */
export interface ChunkQuery {
  limit?: string | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
}

export interface ChunkOptions<T> {
  /** The keys the list covers: "" for all, "<namespace>/" for one namespace. Tokens are relative to it. */
  scope?: string;
  /** The selectors; given means the list is narrowed, so no remainingItemCount is guessed. */
  matches?: (object: T) => boolean;
  /** A first page with at most this many objects in scope is answered whole, its limit ignored (0: never). */
  maxUnpaged?: number;
}

/** One page: its objects, the revision it was read at, and where the next page starts. */
export interface ListChunk<T> {
  items: T[];
  revision: number;
  continue?: string;
  remainingItemCount?: number;
}

/** The `limit` parameter: an int64; zero or negative means no limit, as upstream. */
function parseLimit(text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  if (!/^[+-]?\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw badRequest(`limit: Invalid value: "${text}": strconv.ParseInt: parsing "${text}": invalid syntax`);
  return Number(text);
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

/** The first index past the keys under `scope` ("ns/"): "/" + 1 is "0", so every key under it sorts before "ns0". */
function scopeEnd(keys: string[], from: number, scope: string): number {
  if (scope === "") return keys.length;
  const after = scope.slice(0, -1) + String.fromCharCode(scope.charCodeAt(scope.length - 1) + 1);
  return Math.max(from, lowerBound(keys, after));
}

/** The 410 for a token whose snapshot is gone, carrying the token that finishes the list against the newest one. */
function tooOld(fromKey: string, keyPrefix: string): ApiError {
  const status = {
    ...expired(INCONSISTENT_CONTINUE).status,
    metadata: { continue: encodeContinue(fromKey, keyPrefix, -1) },
  };
  return new ApiError(status as unknown as ApiStatus);
}

/**
 * The page `query` asks of `source`. As kube-apiserver's watch cache, resourceVersion=0 without a token is answered
 * whole whatever the limit (client-go's informers list so).
 */
export function listChunk<T>(source: ChunkSource<T>, query: ChunkQuery, options: ChunkOptions<T> = {}): ListChunk<T> {
  const scope = options.scope ?? "";
  const matches = options.matches;
  // Tokens carry the key after the list's own prefix, as upstream's (relative to /registry/<resource>/<namespace>/).
  const keyPrefix = `/${scope}`;
  let limit = parseLimit(query.limit);
  let snapshot: Snapshot<T>;
  let from = scope;
  if (query.continue) {
    // As etcd3's store: "0" (any version) may stand beside a token; a particular version may not.
    if (query.resourceVersion && query.resourceVersion !== "0")
      throw badRequest("specifying resource version is not allowed when using continue");
    let token: { fromKey: string; rv: number };
    try {
      token = decodeContinue(query.continue, keyPrefix);
    } catch (error) {
      if (error instanceof ContinueTokenError) throw badRequest(`invalid continue token: ${error.message}`);
      throw error;
    }
    from = token.fromKey.slice(1);
    const kept = token.rv < 0 ? source.current() : source.at(token.rv);
    if (!kept) throw tooOld(token.fromKey, keyPrefix);
    snapshot = kept;
  } else snapshot = source.current();

  const first = lowerBound(snapshot.keys, from);
  const end = scopeEnd(snapshot.keys, first, scope);
  if (!query.continue && (query.resourceVersion === "0" || end - first <= (options.maxUnpaged ?? 0))) limit = 0;
  const items: T[] = [];
  let next = first;
  for (; next < end && (limit <= 0 || items.length < limit); next++) {
    const object = snapshot.objects[next]!;
    if (!matches || matches(object)) items.push(object);
  }
  const page: ListChunk<T> = { items, revision: snapshot.revision };
  if (limit <= 0 || next >= end) return page;
  // As etcd's list: more keys remain after the page (whether they match or not), so a token is given.
  page.continue = encodeContinue(`/${snapshot.keys[next - 1]}\u0000`, keyPrefix, snapshot.revision);
  if (!matches) page.remainingItemCount = end - next;
  return page;
}
