// One page of a list as the API server's storage answers `limit` and `continue`: objects in key order (namespace/
// name), at most `limit` of those matching, a continue token resuming after the last one at the same snapshot, and
// remainingItemCount when no selector narrows the list. A token older than the snapshots kept is 410 Expired.
import { ApiError, badRequest, expired, type ApiStatus } from "./api-status.ts";
import { ContinueTokenError, decodeContinue, encodeContinue, INCONSISTENT_CONTINUE } from "./continue-token.ts";

/** The keys of a list are relative to it (namespace/name): a token's start is the key after this prefix. */
const KEY_PREFIX = "/";

/** What a list reads from. */
export interface ChunkSource<T> {
  /** The objects now and their revision. */
  current(): { revision: number; objects: T[] };
  /** The objects as they were at `revision`, or undefined when that snapshot is no longer kept. */
  at(revision: number): T[] | undefined;
}

/** The list's query parameters that paging reads. */
export interface ChunkQuery {
  limit?: string | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
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

/** The 410 for a compacted token, carrying the token that finishes the list against the current state. */
function tooOld(start: string): ApiError {
  const error = expired(INCONSISTENT_CONTINUE);
  const status = { ...error.status, metadata: { continue: encodeContinue(KEY_PREFIX + start, KEY_PREFIX, -1) } };
  return new ApiError(status as unknown as ApiStatus);
}

/**
 * The page `query` asks of `source`: `keyOf` gives an object's key relative to the list (namespace/name across
 * namespaces, name within one), `matches` the selectors (`narrowed`: any were given, so no remainingItemCount).
 */
export function listChunk<T>(
  source: ChunkSource<T>,
  query: ChunkQuery,
  keyOf: (object: T) => string,
  matches: (object: T) => boolean,
  narrowed: boolean,
): ListChunk<T> {
  const limit = parseLimit(query.limit);
  let start = "";
  let revision: number;
  let objects: T[];
  if (query.continue) {
    // As etcd3's store: "0" (any version) may stand beside a token; a particular version may not.
    if (query.resourceVersion && query.resourceVersion !== "0")
      throw badRequest("specifying resource version is not allowed when using continue");
    let token: { fromKey: string; rv: number };
    try {
      token = decodeContinue(query.continue, KEY_PREFIX);
    } catch (error) {
      if (error instanceof ContinueTokenError) throw badRequest(`invalid continue token: ${error.message}`);
      throw error;
    }
    start = token.fromKey.slice(KEY_PREFIX.length);
    const now = source.current();
    const kept = token.rv < 0 ? now.objects : source.at(token.rv);
    if (!kept) throw tooOld(start);
    revision = token.rv < 0 ? now.revision : token.rv;
    objects = kept;
  } else {
    ({ revision, objects } = source.current());
  }
  const keyed = objects
    .map((object) => ({ key: keyOf(object), object }))
    .filter((e) => e.key >= start)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const items: T[] = [];
  let next = keyed.length;
  for (let i = 0; i < keyed.length; i++) {
    if (limit > 0 && items.length === limit) {
      next = i;
      break;
    }
    if (matches(keyed[i]!.object)) items.push(keyed[i]!.object);
  }
  if (next === keyed.length) return { items, revision };
  // As etcd's list: more keys remain after the page (whether they match or not), so a token is given.
  const last = keyOf(items[items.length - 1]!);
  return {
    items,
    revision,
    continue: encodeContinue(`${KEY_PREFIX}${last}\u0000`, KEY_PREFIX, revision),
    ...(narrowed ? {} : { remainingItemCount: keyed.length - next }),
  };
}
