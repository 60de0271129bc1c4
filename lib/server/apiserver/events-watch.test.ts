import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { apiApp, readWatchEvents } from "../../testing/api-app.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { watchResponse, type WatchEvent } from "./events-watch.ts";

function setUp() {
  const clock = new FakeClock();
  const senders = new Set<(event: WatchEvent) => void>();
  const app = new Hono().get("/watch", (c) =>
    watchResponse(c, {
      initial: [{ type: "ADDED", object: { n: 1 } }],
      maxMs: 60_000,
      bookmarkEveryMs: 10_000,
      clock,
      bookmark: () => ({ metadata: { resourceVersion: "7" } }),
      subscribe(send) {
        senders.add(send);
        return () => senders.delete(send);
      },
    }),
  );
  return { app: apiApp(app), clock, senders };
}

describe("watch streams", () => {
  test("send the initial events, then each change, one JSON object a line", async () => {
    const { app, senders } = setUp();
    const reader = (await app.request("/watch")).body!.getReader();
    for (const send of senders) send({ type: "MODIFIED", object: { n: 2 } });
    expect(await readWatchEvents(reader, 2)).toEqual([
      { type: "ADDED", object: { n: 1 } },
      { type: "MODIFIED", object: { n: 2 } },
    ]);
    await reader.cancel();
    expect(senders.size).toBe(0);
  });

  test("send bookmarks only when the client allows them", async () => {
    const { app, clock } = setUp();
    const reader = (await app.request("/watch?allowWatchBookmarks=true")).body!.getReader();
    await clock.advance(10_000);
    expect((await readWatchEvents(reader, 2))[1]).toEqual({
      type: "BOOKMARK",
      object: { metadata: { resourceVersion: "7" } },
    });
    await reader.cancel();
  });

  test("end at the server's bound when the client gives no timeout, and stop listening", async () => {
    const { app, clock, senders } = setUp();
    const reader = (await app.request("/watch")).body!.getReader();
    await readWatchEvents(reader, 1);
    await clock.advance(60_000);
    expect((await reader.read()).done).toBe(true);
    expect(senders.size).toBe(0);
  });

  test("a timeoutSeconds that is not a number is a 400", async () => {
    const { app } = setUp();
    expect((await app.request("/watch?timeoutSeconds=soon")).status).toBe(400);
  });
});
