// A watch stream as the API server sends one: newline-delimited JSON watch events (ADDED, MODIFIED, DELETED,
// BOOKMARK when the client allows them), the state first, then each change, until timeoutSeconds, the server's
// bound or the client goes. Nothing runs while no watch is open.
import type { Context } from "hono";
import type { Clock } from "../../clock.ts";
import { httpError } from "../server-support.ts";
import { writeWatch } from "./watch-writer.ts";

/** metav1.WatchEvent. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: unknown;
}

export interface WatchOptions {
  /** The events sent first (the state the client asked to start from). */
  initial: WatchEvent[];
  /** Longest a watch stays open without `timeoutSeconds`, ms. */
  maxMs: number;
  /** The object of a BOOKMARK (kind, apiVersion, metadata.resourceVersion). */
  bookmark(): unknown;
  /** Starts sending changes through `send`; returns its stop. */
  subscribe(send: (event: WatchEvent) => void): () => void;
  /** How often a bookmark is sent when allowed, ms (default 60 s, as the API server). */
  bookmarkEveryMs?: number;
  clock: Clock;
}

/** The streamed response of a watch. */
export function watchResponse(c: Context, options: WatchOptions): Response {
  const timeout = c.req.query("timeoutSeconds");
  if (timeout !== undefined && !/^\d+$/.test(timeout))
    throw httpError(400, `invalid timeoutSeconds "${timeout}": give a whole number of seconds`);
  return writeWatch({
    clock: options.clock,
    signal: c.req.raw.signal,
    timeoutMs: timeout !== undefined ? Math.min(Number(timeout) * 1000, options.maxMs) : options.maxMs,
    bookmarks: c.req.query("allowWatchBookmarks") === "true",
    bookmarkEveryMs: options.bookmarkEveryMs,
    bookmark: () => options.bookmark(),
    start(sink) {
      for (const event of options.initial) sink.send(event.type, event.object);
      return options.subscribe((event) => sink.send(event.type, event.object));
    },
  });
}
