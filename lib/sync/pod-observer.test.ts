import { expect, test } from "bun:test";
import { LABEL } from "../container/runtime.ts";
import { RESYNC_LISTING_MAX_AGE_MS } from "../container/shared-listing.ts";
import { testSandboxConfig } from "../testing/cri-configs.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { createPodObserver } from "./pod-observer.ts";

/** A runtime holding pod "a" (a sandbox and a running container) whose last listing was taken now. */
async function node() {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const sandboxId = await runtime.runPodSandbox(testSandboxConfig("a", "web"));
  const id = runtime.seed({
    name: "k8s_app_web_default_a_0",
    image: "local/busybox:stable",
    labels: { [LABEL.podUid]: "a", [LABEL.containerName]: "app" },
  });
  await runtime.keepListing();
  const lists = () => runtime.calls.filter((c) => c.method.startsWith("list")).length;
  return { clock, runtime, id, sandboxId, lists, listed: lists() };
}

test("a node-wide observation reads the runtime's last listing while current for the resync, and lists when older", async () => {
  const { clock, runtime, id, sandboxId, lists, listed } = await node();
  const observer = createPodObserver({ runtime, listingMaxAgeMs: RESYNC_LISTING_MAX_AGE_MS });
  await clock.advance(RESYNC_LISTING_MAX_AGE_MS);
  const observed = (await observer.observe()).get("a")!;
  expect([observed.sandboxes.map((s) => s.id), observed.containers.map((c) => c.id)]).toEqual([[sandboxId], [id]]);
  expect(lists()).toBe(listed);
  await clock.advance(1);
  await observer.observe();
  expect(lists()).toBe(listed + 2);
});

test("one pod's observation, and an observer given no listing age (runonce, plan), always list", async () => {
  const { runtime, lists, listed } = await node();
  await createPodObserver({ runtime, listingMaxAgeMs: RESYNC_LISTING_MAX_AGE_MS }).observe("a");
  expect(lists()).toBe(listed + 2);
  await createPodObserver({ runtime }).observe();
  expect(lists()).toBe(listed + 4);
});
