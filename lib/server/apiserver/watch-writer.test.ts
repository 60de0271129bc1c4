import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { watchLines } from "../../testing/watch-lines.ts";
import { bookmarkObject, writeWatch, type WatchSink, type WatchWriterOptions } from "./watch-writer.ts";

/** A watch whose sink the test drives; `stopped` counts the subscription's stops. */
function setUp(overrides: Partial<WatchWriterOptions> = {}) {
  const clock = new FakeClock();
  const abort = new AbortController();
  const state = { sink: undefined as WatchSink | undefined, stopped: 0 };
  const response = writeWatch({
    clock,
    signal: abort.signal,
    timeoutMs: 30_000,
    bookmarks: false,
    bookmark: (end) => bookmarkObject("Thing", 7, end),
    start(sink) {
      state.sink = sink;
      sink.send("ADDED", { n: 1 });
      return () => state.stopped++;
    },
    ...overrides,
  });
  return { clock, abort, state, response };
}

test("events go out one JSON object a line, the first events and then each change", async () => {
  const { state, response } = setUp();
  const watch = await watchLines(response);
  state.sink!.send("MODIFIED", { n: 2 });
  state.sink!.send("DELETED", { n: 2 });
  await watch.settle();
  expect(watch.lines).toEqual([
    { type: "ADDED", object: { n: 1 } },
    { type: "MODIFIED", object: { n: 2 } },
    { type: "DELETED", object: { n: 2 } },
  ]);
});

test("a rendered watch writes each object as render makes it, telling it which is the first", async () => {
  const { state, response } = setUp({ render: (object, first) => ({ table: object, headers: first }) });
  const watch = await watchLines(response);
  state.sink!.send("MODIFIED", { n: 2 });
  await watch.settle();
  expect(watch.lines.map((l) => l.object)).toEqual([
    { table: { n: 1 }, headers: true },
    { table: { n: 2 }, headers: false },
  ]);
});

test("bookmarks come every interval only when allowed, and the initial-events-end one carries its annotation", async () => {
  const allowed = setUp({ bookmarks: true, bookmarkEveryMs: 10_000 });
  const watch = await watchLines(allowed.response);
  allowed.state.sink!.bookmark(true);
  await allowed.clock.advance(20_000);
  await watch.settle();
  expect(watch.lines.slice(1)).toEqual([
    { type: "BOOKMARK", object: bookmarkObject("Thing", 7, true) },
    { type: "BOOKMARK", object: bookmarkObject("Thing", 7) },
    { type: "BOOKMARK", object: bookmarkObject("Thing", 7) },
  ]);
  expect(watch.lines[1].object.metadata.annotations).toEqual({ "k8s.io/initial-events-end": "true" });
  const denied = setUp({ bookmarkEveryMs: 10_000 });
  const quiet = await watchLines(denied.response);
  await denied.clock.advance(20_000);
  await quiet.settle();
  expect(quiet.lines).toHaveLength(1);
});

test("an ERROR event carries the Status and ends the watch, stopping the subscription", async () => {
  let stopped = 0;
  const { response } = setUp({
    start(sink) {
      sink.fail({ kind: "Status", code: 410, reason: "Expired" });
      return () => stopped++;
    },
  });
  const watch = await watchLines(response);
  expect(watch.lines).toEqual([{ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } }]);
  expect([watch.ended(), stopped]).toEqual([true, 1]);
});

test("the watch ends at its timeout, or when the client goes, and stops its subscription once", async () => {
  const timed = setUp();
  const watch = await watchLines(timed.response);
  await timed.clock.advance(30_000);
  await watch.settle();
  expect([watch.ended(), timed.state.stopped]).toEqual([true, 1]);
  const left = setUp();
  const gone = await watchLines(left.response);
  left.abort.abort();
  await gone.settle();
  expect([gone.ended(), left.state.stopped]).toEqual([true, 1]);
  await left.clock.advance(30_000);
  expect(left.state.stopped).toBe(1);
});

test("a quiet watch gets a newline at once, so its headers go out; an asynchronous start is waited for", async () => {
  let release = () => {};
  const { response, state } = setUp({
    start: (sink) =>
      new Promise((resolve) => {
        release = () => {
          state.sink = sink;
          resolve(() => state.stopped++);
        };
      }),
  });
  const reader = response.body!.getReader();
  release();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe("\n");
  state.sink!.send("ADDED", { n: 3 });
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('{"type":"ADDED","object":{"n":3}}\n');
  await reader.cancel();
  expect(state.stopped).toBe(1);
});
