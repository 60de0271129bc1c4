import { expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import type { ContainerSummary, PodSandboxSummary } from "./runtime.ts";
import { createSharedListing, listedContainers, listedSandboxes } from "./shared-listing.ts";

const container = (id: string, state: ContainerSummary["state"] = "CONTAINER_RUNNING"): ContainerSummary => ({
  id,
  name: `k8s_app_${id}`,
  podSandboxId: "s1",
  labels: {},
  image: "busybox",
  imageId: "sha256:1",
  state,
  createdAt: 0,
});
const sandbox = (id: string, state: PodSandboxSummary["state"] = "ready"): PodSandboxSummary => ({
  id,
  metadata: { name: id, namespace: "default", uid: id, attempt: 0 },
  state,
  createdAt: 0,
  labels: {},
});

/** A listing of one sandbox and one container recorded as begun now. */
const recorded = (shared: ReturnType<typeof createSharedListing>, c = container("c1"), s = sandbox("s1")) => {
  const token = shared.begin();
  shared.recordContainers(token, () => [c]);
  shared.recordSandboxes(token, () => [s]);
};

test("without an event stream a listing is current for a reader until it is older than the reader takes", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  expect(shared.current(3000)).toEqual({});
  recorded(shared);
  await clock.advance(3000);
  expect(shared.current(3000)).toEqual({ sandboxes: [sandbox("s1")], containers: [container("c1")] });
  expect(shared.current(2999)).toEqual({});
  await clock.advance(1);
  expect(shared.current(3000)).toEqual({});
});

test("a change the kubelet makes leaves no listing begun before it ended current; one begun after it ended is", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  recorded(shared);
  let finish = () => {};
  const creating = shared.changing(() => new Promise<string>((resolve) => (finish = () => resolve("c2"))));
  expect(shared.current(3000)).toEqual({});
  // Begun while the creation is under way: the new container may or may not be in it.
  recorded(shared, container("c9"));
  expect(shared.current(3000)).toEqual({});
  finish();
  expect(await creating).toBe("c2");
  expect(shared.current(3000)).toEqual({});
  recorded(shared, container("c2"));
  expect(shared.current(3000).containers).toEqual([container("c2")]);
});

test("a failed change makes listings stale as a successful one does", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  recorded(shared);
  await expect(shared.changing(() => Promise.reject(new Error("name already in use")))).rejects.toThrow(
    "name already in use",
  );
  expect(shared.current(3000)).toEqual({});
});

test("with the event stream open since before it began, a listing is current at any age until an event or the stream's end", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  recorded(shared); // before the stream opened: current by its age only
  shared.streaming(true);
  await clock.advance(60_000);
  expect(shared.current(3000)).toEqual({});
  recorded(shared);
  await clock.advance(300_000);
  expect(shared.current(3000).containers).toEqual([container("c1")]);
  shared.changed();
  expect(shared.current(3000)).toEqual({});
  recorded(shared, container("c1", "CONTAINER_EXITED"));
  await clock.advance(300_000);
  expect(shared.current(3000).containers).toEqual([container("c1", "CONTAINER_EXITED")]);
  shared.streaming(false);
  expect(shared.current(3000)).toEqual({});
  expect(shared.current(Number.POSITIVE_INFINITY)).toEqual({});
});

test("a stream that does not tell of every change bounds a listing's age while it is open", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock, { streamedMaxAgeMs: 300_000 });
  shared.streaming(true);
  recorded(shared);
  await clock.advance(300_000);
  expect(shared.current(3000).containers).toEqual([container("c1")]);
  await clock.advance(1);
  expect(shared.current(Number.POSITIVE_INFINITY)).toEqual({});
});

test("a list that began before another but ended after it does not replace the newer one", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  const older = shared.begin();
  await clock.advance(500);
  shared.recordContainers(shared.begin(), () => [container("new")]);
  shared.recordContainers(older, () => [container("old")]);
  expect(shared.current(3000).containers).toEqual([container("new")]);
});

test("a recorded listing is mapped once, when first read, whatever the number of readers", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  let mapped = 0;
  shared.recordContainers(shared.begin(), () => (mapped++, [container("c1")]));
  expect(mapped).toBe(0);
  const first = shared.current(3000).containers;
  expect(shared.current(3000).containers).toBe(first!);
  expect(mapped).toBe(1);
});

test("readers are served the current listing, list when it is stale, and list where the runtime keeps none (Docker)", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  const calls: string[] = [];
  const runtime = {
    listContainers: async () => (calls.push("listContainers"), [container("listed")]),
    listPodSandboxes: async (filter = {}) => (
      calls.push(`listPodSandboxes ${JSON.stringify(filter)}`), [sandbox("listed")]
    ),
    lastListing: (maxAgeMs: number) => shared.current(maxAgeMs),
  };
  recorded(shared, container("kept"), sandbox("kept-ready"));
  shared.recordSandboxes(shared.begin(), () => [sandbox("kept-ready"), sandbox("kept-down", "notready")]);
  expect((await listedContainers(runtime, 3000)).map((c) => c.id)).toEqual(["kept"]);
  expect((await listedSandboxes(runtime, 3000)).map((s) => s.id)).toEqual(["kept-ready", "kept-down"]);
  expect((await listedSandboxes(runtime, 3000, "ready")).map((s) => s.id)).toEqual(["kept-ready"]);
  expect(calls).toEqual([]);
  await clock.advance(3001);
  expect((await listedContainers(runtime, 3000)).map((c) => c.id)).toEqual(["listed"]);
  expect((await listedSandboxes(runtime, 3000, "ready")).map((s) => s.id)).toEqual(["listed"]);
  const { lastListing: _, ...docker } = runtime;
  recorded(shared);
  await listedContainers(docker, 3000);
  await listedSandboxes(docker, 3000);
  expect(calls).toEqual([
    "listContainers",
    'listPodSandboxes {"state":"ready"}',
    "listContainers",
    "listPodSandboxes {}",
  ]);
});
