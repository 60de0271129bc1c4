// runonce on a fake runtime: admission as the kubelet's runOnce applies it, spec.nodeName in the report.
import { fakeVolumes } from "../testing/fake-volumes.ts";
import { expect, test } from "bun:test";
import { noConfigs } from "../api/config-objects.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createImageManager } from "../node/images/images.ts";
import { silentLogger } from "../log.ts";
import { runPodsOnce } from "./runonce.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testPod } from "../testing/pods.ts";

/** What runPodsOnce needs, on a fake runtime, with what the tests vary. */
function onFakeRuntime(clock: FakeClock, runtime: FakeRuntime, extra: Partial<Parameters<typeof runPodsOnce>[1]> = {}) {
  return {
    runtime,
    images: createImageManager({ qps: 0, burst: 10, clock, dockerConfigPaths: [] }, runtime),
    volumes: fakeVolumes(),
    clock,
    log: silentLogger,
    events: createEventRecorder({ clock }),
    configs: noConfigs,
    options: { hostname: "node-1", hostIP: "10.0.0.1", networkMode: "none" as const, allowPrivileged: false },
    ...extra,
  };
}

test("runonce starts the pods maxPods admits, reports the rest as OutOfpods, and binds every pod to the node", async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const events = createEventRecorder({ clock });
  const image = { containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }] };
  const report = await runPodsOnce(
    [testPod("a", image), testPod("b", image), testPod("c", { ...image, hostNetwork: true }, { source: "url" })],
    onFakeRuntime(clock, runtime, {
      events,
      admission: { maxPods: 1, hostNetworkSources: ["file"], hostPidSources: ["*"], hostIpcSources: ["*"] },
    }),
    { timeoutMs: 10_000, signal: new AbortController().signal },
  );
  expect(report.ok).toBe(false);
  expect(report.pods.map((o) => [o.pod.metadata.name, o.ok, o.status.reason ?? "", o.pod.spec.nodeName])).toEqual([
    ["a", true, "", "node-1"],
    ["b", false, "OutOfpods", "node-1"],
    ["c", false, "CapabilitiesForbidden", "node-1"],
  ]);
  expect(
    events
      .list()
      .filter((e) => e.type === "Warning")
      .map((e) => [e.involvedObject.name, e.reason]),
  ).toEqual([
    ["b", "OutOfpods"],
    ["c", "CapabilitiesForbidden"],
  ]);
});

test("runonce asks the runtime's version once and looks up only the pods' images (the sandbox image is the runtime's)", async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const image = { containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }] };
  const report = await runPodsOnce([testPod("a", image)], onFakeRuntime(clock, runtime), {
    timeoutMs: 10_000,
    signal: new AbortController().signal,
  });
  expect(report.ok).toBe(true);
  expect(report.runtimeVersion.runtimeName).toBeTruthy();
  expect(runtime.calls.filter((c) => c.method === "version")).toHaveLength(1);
  expect(new Set(runtime.calls.filter((c) => c.method === "imageStatus").map((c) => c.args[0]))).toEqual(
    new Set(["local/busybox:stable"]),
  );
});

test("runonce interrupted reports a pod still starting as interrupted, not as timed out", async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const sleeper = { name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] };
  const report = await runPodsOnce(
    [testPod("a", { initContainers: [{ ...sleeper, name: "init" }], containers: [sleeper] })],
    onFakeRuntime(clock, runtime),
    { timeoutMs: 300_000, signal: AbortSignal.abort() },
  );
  expect(report.pods.map((o) => [o.ok, o.reason])).toEqual([[false, "not running when interrupted after 0s"]]);
});
