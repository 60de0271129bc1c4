// One watch of the node's pods as the API server streams it (watch-writer.ts frames it): from the resourceVersion
// asked (410 Expired as an ERROR event when it is older than the history kept), selector-filtered with MODIFIED
// turned into ADDED/DELETED as pods enter and leave the selection, Tables for kubectl get -w, and the
// initial-events-end bookmark for sendInitialEvents.
import type { Context } from "hono";
import type { Pod } from "../../api/types.ts";
import type { Clock } from "../../clock.ts";
import { badRequest, expired } from "./api-status.ts";
import { isTrue } from "./request-info.ts";
import { podTable, type IncludeObject } from "./table.ts";
import type { PodCache, WatchEvent } from "./watch.ts";
import { bookmarkObject, watchQuery, writeWatch } from "./watch-writer.ts";

export { BOOKMARK_INTERVAL_MS } from "./watch-writer.ts";

export interface WatchRequest {
  cache: PodCache;
  clock: Clock;
  matches(pod: Pod): boolean;
  table: boolean;
  include: IncludeObject;
}

/** The watch response for `c`'s query (resourceVersion, allowWatchBookmarks, sendInitialEvents, timeoutSeconds). */
export function streamWatch(c: Context, w: WatchRequest): Response {
  const { from, bookmarks, timeoutMs } = watchQuery(c);
  const initialEnd = isTrue(c.req.query("sendInitialEvents"));
  if (initialEnd && !bookmarks)
    throw badRequest("sendInitialEvents: Forbidden: sendInitialEvents requires setting allowWatchBookmarks=true");
  return writeWatch({
    clock: w.clock,
    signal: c.req.raw.signal,
    timeoutMs,
    bookmarks,
    bookmark: (end) => bookmarkObject("Pod", w.cache.revision(), end),
    render: (object, first) => {
      if (!w.table) return object;
      const pod = object as Pod;
      const at = { now: w.clock.now(), include: w.include, headers: first };
      return podTable([pod], { ...at, resourceVersion: pod.metadata.resourceVersion });
    },
    start(sink) {
      /** An event as this watch's selection sees it: a pod leaving the selection is DELETED, one entering it ADDED. */
      const filtered = (event: WatchEvent) => {
        const now = w.matches(event.object);
        if (event.type === "MODIFIED" && event.previous) {
          const before = w.matches(event.previous);
          if (now && !before) return sink.send("ADDED", event.object);
          if (!now && before) return sink.send("DELETED", event.object);
        }
        if (now) sink.send(event.type, event.object);
      };
      const watch = w.cache.watch(from, filtered);
      if (watch.start.kind !== "events") {
        const status =
          watch.start.kind === "expired"
            ? expired(watch.start.message).status
            : { ...expired(watch.start.message).status, reason: "Timeout", code: 504 };
        sink.fail(status);
        return watch.stop;
      }
      for (const event of watch.start.events) filtered(event);
      if (initialEnd) sink.bookmark(true);
      return watch.stop;
    },
  });
}
