// The CRI runtime's last listing (shared-listing.ts) as the PLEG and readers fill it and the kubelet's changes and the
// event stream make it stale, on the recording fake client: which reads are answered without a list.
import { expect, test } from "bun:test";
import { createFakeCriClient } from "../../testing/fake-cri-client.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import type { CriClient, CriContainerEvent } from "../cri-types.ts";
import { createCriRuntime } from "./cri.ts";

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

/** The fake client, with an event stream the test feeds (containerd 1.7) or none (1.6). */
function client(streamed: boolean) {
  const fake = createFakeCriClient();
  const waiting: Array<(event: CriContainerEvent) => void> = [];
  const pending: CriContainerEvent[] = [];
  let fail: (error: Error) => void = () => {};
  /** While set, lists wait: a relist under way. */
  let held: Promise<void> | undefined;
  const holding =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      await held;
      return call(...args);
    };
  const stream: CriClient["containerEvents"] = async function* (signal, opened) {
    opened?.();
    while (!signal.aborted) {
      const next =
        pending.shift() ??
        (await new Promise<CriContainerEvent>((resolve, reject) => {
          waiting.push(resolve);
          fail = reject;
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        }));
      yield next;
    }
  };
  return {
    fake,
    cri: {
      ...fake,
      listContainers: holding(fake.listContainers),
      listPodSandbox: holding(fake.listPodSandbox),
      ...(streamed && { containerEvents: stream }),
    },
    hold: () => (held = new Promise(() => {})),
    emit(event: CriContainerEvent) {
      const resolve = waiting.shift();
      if (resolve) resolve(event);
      else pending.push(event);
    },
    cut: () => fail(new Error("stream cut")),
    lists: () => fake.calls.filter((c) => c.startsWith("List") && c !== "ListContainerStats").length,
  };
}

async function started(streamed: boolean) {
  const clock = new FakeClock();
  const c = client(streamed);
  const runtime = createCriRuntime(c.cri, { clock, eventedRelistPeriodMs: 300_000 });
  const sandbox = testSandboxConfig("uid-1", "web");
  const sandboxId = await runtime.runPodSandbox(sandbox);
  const id = await runtime.createContainer(sandboxId, testContainerConfig(sandbox, "app", 0, "busybox", []), sandbox);
  await runtime.startContainer(id);
  const abort = new AbortController();
  void (async () => {
    for await (const _ of runtime.events(abort.signal));
  })().catch(() => {});
  await settle(); // the PLEG's first relist
  return { clock, runtime, id, sandboxId, sandbox, abort, ...c };
}

test("without an event stream (containerd 1.6) the relist's listing answers readers until it is older than they take", async () => {
  const { clock, runtime, id, sandboxId, lists, abort } = await started(false);
  expect(lists()).toBe(2);
  expect(runtime.lastListing!(3000).containers!.map((c) => c.id)).toEqual([id]);
  expect(runtime.lastListing!(3000).sandboxes!.map((s) => s.id)).toEqual([sandboxId]);
  expect(runtime.lastListing!(3000).containers![0]).toMatchObject({ name: "k8s_app_web_default_uid-1_0" });
  // The clock has not moved past a relist period: a reader taking less than no time is refused it.
  await clock.advance(999);
  expect(runtime.lastListing!(998)).toEqual({});
  await clock.advance(1);
  await settle(); // the next relist, which replaces it
  expect(lists()).toBe(4);
  expect(runtime.lastListing!(0).containers!.map((c) => c.id)).toEqual([id]);
  abort.abort();
});

test("a container or sandbox the kubelet creates, stops or removes makes the last listing stale at once", async () => {
  for (const change of ["create", "stop", "remove", "sandbox"] as const) {
    const { runtime, id, sandboxId, sandbox, abort } = await started(false);
    expect(runtime.lastListing!(3000).containers).toBeDefined();
    if (change === "create")
      await runtime.createContainer(sandboxId, testContainerConfig(sandbox, "new", 0, "busybox", []), sandbox);
    if (change === "stop") await runtime.stopContainer(id, 1);
    if (change === "remove") await runtime.removeContainer(id);
    if (change === "sandbox") await runtime.runPodSandbox(testSandboxConfig("uid-2", "other"));
    expect(runtime.lastListing!(3000)).toEqual({});
    abort.abort();
  }
});

test("with the event stream open (containerd 1.7) a listing stays current at any age until the stream tells of a change", async () => {
  const { clock, runtime, id, emit, lists, abort } = await started(true);
  await settle(); // the relist right after the stream opened
  const listed = lists();
  await clock.advance(299_000);
  expect(runtime.lastListing!(3000).containers!.map((c) => c.id)).toEqual([id]);
  emit({
    container_id: id,
    container_event_type: "CONTAINER_STOPPED_EVENT",
    created_at: clock.now() * 1e6,
    pod_sandbox_status: null,
    containers_statuses: [],
  });
  await settle();
  expect(runtime.lastListing!(3000)).toEqual({});
  // A reader's full list is kept in turn for the others; a filtered one is not.
  await runtime.listContainers({ podUid: "uid-1" });
  await runtime.listPodSandboxes({ state: "ready" });
  expect(runtime.lastListing!(3000)).toEqual({});
  await runtime.listContainers();
  await runtime.listPodSandboxes();
  await clock.advance(900); // short of the PLEG's relist at 300 s
  expect(runtime.lastListing!(0).containers!.map((c) => c.id)).toEqual([id]);
  expect(runtime.lastListing!(3000).sandboxes).toHaveLength(1);
  expect(lists()).toBe(listed + 4);
  abort.abort();
});

test("a cut event stream makes the last listing stale: what it would have told is not known", async () => {
  const { runtime, cut, hold, abort } = await started(true);
  await settle();
  expect(runtime.lastListing!(3000).containers).toBeDefined();
  hold(); // the relist the cut sets off has not answered yet
  cut();
  await settle();
  expect(runtime.lastListing!(Number.POSITIVE_INFINITY)).toEqual({});
  abort.abort();
});
