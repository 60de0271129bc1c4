// keepingListing and staleOnEvents on an adapter's calls held by the test: what is kept, what makes it stale.
import { expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { keepingListing, staleOnEvents } from "./kept-listing.ts";
import type { ContainerSummary, PodSandboxSummary } from "./runtime.ts";
import { createSharedListing } from "./shared-listing.ts";

const container: ContainerSummary = {
  id: "c1",
  name: "k8s_app_web_default_uid-1_0",
  podSandboxId: "s1",
  labels: {},
  image: "busybox",
  imageId: "sha256:1",
  state: "CONTAINER_RUNNING",
  createdAt: 0,
};
const sandbox: PodSandboxSummary = {
  id: "s1",
  metadata: { name: "web", namespace: "default", uid: "uid-1", attempt: 0 },
  state: "ready",
  createdAt: 0,
  labels: {},
};

/** An adapter's calls, each change held until the test lets it end. */
function adapter() {
  let finish = () => {};
  const change = () => new Promise<void>((resolve) => (finish = resolve));
  const calls: Parameters<typeof keepingListing>[1] = {
    runPodSandbox: async () => (await change(), "s2"),
    stopPodSandbox: change,
    removePodSandbox: change,
    createContainer: async () => (await change(), "c2"),
    startContainer: change,
    stopContainer: change,
    removeContainer: change,
    listContainers: async () => [container],
    listPodSandboxes: async () => [sandbox],
  };
  return { calls, finish: () => finish() };
}

test("a full list is kept for lastListing; a pod's list or a state's is not", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  const runtime = keepingListing(shared, adapter().calls);
  await runtime.listContainers({ podUid: "uid-1" });
  await runtime.listPodSandboxes({ state: "ready" });
  await runtime.listPodSandboxes({ podUid: "uid-1" });
  expect(runtime.lastListing(3000)).toEqual({});
  await runtime.listContainers({ size: true });
  await runtime.listPodSandboxes();
  expect(runtime.lastListing(3000)).toEqual({ containers: [container], sandboxes: [sandbox] });
});

test("each call that changes the runtime makes the kept listing stale while under way and once it ended", async () => {
  // Every call of the adapter's but its lists.
  const names = Object.keys(adapter().calls).filter((n) => !n.startsWith("list")) as Array<
    keyof ReturnType<typeof adapter>["calls"]
  >;
  expect(names).toHaveLength(7);
  for (const name of names) {
    const clock = new FakeClock();
    const shared = createSharedListing(clock);
    const { calls, finish } = adapter();
    const runtime = keepingListing(shared, calls);
    await runtime.listContainers();
    const call = (runtime[name] as () => Promise<unknown>)();
    expect(runtime.lastListing(3000), `${name} under way`).toEqual({});
    // Begun while the change is under way: it may or may not show it.
    await runtime.listContainers();
    expect(runtime.lastListing(3000), `${name} under way`).toEqual({});
    finish();
    await call;
    expect(runtime.lastListing(3000), name).toEqual({});
    await runtime.listContainers();
    expect(runtime.lastListing(3000).containers, name).toEqual([container]);
  }
});

test("every event on the stream makes the kept listing stale, and so does the stream's end", async () => {
  const clock = new FakeClock();
  const shared = createSharedListing(clock);
  const runtime = keepingListing(shared, adapter().calls);
  let release = () => {};
  let ended = false;
  async function* stream() {
    shared.streaming(true); // the adapter says when the runtime answered
    yield "first";
    await new Promise<void>((resolve) => (release = resolve));
    if (ended) return;
  }
  const events = staleOnEvents(shared, stream());
  await runtime.listContainers();
  expect((await events.next()).value).toBe("first");
  expect(runtime.lastListing(3000)).toEqual({});
  // Open and quiet: a listing stays current at any age.
  await runtime.listContainers();
  await clock.advance(600_000);
  expect(runtime.lastListing(3000).containers).toEqual([container]);
  const next = events.next();
  ended = true;
  release();
  expect((await next).done).toBe(true);
  expect(runtime.lastListing(Number.POSITIVE_INFINITY)).toEqual({});
});
