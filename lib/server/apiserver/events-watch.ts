// A watch stream as the API server sends one: newline-delimited JSON watch events (ADDED, MODIFIED, DELETED,
// BOOKMARK when the client allows them), the state first, then each change, until timeoutSeconds, the server's
// bound or the client goes. Nothing runs while no watch is open.
import type { Context } from "hono";
import type { Clock, Timer } from "../../clock.ts";
import { longLived } from "../../platform/long-lived.ts";
import { httpError } from "../server-support.ts";

/** metav1.WatchEvent. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
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
  const lastsMs = timeout !== undefined ? Math.min(Number(timeout) * 1000, options.maxMs) : options.maxMs;
  const bookmarks = c.req.query("allowWatchBookmarks") === "true";
  const encoder = new TextEncoder();
  let stop = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (event: WatchEvent) => controller.enqueue(encoder.encode(`${JSON.stringify(event)}\n`));
      for (const event of options.initial) send(event);
      const unsubscribe = options.subscribe(send);
      const end = options.clock.setTimeout(() => {
        stop();
        controller.close();
      }, lastsMs);
      let beat: Timer | undefined;
      const every = options.bookmarkEveryMs ?? 60_000;
      const bookmark = () => {
        send({ type: "BOOKMARK", object: options.bookmark() });
        beat = options.clock.setTimeout(bookmark, every);
      };
      if (bookmarks) beat = options.clock.setTimeout(bookmark, every);
      stop = () => {
        unsubscribe();
        end.cancel();
        beat?.cancel();
        stop = () => {};
      };
      c.req.raw.signal.addEventListener("abort", () => stop(), { once: true });
    },
    cancel: () => stop(),
  });
  return longLived(new Response(body, { headers: { "content-type": "application/json" } }));
}
