// Route modules of the API mounted as the info server mounts them, errors answered as its onError does (a Status
// body with the code and reason), for the apiserver/ modules' tests.
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { statusFor } from "../server/apiserver/api-status.ts";

/** An app serving `routes` whose thrown errors (API Statuses, HTTP errors) become Status bodies. */
export function apiApp(...routes: Hono[]): Hono {
  const app = new Hono();
  // The mapping the API app answers with (apiserver.ts), so a route's ApiError reaches the test as its Status.
  app.onError((error, c) => {
    const answer = statusFor(error);
    return c.json(answer, answer.code as ContentfulStatusCode);
  });
  for (const r of routes) app.route("/", r);
  return app;
}

/** Reads newline-delimited JSON from a watch's body until `count` events arrived. */
export async function readWatchEvents<T>(reader: ReadableStreamDefaultReader<Uint8Array>, count: number): Promise<T[]> {
  const events: T[] = [];
  const decoder = new TextDecoder();
  let text = "";
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
    const complete = text.split("\n");
    text = complete.pop()!;
    events.push(...complete.filter((line) => line !== "").map((line) => JSON.parse(line) as T));
  }
  return events;
}
