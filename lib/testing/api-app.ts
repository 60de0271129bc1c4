// Route modules of the API mounted as the info server mounts them, errors answered as its onError does (a Status
// body with the code and reason), for the apiserver/ modules' tests.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { REASON, status } from "../server/server-support.ts";

/** An app serving `routes` whose thrown HTTP errors become Status bodies. */
export function apiApp(...routes: Hono[]): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    const code = error instanceof HTTPException ? error.status : 500;
    return c.json(status(code, REASON[code] ?? "Failure", error.message), code);
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
    events.push(...complete.map((line) => JSON.parse(line) as T));
  }
  return events;
}
