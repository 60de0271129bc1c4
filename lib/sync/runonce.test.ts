// runonce on a fake runtime: admission as the kubelet's runOnce applies it, spec.nodeName in the report.
import { fakeVolumes } from "../testing/fake-volumes.ts";
import { expect, test } from "bun:test";
import { noConfigs } from "../api/config-objects.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createImageManager } from "../node/images/images.ts";
import { silentLogger } from "../log.ts";
import { KubeletError } from "../api/types.ts";
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

/** runPodsOnce of one sleeping pod on `runtime`. */
const runOnePod = (clock: FakeClock, runtime: FakeRuntime) =>
  runPodsOnce(
    [testPod("a", { containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }] })],
    onFakeRuntime(clock, runtime),
    { timeoutMs: 10_000, signal: new AbortController().signal },
  );

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
  const report = await runOnePod(clock, runtime);
  expect(report.ok).toBe(true);
  expect(report.runtimeVersion.runtimeName).toBeTruthy();
  expect(runtime.calls.filter((c) => c.method === "version")).toHaveLength(1);
  expect(new Set(runtime.calls.filter((c) => c.method === "imageStatus").map((c) => c.args[0]))).toEqual(
    new Set(["local/busybox:stable"]),
  );
});

test("runonce asks the runtime's version and lists the node's pods at once, not one after the other", async () => {
  const clock = new FakeClock();
  /** A runtime whose version answers only once the node's sandboxes have been asked for. */
  class VersionAfterList extends FakeRuntime {
    #listed = Promise.withResolvers<void>();
    override async version() {
      await this.#listed.promise;
      return super.version();
    }
    override async listPodSandboxes(...args: Parameters<FakeRuntime["listPodSandboxes"]>) {
      this.#listed.resolve();
      return super.listPodSandboxes(...args);
    }
  }
  const runtime = new VersionAfterList(clock);
  const report = await runOnePod(clock, runtime);
  expect(report.ok).toBe(true);
  // The first look at the node is not asked twice: one list before the pod's calls, one after them.
  expect(runtime.calls.filter((c) => c.method === "listPodSandboxes")).toHaveLength(2);
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

test("runonce gives up at once on a sandbox whose image's registry does not resolve, and says why", async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const noSuchHost =
    'cannot pull the sandbox image registry.k8s.io/pause:3.10 (--network_container_image): Get "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io on 10.0.0.2:53: no such host; see "Air-gapped nodes" in docs/operations.md';
  runtime.failNext("runPodSandbox", new KubeletError("ImagePullFailed", noSuchHost));
  const report = await runPodsOnce(
    [testPod("a", { containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }] })],
    onFakeRuntime(clock, runtime),
    { timeoutMs: 300_000, signal: new AbortController().signal },
  );
  expect(report.pods.map((o) => [o.ok, o.reason])).toEqual([
    [
      false,
      `FailedCreatePodSandBox: Failed to create pod sandbox: ${noSuchHost} (not retried: it cannot clear by itself)`,
    ],
  ]);
  expect(report.elapsedMs).toBe(0);
  expect(runtime.calls.filter((c) => c.method === "runPodSandbox")).toHaveLength(1);
});

test("runonce keeps trying a sandbox failure that may clear, says once for how long, and names it if time runs out", async () => {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (message: string) => void warnings.push(message) };
  const refused =
    'cannot pull the sandbox image 127.0.0.1:1/pause:3.10: Get "http://127.0.0.1:1/v2/": connection refused';
  const pods = [
    testPod("a", { containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }] }),
  ];
  runtime.failNext("runPodSandbox", new KubeletError("ImagePullFailed", refused));
  const lines: string[] = [];
  const running = runPodsOnce(pods, onFakeRuntime(clock, runtime, { log }), {
    timeoutMs: 300_000,
    signal: new AbortController().signal,
    progress: { pods: (line) => void lines.push(line) },
  });
  let settled = false;
  void running.finally(() => (settled = true));
  while (!settled) await clock.advance(100);
  const report = await running;
  expect(report.pods.map((o) => o.ok)).toEqual([true]);
  expect(warnings).toEqual([
    `pod default/a: Failed to create pod sandbox: ${refused}; runonce keeps trying for 300s more (--runonce_timeout 300s)`,
  ]);
  expect(lines).toEqual(["0/1 pods settled, waiting for default/a (giving up in 300s)", "1/1 pods settled"]);

  runtime.failNext("runPodSandbox", new KubeletError("ImagePullFailed", refused));
  const [late] = (
    await runPodsOnce([testPod("b", pods[0]!.spec)], onFakeRuntime(clock, runtime), {
      timeoutMs: 0,
      signal: new AbortController().signal,
    })
  ).pods;
  expect(late!.reason).toBe(
    `not running after 0s; last error: FailedCreatePodSandBox: Failed to create pod sandbox: ${refused}`,
  );
});
