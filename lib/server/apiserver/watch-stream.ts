// One watch request as the API server streams it: newline-delimited watch events (JSON, or Tables for kubectl get
// -w), from the resourceVersion asked (410 Expired as an ERROR event when it is older than the history kept),
// selector-filtered with MODIFIED turned into ADDED/DELETED as objects enter and leave the selection, periodic
// BOOKMARKs when asked, the initial-events-end bookmark for sendInitialEvents, and the end at timeoutSeconds.
import type { Context } from "hono";
import type { Pod } from "../../api/types.ts";
import type { Clock, Timer } from "../../clock.ts";
import { longLived } from "../../platform/long-lived.ts";
import { badRequest, expired } from "./api-status.ts";
import { isTrue } from "./request-info.ts";
import { podTable, type IncludeObject } from "./table.ts";
import type { PodCache, WatchEvent } from "./watch.ts";

export interface WatchRequest {
  cache: PodCache;
  clock: Clock;
  matches(pod: Pod): boolean;
  table: boolean;
  include: IncludeObject;
}

/** How often an idle watch that allows bookmarks gets one (the watch cache sends them about once a minute). */
export const BOOKMARK_INTERVAL_MS = 60_000;
/** A watch without timeoutSeconds ends after this long (the API server's default minimum request timeout). */
const DEFAULT_TIMEOUT_S = 1800;

/** The watch response for `c`'s query (resourceVersion, allowWatchBookmarks, sendInitialEvents, timeoutSeconds). */
export function streamWatch(c: Context, w: WatchRequest): Response {
  const q = (name: string) => c.req.query(name);
  const rv = q("resourceVersion");
  const from = rv === undefined || rv === "" || rv === "0" ? undefined : Number(rv);
  if (from !== undefined && !Number.isSafeInteger(from))
    throw badRequest(`resourceVersion: Invalid value: "${rv}": must be an integer`);
  const bookmarks = isTrue(q("allowWatchBookmarks"));
  const initialEnd = isTrue(q("sendInitialEvents"));
  if (initialEnd && !bookmarks)
    throw badRequest("sendInitialEvents: Forbidden: sendInitialEvents requires setting allowWatchBookmarks=true");
  const timeout = Number(q("timeoutSeconds") ?? DEFAULT_TIMEOUT_S);
  const encoder = new TextEncoder();
  let headersSent = false;
  const render = (type: string, pod: Pod): string => {
    if (!w.table) return JSON.stringify({ type, object: pod });
    const object = podTable([pod], {
      now: w.clock.now(),
      include: w.include,
      headers: !headersSent,
      resourceVersion: pod.metadata.resourceVersion,
    });
    headersSent = true;
    return JSON.stringify({ type, object });
  };
  const bookmark = (revision: number, end = false) =>
    JSON.stringify({
      type: "BOOKMARK",
      object: {
        kind: "Pod",
        apiVersion: "v1",
        metadata: {
          resourceVersion: String(revision),
          ...(end ? { annotations: { "k8s.io/initial-events-end": "true" } } : {}),
        },
      },
    });
  /** An event as this watch's selection sees it: a pod leaving the selection is DELETED, one entering it ADDED. */
  const filtered = (event: WatchEvent): string | undefined => {
    const now = w.matches(event.object);
    if (event.type === "MODIFIED" && event.previous) {
      const before = w.matches(event.previous);
      if (now && !before) return render("ADDED", event.object);
      if (!now && before) return render("DELETED", event.object);
    }
    return now ? render(event.type, event.object) : undefined;
  };

  let stop = () => {};
  let bookmarkTimer: Timer | undefined;
  let endTimer: Timer | undefined;
  const cancelTimers = () => {
    bookmarkTimer?.cancel();
    endTimer?.cancel();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      let sentAny = false;
      const send = (line: string | undefined) => {
        if (!open || line === undefined) return;
        sentAny = true;
        controller.enqueue(encoder.encode(`${line}\n`));
      };
      const close = () => {
        if (!open) return;
        open = false;
        stop();
        cancelTimers();
        controller.close();
      };
      const watch = w.cache.watch(from, (event) => send(filtered(event)));
      stop = watch.stop;
      if (watch.start.kind !== "events") {
        const status =
          watch.start.kind === "expired"
            ? expired(watch.start.message).status
            : { ...expired(watch.start.message).status, reason: "Timeout", code: 504 };
        send(JSON.stringify({ type: "ERROR", object: status }));
        close();
        return;
      }
      for (const event of watch.start.events) send(filtered(event));
      if (initialEnd) send(bookmark(w.cache.revision(), true));
      // Bun sends the response headers with the first bytes of the body, and a client waits for the headers before
      // it returns the watch (kubectl wait hung on a quiet pod): a newline, which Go's JSON framing and the Python
      // client skip, lets them through now.
      if (!sentAny) controller.enqueue(encoder.encode("\n"));
      const nextBookmark = () => {
        bookmarkTimer = w.clock.setTimeout(() => {
          send(bookmark(w.cache.revision()));
          nextBookmark();
        }, BOOKMARK_INTERVAL_MS);
      };
      if (bookmarks) nextBookmark();
      endTimer = w.clock.setTimeout(close, timeout * 1000);
      c.req.raw.signal.addEventListener("abort", close, { once: true });
    },
    cancel() {
      stop();
      cancelTimers();
    },
  });
  return longLived(new Response(body, { headers: { "content-type": "application/json" } }));
}
