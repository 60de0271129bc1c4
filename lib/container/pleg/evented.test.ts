import { expect, test } from "bun:test";
import { runtimeError, type ContainerState, type RuntimeEvent } from "../runtime.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { eventedEvents, streamRetryDelayMs, type StreamedEntry } from "./evented.ts";
import type { RelistEntry } from "./generic.ts";
import { createPlegHealth } from "./health.ts";

/** A runtime's event stream by hand: each open is one connection; `send` and `cut` act on the open one. */
function fakeStream() {
  let current: { queue: StreamedEntry[]; error?: Error; wake?: () => void } | undefined;
  const stream = {
    opens: 0,
    /** What the next open does: "open" (the default), or fail with this error before opening. */
    refuse: undefined as Error | undefined,
    open(signal: AbortSignal, opened: () => void): AsyncIterable<StreamedEntry> {
      stream.opens++;
      const refuse = stream.refuse;
      const connection: NonNullable<typeof current> = { queue: [] };
      return (async function* () {
        if (refuse) throw refuse;
        current = connection;
        opened();
        signal.addEventListener("abort", () => connection.wake?.(), { once: true });
        while (!signal.aborted) {
          const next = connection.queue.shift();
          if (next) yield next;
          else if (connection.error) throw connection.error;
          else await new Promise<void>((resolve) => (connection.wake = resolve));
        }
      })();
    },
    send(id: string, state: ContainerState | undefined, createdAtMs: number) {
      current!.queue.push({ id, state, labels: { pod: "p" }, createdAtNs: createdAtMs * 1e6 });
      current!.wake?.();
    },
    cut(error = runtimeError("RuntimeUnavailable", "GetContainerEvents: the stream ended")) {
      current!.error = error;
      current!.wake?.();
      current = undefined;
    },
  };
  return stream;
}

/** A node: the relist's world, a fake stream, the PLEG over both, and what it raised. */
function node(world: RelistEntry[] = [], refuse?: Error) {
  const clock = new FakeClock();
  const abort = new AbortController();
  const stream = fakeStream();
  stream.refuse = refuse;
  const logged: string[] = [];
  const counts = { connected: 0, failed: 0, relists: 0, latencies: [] as number[] };
  const state = { world };
  const seen: Array<[string, string]> = [];
  const health = createPlegHealth({ clock });
  const events = eventedEvents(
    async () => {
      counts.relists++;
      return state.world;
    },
    (signal, opened) => stream.open(signal, opened),
    {
      clock,
      signal: abort.signal,
      log: { info: (m) => void logged.push(m), warn: (m) => void logged.push(m) },
      connected: () => void counts.connected++,
      connectionFailed: () => void counts.failed++,
      eventLatency: (s) => void counts.latencies.push(s),
      health,
    },
  );
  const consuming = (async () => {
    for await (const e of events as AsyncIterable<RuntimeEvent>) seen.push([e.type, e.containerId]);
  })();
  const set = (id: string, s: ContainerState | undefined) => {
    state.world = state.world.filter((e) => e.id !== id);
    if (s) state.world.push({ id, state: s, labels: { pod: "p" } });
  };
  return { clock, abort, stream, logged, counts, seen, set, consuming, health };
}

test("streamed events are raised in order as they come, without waiting for a relist", async () => {
  const n = node([{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }]);
  await n.clock.advance(0);
  const t = n.clock.now();
  n.stream.send("b", "CONTAINER_CREATED", t);
  n.stream.send("b", "CONTAINER_RUNNING", t);
  n.stream.send("a", "CONTAINER_EXITED", t);
  n.stream.send("b", "CONTAINER_EXITED", t);
  n.stream.send("b", undefined, t);
  await n.clock.advance(0);
  expect(n.seen).toEqual([
    ["ContainerChanged", "b"],
    ["ContainerStarted", "b"],
    ["ContainerDied", "a"],
    ["ContainerDied", "b"],
    ["ContainerRemoved", "b"],
  ]);
  expect(n.counts).toMatchObject({ connected: 1, failed: 0, relists: 2 });
  n.abort.abort();
  await n.consuming;
});

test("behind a working stream the relist waits 300 s, and raises nothing the stream already told", async () => {
  const n = node([{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }]);
  await n.clock.advance(0);
  const relists = n.counts.relists;
  n.set("a", "CONTAINER_EXITED");
  n.stream.send("a", "CONTAINER_EXITED", n.clock.now());
  await n.clock.advance(299_000);
  expect(n.counts.relists).toBe(relists);
  await n.clock.advance(1000);
  expect(n.counts.relists).toBe(relists + 1);
  expect(n.seen).toEqual([["ContainerDied", "a"]]);
  n.abort.abort();
  await n.consuming;
});

test("a stream cut mid-way relists at once, once a second until it is back, with one log line, then 300 s again", async () => {
  const n = node([{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }]);
  await n.clock.advance(0);
  n.stream.send("a", "CONTAINER_EXITED", n.clock.now());
  n.set("a", "CONTAINER_EXITED");
  await n.clock.advance(0);
  const relists = n.counts.relists;
  // While the stream is down: a container starts and another dies unseen by it.
  n.stream.refuse = runtimeError("RuntimeUnavailable", "connection refused");
  n.stream.cut();
  n.set("b", "CONTAINER_RUNNING");
  await n.clock.advance(0);
  expect(n.counts.relists).toBe(relists + 1);
  expect(n.seen).toEqual([
    ["ContainerDied", "a"],
    ["ContainerStarted", "b"],
  ]);
  await n.clock.advance(3000);
  expect(n.counts.relists).toBe(relists + 4);
  expect(n.counts.failed).toBeGreaterThanOrEqual(2);
  expect(n.logged.filter((l) => l.startsWith("container events stream lost"))).toHaveLength(1);
  expect(n.logged[0]).toContain("relisting every 1s until it is back");
  // Back: a relist right after it opens reconciles; then the long period again.
  n.stream.refuse = undefined;
  n.set("b", "CONTAINER_EXITED");
  await n.clock.advance(streamRetryDelayMs(3));
  expect(n.seen.at(-1)).toEqual(["ContainerDied", "b"]);
  expect(n.counts.connected).toBe(2);
  const after = n.counts.relists;
  await n.clock.advance(10_000);
  expect(n.counts.relists).toBe(after);
  n.abort.abort();
  await n.consuming;
});

test("news arriving late is dropped: an event older than the relist that already showed the change raises nothing", async () => {
  const n = node([{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }]);
  await n.clock.advance(0);
  const started = n.clock.now();
  n.stream.refuse = runtimeError("RuntimeUnavailable", "connection refused");
  n.stream.cut();
  n.set("a", "CONTAINER_EXITED");
  await n.clock.advance(1000);
  expect(n.seen).toEqual([["ContainerDied", "a"]]);
  // The old stream's events of before that relist, delivered by the new one: no second death, no resurrection.
  n.stream.refuse = undefined;
  await n.clock.advance(streamRetryDelayMs(2));
  n.stream.send("a", "CONTAINER_RUNNING", started);
  n.stream.send("a", "CONTAINER_EXITED", started + 1);
  await n.clock.advance(0);
  expect(n.seen).toEqual([["ContainerDied", "a"]]);
  n.abort.abort();
  await n.consuming;
});

test("a duplicate event and a relist that agrees with the stream raise nothing more", async () => {
  const n = node();
  await n.clock.advance(0);
  n.stream.send("c", "CONTAINER_RUNNING", n.clock.now());
  n.stream.send("c", "CONTAINER_RUNNING", n.clock.now());
  n.set("c", "CONTAINER_RUNNING");
  await n.clock.advance(300_000);
  n.stream.send("c", "CONTAINER_RUNNING", n.clock.now());
  await n.clock.advance(0);
  expect(n.seen).toEqual([["ContainerStarted", "c"]]);
  n.abort.abort();
  await n.consuming;
});

test("a runtime that does not serve the stream is relisted every second, said once, never asked again", async () => {
  const n = node(
    [{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }],
    runtimeError("Unimplemented", "unix:///c.sock does not serve GetContainerEvents"),
  );
  await n.clock.advance(0);
  n.set("a", "CONTAINER_EXITED");
  await n.clock.advance(5000);
  expect(n.seen).toEqual([["ContainerDied", "a"]]);
  expect(n.counts.relists).toBe(6);
  expect(n.stream.opens).toBe(1);
  expect(n.logged).toEqual(["unix:///c.sock does not serve GetContainerEvents: relisting every 1s (the generic PLEG)"]);
  n.abort.abort();
  await n.consuming;
});

test("what exists at the first relist raises nothing; each event's age is its latency", async () => {
  const n = node([
    { id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } },
    { id: "b", state: "CONTAINER_EXITED", labels: { pod: "p" } },
  ]);
  await n.clock.advance(1000);
  n.stream.send("a", "CONTAINER_EXITED", n.clock.now() - 250);
  await n.clock.advance(0);
  expect(n.seen).toEqual([["ContainerDied", "a"]]);
  expect(n.counts.latencies).toHaveLength(1);
  expect(n.counts.latencies[0]).toBeCloseTo(0.25, 3);
  n.abort.abort();
  await n.consuming;
});

test("a failed relist ends the events with its error, and the stream is closed with them", async () => {
  const clock = new FakeClock();
  const stream = fakeStream();
  let closed = false;
  const events = eventedEvents(
    async () => {
      throw runtimeError("RuntimeUnavailable", "cannot ListContainers: connection refused");
    },
    (signal, opened) => {
      signal.addEventListener("abort", () => (closed = true));
      return stream.open(signal, opened);
    },
    { clock, signal: new AbortController().signal, log: { info() {}, warn() {} } },
  );
  await expect(events.next()).rejects.toThrow("cannot ListContainers: connection refused");
  expect(closed).toBe(true);
});

test("the stream is retried on gRPC's back-off: 1 s, then ×1.6, at most 120 s", () => {
  expect([1, 2, 3, 4, 20].map(streamRetryDelayMs)).toEqual([1000, 1600, 2560, 4096, 120_000]);
});

test("the PLEG's health is told of each relist and of the stream: 10 minutes behind a working stream", async () => {
  const n = node([{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }]);
  expect(n.health.check().message).toBe("pleg has yet to be successful");
  await n.clock.advance(0);
  expect(n.health.check().ok).toBe(true);
  // The PLEG stops relisting (stopped here; a runtime that hangs looks the same to the check).
  n.abort.abort();
  await n.consuming;
  await n.clock.advance(590_000);
  expect(n.health.check().ok).toBe(true);
  await n.clock.advance(11_000);
  expect(n.health.check().message).toBe("pleg was last seen active 10m1s ago; threshold is 10m0s");
});

test("the PLEG's health falls back to the generic PLEG's 3 minutes once the stream is cut", async () => {
  const n = node([{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }]);
  await n.clock.advance(0);
  n.stream.refuse = runtimeError("RuntimeUnavailable", "connection refused");
  n.stream.cut();
  await n.clock.advance(0);
  n.abort.abort();
  await n.consuming;
  await n.clock.advance(181_000);
  expect(n.health.check().message).toBe("pleg was last seen active 3m1s ago; threshold is 3m0s");
});

test("a relist that finds every entry as it was raises nothing and wakes no reader, however many entries it lists", async () => {
  const clock = new FakeClock();
  const abort = new AbortController();
  const world: RelistEntry[] = Array.from({ length: 100 }, (_, i) => ({
    id: `c${i}`,
    state: "CONTAINER_RUNNING",
    labels: { pod: "p" },
  }));
  let told = 0;
  const health = { relisted() {}, streaming() {}, queued: () => void told++ };
  const events = eventedEvents(
    async () => world,
    () => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(runtimeError("Unimplemented", "no stream")) }),
    }),
    { clock, signal: abort.signal, log: { info() {}, warn() {} }, health },
  );
  const first = events.next();
  await clock.advance(0);
  const baseline = told;
  for (let tick = 0; tick < 5; tick++) await clock.advance(1000);
  expect(told).toBe(baseline);
  world[3] = { ...world[3]!, state: "CONTAINER_EXITED" };
  await clock.advance(1000);
  expect((await first).value).toMatchObject({ type: "ContainerDied", containerId: "c3" });
  abort.abort();
  expect((await events.next()).done).toBe(true);
});
