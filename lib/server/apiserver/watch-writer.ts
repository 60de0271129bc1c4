// The one framing of a watch response, as the API server's watch handler writes it (endpoints/handlers/watch.go):
// newline-delimited watch events, each object as itself or as a one-row Table for kubectl get -w (the column
// headers on the first only), BOOKMARKs every interval when the client allows them, an ERROR event carrying a
// Status before the end, and the end at timeoutSeconds or when the client goes. What the events are is the caller's.
import type { Context } from "hono";
import type { Clock, Timer } from "../../clock.ts";
import { longLived } from "../../platform/long-lived.ts";
import { badRequest } from "./api-status.ts";
import { isTrue } from "./request-info.ts";

/** How often an idle watch that allows bookmarks gets one (the watch cache sends them about once a minute). */
export const BOOKMARK_INTERVAL_MS = 60_000;
/** A watch without timeoutSeconds ends after this long (the API server's default minimum request timeout). */
const DEFAULT_TIMEOUT_S = 1800;

/** Where a watch's events go. Nothing is written once it is closed. */
export interface WatchSink {
  /** One ADDED/MODIFIED/DELETED event with `object` as the watch renders it. */
  send(type: "ADDED" | "MODIFIED" | "DELETED", object: unknown): void;
  /** A BOOKMARK at the resource's revision now; `initialEventsEnd` marks the end of sendInitialEvents' events. */
  bookmark(initialEventsEnd?: boolean): void;
  /** An ERROR event carrying `status` (410 Expired, 500), then the end of the watch. */
  fail(status: object): void;
}

export interface WatchWriterOptions {
  clock: Clock;
  /** The request's signal: the watch ends when the client goes. */
  signal: AbortSignal;
  timeoutMs: number;
  /** The client allows BOOKMARKs (allowWatchBookmarks). */
  bookmarks: boolean;
  bookmarkEveryMs?: number;
  /** A BOOKMARK's object now (bookmarkObject gives the usual one). */
  bookmark(initialEventsEnd: boolean): unknown;
  /** The object as written: itself, or a Table of it, `first` for the first object the watch writes. */
  render?: (object: unknown, first: boolean) => unknown;
  /** Sends the events the watch starts with and subscribes to the changes; returns the subscription's stop. */
  start(sink: WatchSink): (() => void) | undefined | Promise<(() => void) | undefined>;
}

/** The query of a watch as kube-apiserver reads it: the resourceVersion to resume after, bookmarks, the timeout. */
export function watchQuery(c: Context): { from: number | undefined; bookmarks: boolean; timeoutMs: number } {
  const rv = c.req.query("resourceVersion");
  const from = rv === undefined || rv === "" || rv === "0" ? undefined : Number(rv);
  if (from !== undefined && !Number.isSafeInteger(from))
    throw badRequest(`resourceVersion: Invalid value: "${rv}": must be an integer`);
  const timeout = Number(c.req.query("timeoutSeconds") ?? DEFAULT_TIMEOUT_S);
  return { from, bookmarks: isTrue(c.req.query("allowWatchBookmarks")), timeoutMs: timeout * 1000 };
}

/** A BOOKMARK's object: the kind, the revision the watch has reached, and the initial-events-end annotation. */
export function bookmarkObject(kind: string, revision: number, initialEventsEnd = false) {
  return {
    kind,
    apiVersion: "v1",
    metadata: {
      resourceVersion: String(revision),
      ...(initialEventsEnd ? { annotations: { "k8s.io/initial-events-end": "true" } } : {}),
    },
  };
}

/** The streamed response of a watch. */
export function writeWatch(options: WatchWriterOptions): Response {
  const encoder = new TextEncoder();
  const timers: Timer[] = [];
  let stop: (() => void) | undefined;
  let open = true;
  let first = true;
  let sentAny = false;
  const end = () => {
    open = false;
    for (const timer of timers) timer.cancel();
    stop?.();
    stop = undefined;
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const line = (event: object) => {
        if (!open) return;
        sentAny = true;
        controller.enqueue(encoder.encode(`${JSON.stringify(event)}\n`));
      };
      const close = () => {
        if (!open) return;
        end();
        controller.close();
      };
      const sink: WatchSink = {
        send: (type, object) => {
          if (!open) return;
          line({ type, object: options.render ? options.render(object, first) : object });
          first = false;
        },
        bookmark: (initialEventsEnd = false) => line({ type: "BOOKMARK", object: options.bookmark(initialEventsEnd) }),
        fail: (status) => {
          line({ type: "ERROR", object: status });
          close();
        },
      };
      options.signal.addEventListener("abort", close, { once: true });
      const started = (unsubscribe: (() => void) | undefined) => {
        stop = unsubscribe;
        if (!open) return end();
        // Bun sends the response headers with the first bytes of the body, and a client waits for the headers before
        // it returns the watch (kubectl wait hung on a quiet pod): a newline, which Go's JSON framing and the Python
        // client skip, lets them through now.
        if (!sentAny) controller.enqueue(encoder.encode("\n"));
        const every = options.bookmarkEveryMs ?? BOOKMARK_INTERVAL_MS;
        const nextBookmark = () => {
          timers.push(
            options.clock.setTimeout(() => {
              sink.bookmark();
              nextBookmark();
            }, every),
          );
        };
        if (options.bookmarks) nextBookmark();
        timers.push(options.clock.setTimeout(close, options.timeoutMs));
      };
      const result = options.start(sink);
      if (result instanceof Promise) result.then(started, (error: unknown) => controller.error(error));
      else started(result);
    },
    cancel: end,
  });
  return longLived(new Response(body, { headers: { "content-type": "application/json" } }));
}
