import { expect, test } from "bun:test";
import type { Pod } from "../../api/types.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testPod } from "../../testing/pods.ts";
import { fakePodFeed as fakeFeed } from "../../testing/fake-pod-feed.ts";
import { createPodCache, type WatchEvent } from "./watch.ts";

const withPhase = (pod: Pod, phase: string): Pod => ({ ...pod, status: { phase } });
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

test("each pod is served with a resourceVersion that changes when the pod does, and the list's is the newest", () => {
  const clock = new FakeClock();
  const { feed, set } = fakeFeed([testPod("a"), testPod("b")]);
  const cache = createPodCache(feed, { clock });
  const first = cache.list();
  const [a, b] = first.pods.map((p) => Number(p.metadata.resourceVersion));
  expect(b).toBeGreaterThan(a!);
  expect(first.revision).toBe(b!);
  set([withPhase(testPod("a"), "Running"), testPod("b")]);
  const second = cache.list();
  expect(Number(second.pods[0]!.metadata.resourceVersion)).toBeGreaterThan(first.revision);
  expect(second.pods[1]!.metadata.resourceVersion).toBe(String(b));
});

test("an immutable feed's unchanged pod object is taken as unchanged without comparing; other feeds' pods are compared", () => {
  for (const immutable of [true, false]) {
    const pod = testPod("a");
    const { feed, set } = fakeFeed([pod, testPod("b")]);
    const cache = createPodCache({ ...feed, immutable }, { clock: new FakeClock() });
    const first = cache.list().pods[0];
    // Edited in place, which an immutable feed promises never to do: only a feed without the promise is compared.
    (pod as { status: Pod["status"] }).status = { phase: "Running" };
    set([pod, withPhase(testPod("b"), "Running")]);
    const [a, b] = cache.list().pods;
    expect(a === first).toBe(immutable);
    expect(b!.status?.phase).toBe("Running");
  }
});

test("a pod gets the time the kubelet first had it as its creationTimestamp, kept across changes", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const { feed, set } = fakeFeed([testPod("a")]);
  const cache = createPodCache(feed, { clock });
  expect(cache.get("default", "a")?.metadata.creationTimestamp).toBe("2026-01-01T00:00:00Z");
  await clock.advance(5000);
  set([withPhase(testPod("a"), "Running")]);
  expect(cache.get("default", "a")?.metadata.creationTimestamp).toBe("2026-01-01T00:00:00Z");
});

test("a watch from a version gets the events after it, then each change as it happens", async () => {
  const { feed, set } = fakeFeed([testPod("a")]);
  const cache = createPodCache(feed, { clock: new FakeClock() });
  const from = cache.list().revision;
  set([testPod("a"), testPod("b")]);
  const seen: WatchEvent[] = [];
  const { start, stop } = cache.watch(from, (e) => seen.push(e));
  expect(start.kind === "events" && start.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
    "ADDED b",
  ]);
  set([withPhase(testPod("a"), "Running")]);
  await settle();
  expect(seen.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["MODIFIED a", "DELETED b"]);
  expect(seen[0]!.previous?.status).toBeUndefined();
  stop();
  set([]);
  await settle();
  expect(seen).toHaveLength(2);
});

test("a watch from no version starts with an ADDED event per pod", () => {
  const { feed } = fakeFeed([testPod("a"), testPod("b")]);
  const { start } = createPodCache(feed, { clock: new FakeClock() }).watch(undefined, () => {});
  expect(start.kind === "events" && start.events.map((e) => e.type)).toEqual(["ADDED", "ADDED"]);
});

test("a version older than the history kept is Expired (410) and one ahead of the cache is too large", () => {
  const { feed, set } = fakeFeed([]);
  const cache = createPodCache(feed, { clock: new FakeClock() }, { historySize: 2 });
  const from = cache.list().revision;
  for (const name of ["a", "b", "c"]) {
    set([testPod(name)]);
    cache.list();
  }
  expect(cache.watch(from, () => {}).start).toEqual({
    kind: "expired",
    message: expect.stringContaining(`too old resource version: ${from}`),
  });
  expect(cache.watch(cache.revision() + 10, () => {}).start.kind).toBe("too-large");
});

test("with no watcher open, changes do not read the pods; a list does", async () => {
  const { feed, set, reads } = fakeFeed([testPod("a")]);
  const cache = createPodCache(feed, { clock: new FakeClock() });
  cache.list();
  const before = reads();
  for (let i = 0; i < 5; i++) set([withPhase(testPod("a"), String(i))]);
  await settle();
  expect(reads()).toBe(before);
  cache.list();
  expect(reads()).toBe(before + 1);
  cache.list();
  expect(reads()).toBe(before + 1);
});

test("listAt gives the pods as they were at an older revision: later adds, changes and deletes undone", () => {
  const { feed, set } = fakeFeed([testPod("a"), testPod("b")]);
  const cache = createPodCache(feed, { clock: new FakeClock() });
  const then = cache.list();
  set([withPhase(testPod("a"), "Running"), testPod("c")]);
  expect(cache.list().pods.map((p) => p.metadata.name)).toEqual(["a", "c"]);
  const old = cache.listAt(then.revision)!;
  expect(old.map((p) => [p.metadata.name, p.metadata.resourceVersion, p.status?.phase])).toEqual(
    then.pods.map((p) => [p.metadata.name, p.metadata.resourceVersion, p.status?.phase]),
  );
});

test("listAt has no answer for a revision older than the history kept or newer than the cache", () => {
  const { feed, set } = fakeFeed([testPod("a")]);
  const cache = createPodCache(feed, { clock: new FakeClock() }, { historySize: 2 });
  const first = cache.list().revision;
  // With no watcher open the cache reads a change when asked: each is read before the next.
  for (const phase of ["Running", "Succeeded", "Failed", "Unknown"]) {
    set([withPhase(testPod("a"), phase)]);
    cache.list();
  }
  expect(cache.listAt(first)).toBeUndefined();
  expect(cache.listAt(cache.revision() + 1)).toBeUndefined();
  expect(cache.listAt(cache.revision() - 1)?.[0]?.status?.phase).toBe("Failed");
});
