// The sync loop on a fake runtime and a fake clock: pods added, changed, evicted, removed; admission; workers.
import { describe, expect, test } from "bun:test";
import { containerConfig, podSandboxConfig, type PodContext } from "../container/container-config.ts";
import type { ContainerConfig } from "../container/cri-types.ts";
import { containerHash } from "../api/hash.ts";
import { LABEL, type PodSandboxFilter } from "../container/runtime.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createImageManager } from "../node/images/images.ts";
import { silentLogger } from "../log.ts";
import { noopMetrics, type WorkingPods } from "../metrics.ts";
import { createProbeManager } from "../node/prober/probes.ts";
import { createPodStore, type PodStore } from "../sources/store.ts";
import { SETTLED_POD_RESYNC_MS, createSyncLoop, type SyncLoopDeps, type SyncLoopOptions } from "./sync-loop.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { fakeVolumes } from "../testing/fake-volumes.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import { noConfigs } from "../api/config-objects.ts";
import type { Pod, V1PodSpec } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import type { Allocation } from "../node/state/allocation-file.ts";

const options = { hostname: "node", hostIP: "10.0.0.1", networkMode: "none", allowPrivileged: false };
/** Runs `pod` with `containers` as a kubelet would have (an earlier run to adopt): sandbox, then each container. */
async function runAsKubelet(runtime: FakeRuntime, pod: Pod, containers: Pod["spec"]["containers"]): Promise<void> {
  const ctx: PodContext = {
    nodeName: "node",
    hostIP: "",
    podIP: "",
    networkMode: options.networkMode,
    allowPrivileged: false,
    volumePaths: new Map(),
    node: { cpus: 2, memoryBytes: 0 },
    configs: noConfigs,
  };
  const sandbox = podSandboxConfig(pod, ctx, 0);
  const sandboxId = await runtime.runPodSandbox(sandbox);
  for (const c of containers) {
    const id = await runtime.createContainer(
      sandboxId,
      containerConfig(pod, c, { ...ctx, attempt: 0, init: false }),
      sandbox,
    );
    await runtime.startContainer(id);
  }
}
const volumes = fakeVolumes();

const spec = (over: Partial<V1PodSpec> = {}): Partial<V1PodSpec> => ({
  containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }],
  ...over,
});

describe("sync loop", () => {
  async function loop(
    sources: Array<"file" | "etcd"> = ["file"],
    volumeManager: (store: PodStore) => VolumeManager = () => volumes,
    extra: Partial<SyncLoopOptions> = {},
    runtimeOn: (clock: FakeClock) => FakeRuntime = (clock) => new FakeRuntime(clock),
    moreDeps: Partial<SyncLoopDeps> = {},
  ) {
    const clock = new FakeClock();
    const runtime = runtimeOn(clock);
    const store = createPodStore({ sources });
    const events = createEventRecorder({ clock });
    let working: WorkingPods[] = [];
    const syncLoop = createSyncLoop(
      { ...options, syncFrequencyMs: 10_000, ...extra },
      {
        store,
        runtime,
        images: createImageManager({ qps: 0, burst: 10, clock, dockerConfigPaths: [] }, runtime),
        volumes: volumeManager(store),
        createProbeManager,
        clock,
        log: silentLogger,
        metrics: { ...noopMetrics, setWorkingPods: (counts) => (working = counts) },
        events,
        ...moreDeps,
      },
    );
    const stop = new AbortController();
    const running = syncLoop.run(stop.signal);
    const settle = async () => {
      for (let i = 0; i < 5; i++) await clock.advance(10);
    };
    return {
      clock,
      runtime,
      store,
      syncLoop,
      settle,
      events,
      /** kubelet_working_pods as the last resync set it, one `lifecycle/config/static count` per series. */
      working: () => working.map((w) => `${w.lifecycle}/${w.config}/${w.static} ${w.count}`).sort(),
      stop: async () => (stop.abort(), await clock.advance(6000), await running),
    };
  }

  test("adopts a healthy running pod after a restart of the kubelet without restarting it", async () => {
    const l = await loop();
    const pod = testPod("web", spec());
    await runAsKubelet(l.runtime, pod, [pod.spec.containers[0]!]);
    l.runtime.calls.length = 0;
    l.store.apply("file", { pods: [pod], rejected: [] });
    await l.settle();
    expect(
      l.runtime.calls.filter((c) => ["createContainer", "stopContainer", "removeContainer"].includes(c.method)),
    ).toEqual([]);
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Running");
    await l.stop();
  });

  test("kubelet_running_pods follows each pod's own pass: a started pod counts, and a stopped one no longer does, before the next full sync", async () => {
    let running: number | undefined;
    const l = await loop(undefined, undefined, undefined, undefined, {
      metrics: { ...noopMetrics, setRunning: (pods) => void (running = pods) },
    });
    await l.settle();
    expect(running).toBe(0);
    l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
    await l.settle();
    expect(running).toBe(1);
    l.store.apply("file", { pods: [], rejected: [] });
    await l.settle();
    expect(running).toBe(0);
    await l.stop();
  });

  test("onChange listeners hear each change of version() (a pod added, its status changing) until they unsubscribe", async () => {
    const l = await loop();
    const heard: number[] = [];
    const unsubscribe = l.syncLoop.onChange(() => heard.push(l.syncLoop.version()));
    l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
    await l.settle();
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Running");
    expect(heard.length).toBeGreaterThan(1);
    expect(heard.at(-1)).toBe(l.syncLoop.version());
    unsubscribe();
    const before = heard.length;
    l.store.apply("file", { pods: [], rejected: [] });
    await l.settle();
    expect(l.syncLoop.version()).not.toBe(heard.at(-1));
    expect(heard.length).toBe(before);
    await l.stop();
  });

  test("a pod removed and added again is reported afresh: Pending until its first sync, not with its old status", async () => {
    const l = await loop();
    const pod = testPod("web", spec());
    l.store.apply("file", { pods: [pod], rejected: [] });
    await l.settle();
    l.store.apply("file", { pods: [], rejected: [] });
    await l.settle();
    expect(l.runtime.containers.size).toBe(0);
    l.store.apply("file", { pods: [pod], rejected: [] });
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Pending");
    await l.settle();
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Running");
    await l.stop();
  });

  test("a pod whose ConfigMap is missing waits with CreateContainerConfigError and starts once it appears", async () => {
    const l = await loop();
    const pod = testPod(
      "cfg",
      spec({
        containers: [
          {
            name: "app",
            image: "local/busybox:stable",
            env: [{ name: "MODE", valueFrom: { configMapKeyRef: { name: "settings", key: "mode" } } }],
          },
        ],
      }),
    );
    l.store.apply("file", { pods: [pod], rejected: [] });
    await l.settle();
    const app = l.syncLoop.pods()[0]!.status!.containerStatuses!.find((c) => c.name === "app")!;
    expect(app.state?.waiting).toEqual({
      reason: "CreateContainerConfigError",
      message: 'configmap "settings" not found',
    });
    const settings = testConfig("ConfigMap", "settings", { data: { mode: "fast" } });
    l.store.apply("file", { pods: [pod], rejected: [], configs: [settings] });
    await l.settle();
    expect(l.syncLoop.pods()[0]!.status!.containerStatuses![0]!.state?.running).toBeDefined();
    const created = l.runtime.calls
      .filter((c) => c.method === "createContainer")
      .map((c) => c.args[1] as ContainerConfig);
    expect(created.at(-1)!.envs).toContainEqual({ key: "MODE", value: "fast" });
    await l.stop();
  });

  test("a changed ConfigMap rewrites a running pod's volume at once, without restarting its container", async () => {
    const written: string[] = [];
    const l = await loop(["file"], (store) => ({
      ...volumes,
      version: (pod) => store.configs.get("ConfigMap", pod.metadata.namespace, "settings")?.data?.mode ?? "-",
      setup: async (pod) => {
        written.push(store.configs.get("ConfigMap", pod.metadata.namespace, "settings")?.data?.mode ?? "-");
        return new Map([["config", { hostPath: "/tmp/config" }]]);
      },
    }));
    const pod = testPod(
      "vol",
      spec({
        containers: [
          {
            name: "app",
            image: "local/busybox:stable",
            volumeMounts: [{ name: "config", mountPath: "/etc/config" }],
          },
        ],
        volumes: [{ name: "config", configMap: { name: "settings" } }],
      }),
    );
    const settings = (mode: string) => testConfig("ConfigMap", "settings", { data: { mode } });
    l.store.apply("file", { pods: [pod], rejected: [], configs: [settings("fast")] });
    await l.settle();
    const before = l.runtime.calls.length;
    l.store.apply("file", { pods: [pod], rejected: [], configs: [settings("slow")] });
    await l.settle();
    expect(written).toEqual(["fast", "slow"]);
    expect(
      l.runtime.calls
        .slice(before)
        .filter((c) => ["createContainer", "stopContainer", "removeContainer"].includes(c.method)),
    ).toEqual([]);
    await l.stop();
  });

  test("kills pods no source wants only after every source has reported", async () => {
    const l = await loop(["file", "etcd"]);
    const orphan = testPod("orphan", spec());
    await runAsKubelet(l.runtime, orphan, []);
    l.store.apply("file", { pods: [], rejected: [] });
    await l.clock.advance(10_000);
    await l.settle();
    expect(l.runtime.containers.size).toBe(1);
    l.store.apply("etcd", { pods: [], rejected: [] });
    await l.settle();
    await l.clock.advance(10_000);
    await l.settle();
    expect(l.runtime.containers.size).toBe(0);
    await l.stop();
  });

  test("an evicted pod is stopped, reported Failed/Evicted and not started again until its manifest changes", async () => {
    const l = await loop();
    const pod = testPod("hog", spec());
    l.store.apply("file", { pods: [pod], rejected: [] });
    await l.settle();
    expect(l.syncLoop.activePods().map((p) => p.metadata.name)).toEqual(["hog"]);
    const message = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ";
    await l.syncLoop.evict(pod, message);
    expect(l.runtime.containers.size).toBe(0);
    expect(l.syncLoop.pods()[0]!.status).toMatchObject({ phase: "Failed", reason: "Evicted", message });
    expect(l.syncLoop.activePods()).toEqual([]);
    await l.clock.advance(10_000); // a full resync
    await l.settle();
    expect(l.runtime.containers.size).toBe(0);
    l.store.apply("file", { pods: [pod], rejected: [] }); // the same manifest again: still evicted
    await l.settle();
    expect(l.runtime.containers.size).toBe(0);
    const edited = testPod(
      "hog",
      spec({ containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "1"] }] }),
    );
    l.store.apply("file", { pods: [edited], rejected: [] });
    await l.settle();
    expect([...l.runtime.containers.values()].filter((c) => c.running)).toHaveLength(2);
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Running");
    await l.stop();
  });

  test("an eviction with a reason and a shorter grace period reports that reason and stops within that period", async () => {
    const l = await loop();
    const pod = testPod("web", spec({ terminationGracePeriodSeconds: 30 }));
    l.store.apply("file", { pods: [pod], rejected: [] });
    await l.settle();
    const message = "Pod was terminated in response to imminent node shutdown.";
    await l.syncLoop.evict(pod, message, { reason: "Terminated", graceSeconds: 5 });
    expect(l.syncLoop.pods()[0]!.status).toMatchObject({ phase: "Failed", reason: "Terminated", message });
    expect(l.runtime.calls.filter((c) => c.method === "stopContainer").map((c) => c.args[1])).toEqual([5]);
    await l.stop();
  });

  test("a pod that finished is not run again when its dead container is garbage-collected, until its manifest changes", async () => {
    const l = await loop();
    const job = (command: string[]) =>
      testPod(
        "job",
        spec({ restartPolicy: "Never", containers: [{ name: "app", image: "local/busybox:stable", command }] }),
      );
    l.store.apply("file", { pods: [job(["true"])], rejected: [] });
    await l.settle();
    const app = () => [...l.runtime.containers.values()].filter((c) => c.labels[LABEL.containerName] === "app");
    l.runtime.exit(app()[0]!.id, 0);
    await l.settle();
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Succeeded");
    await l.runtime.removeContainer(app()[0]!.id); // what the container GC does beyond --maximum_dead_containers
    await l.clock.advance(10_000); // a full resync
    await l.settle();
    expect(app()).toEqual([]);
    expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Succeeded");
    l.store.apply("file", { pods: [job(["sleep", "1"])], rejected: [] });
    await l.settle();
    expect(app().map((c) => c.running)).toEqual([true]);
    await l.stop();
  });

  test("a dead container is restarted on the runtime's die event, not at the next resync", async () => {
    const l = await loop();
    const pod = testPod("web", spec());
    l.store.apply("file", { pods: [pod], rejected: [] });
    await l.settle();
    const app = [...l.runtime.containers.values()].find((c) => c.labels[LABEL.containerName] === "app")!;
    l.runtime.exit(app.id, 1);
    await l.settle();
    expect(
      [...l.runtime.containers.values()].filter((c) => c.labels[LABEL.containerName] === "app" && c.running),
    ).toHaveLength(1);
    await l.stop();
  });

  test("a container's exit is acted on at its die event even while the runtime still lists it as running", async () => {
    const l = await loop();
    l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
    await l.settle();
    const app = [...l.runtime.containers.values()].find((c) => c.labels[LABEL.containerName] === "app")!;
    l.runtime.exit(app.id, 1, { listedAsRunning: true });
    await l.settle();
    const apps = [...l.runtime.containers.values()].filter((c) => c.labels[LABEL.containerName] === "app");
    expect(apps.map((c) => c.running)).toEqual([false, true]);
    await l.stop();
  });

  test("keeps going while Docker is unreachable and resumes when it returns", async () => {
    const l = await loop();
    l.runtime.available = false;
    l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
    await l.clock.advance(20_000);
    await l.settle();
    expect(l.runtime.containers.size).toBe(0);
    l.runtime.available = true;
    await l.clock.advance(20_000);
    await l.settle();
    expect([...l.runtime.containers.values()].some((c) => c.labels[LABEL.containerName] === "app" && c.running)).toBe(
      true,
    );
    await l.stop();
  });

  test("the container hash follows the spec, so unrelated edits do not restart a container", () => {
    const a = testPod("a", spec()).spec.containers[0]!;
    const b = testPod("a", spec({ restartPolicy: "OnFailure" })).spec.containers[0]!;
    expect(containerHash(a)).toBe(containerHash(b));
  });

  describe("pod workers", () => {
    /** A runtime whose containers ignore SIGTERM: a stop takes the whole grace period. */
    class GracefulRuntime extends FakeRuntime {
      override async stopContainer(id: string, graceSeconds: number): Promise<void> {
        if (this.containers.get(id)?.running) await this.clock.sleep(graceSeconds * 1000);
        return super.stopContainer(id, graceSeconds);
      }
    }
    const appRunning = (l: { runtime: FakeRuntime }, pod: Pod) =>
      [...l.runtime.containers.values()].some(
        (c) => c.labels[LABEL.podUid] === pod.metadata.uid && c.labels[LABEL.containerName] === "app" && c.running,
      );

    test("pods waiting out their grace period hold up no other pod: one added meanwhile starts at once", async () => {
      const l = await loop(["file"], undefined, {}, (clock) => new GracefulRuntime(clock));
      const doomed = [0, 1, 2, 3, 4].map((i) => testPod(`doomed-${i}`, spec({ terminationGracePeriodSeconds: 30 })));
      l.store.apply("file", { pods: doomed, rejected: [] });
      await l.settle();
      expect(doomed.every((pod) => appRunning(l, pod))).toBe(true);
      const fresh = testPod("fresh", spec());
      l.store.apply("file", { pods: [fresh], rejected: [] });
      await l.settle();
      expect(appRunning(l, fresh)).toBe(true);
      expect(doomed.every((pod) => appRunning(l, pod))).toBe(true);
      await l.clock.advance(10_000); // a resync sets kubelet_working_pods
      expect(l.working()).toEqual(["sync/desired/true 1", "terminating/orphan/true 5"]);
      await l.clock.advance(20_000);
      await l.settle();
      expect(doomed.some((pod) => appRunning(l, pod))).toBe(false);
      await l.clock.advance(10_000);
      expect(l.working()).toEqual(["sync/desired/true 1"]);
      await l.stop();
    });

    test("a removed pod is listed as terminating, with its deletion time and grace, until its containers are gone", async () => {
      const l = await loop(["file"], undefined, {}, (clock) => new GracefulRuntime(clock));
      const doomed = testPod("doomed", spec({ terminationGracePeriodSeconds: 5 }));
      l.store.apply("file", { pods: [doomed], rejected: [] });
      await l.settle();
      expect(l.syncLoop.terminatingPods()).toEqual([]);
      const removedAt = l.clock.now();
      l.store.apply("file", { pods: [], rejected: [] });
      await l.settle();
      expect(l.syncLoop.pods()).toEqual([]);
      const [terminating] = l.syncLoop.terminatingPods();
      expect(terminating?.metadata).toMatchObject({
        name: "doomed",
        deletionTimestamp: new Date(removedAt + 5000).toISOString().replace(/\.\d+Z$/, "Z"),
        deletionGracePeriodSeconds: 5,
      });
      expect(terminating?.status?.phase).toBe("Running");
      const before = l.syncLoop.version();
      await l.clock.advance(6000);
      await l.settle();
      expect(appRunning(l, doomed)).toBe(false);
      expect(l.syncLoop.terminatingPods()).toEqual([]);
      expect(l.syncLoop.version()).toBeGreaterThan(before);
      await l.stop();
    });

    test("pulls stalled in flight hold up no other pod", async () => {
      const l = await loop();
      const stalled = [0, 1, 2, 3].map((i) => {
        l.runtime.stalledPulls.add(`registry.example/stalled:${i}`);
        return testPod(`stalled-${i}`, spec({ containers: [{ name: "app", image: `registry.example/stalled:${i}` }] }));
      });
      l.store.apply("file", { pods: stalled, rejected: [] });
      await l.settle();
      const fresh = testPod("fresh", spec());
      l.store.apply("file", { pods: [...stalled, fresh], rejected: [] });
      await l.settle();
      expect(appRunning(l, fresh)).toBe(true);
      expect(l.runtime.calls.some((c) => c.method === "pullImage")).toBe(true);
      expect(stalled.some((pod) => appRunning(l, pod))).toBe(false);
      await l.stop();
    });

    test("a pod deleted while a pull of its own is stalled is stopped at once: its kill waits for no pull", async () => {
      const l = await loop();
      l.runtime.stalledPulls.add("registry.example/stalled:1");
      const before = testPod("web", spec());
      l.store.apply("file", { pods: [before], rejected: [] });
      await l.settle();
      const [app] = spec().containers!;
      const grown = testPod("web", spec({ containers: [app!, { name: "side", image: "registry.example/stalled:1" }] }));
      l.store.apply("file", { pods: [grown], rejected: [] });
      await l.settle();
      expect(l.runtime.calls.some((c) => c.method === "pullImage")).toBe(true);
      expect(appRunning(l, grown)).toBe(true);
      l.store.apply("file", { pods: [], rejected: [] });
      await l.settle();
      expect(appRunning(l, grown)).toBe(false);
      expect(l.runtime.containers.size).toBe(0);
      await l.clock.advance(10_000);
      expect(l.working()).toEqual([]);
      await l.stop();
    });

    test("a resync's listing begun before a pod's pass ended is not handed to it: the pod's containers are created once", async () => {
      /** A runtime whose node-wide listing answers late, with what it saw when asked (a pod's own listing is prompt). */
      class LateListingRuntime extends FakeRuntime {
        lateMs = 0;
        override async listPodSandboxes(filter: PodSandboxFilter = {}) {
          const seen = await super.listPodSandboxes(filter);
          if (!filter.podUid && this.lateMs) await this.clock.sleep(this.lateMs);
          return seen;
        }
        override async listContainers(options: { podUid?: string; size?: boolean } = {}) {
          const seen = await super.listContainers(options);
          if (!options.podUid && this.lateMs) await this.clock.sleep(this.lateMs);
          return seen;
        }
      }
      const l = await loop(["file"], undefined, {}, (clock) => new LateListingRuntime(clock));
      const runtime = l.runtime as LateListingRuntime;
      runtime.lateMs = 1000;
      await l.clock.advance(10_000); // the resync lists the node (nothing yet) and waits for its answer
      const pod = testPod("web", spec());
      l.store.apply("file", { pods: [pod], rejected: [] });
      await l.settle(); // meanwhile the pod's own pass creates its sandbox and container
      expect(appRunning(l, pod)).toBe(true);
      await l.clock.advance(1000); // the resync's listing, without them, arrives and the pod is synced again
      await l.settle();
      const created = l.runtime.calls.filter((c) => c.method === "runPodSandbox" || c.method === "createContainer");
      expect(created.map((c) => c.method)).toEqual(["runPodSandbox", "createContainer"]);
      await l.stop();
    });

    test("a container waiting out its grace period shows as not ready and its pod's Ready condition as false", async () => {
      const l = await loop(["file"], undefined, {}, (clock) => new GracefulRuntime(clock));
      const pod = testPod("web", spec({ terminationGracePeriodSeconds: 30 }));
      l.store.apply("file", { pods: [pod], rejected: [] });
      await l.settle();
      const ready = () => {
        const status = l.syncLoop.pods()[0]!.status!;
        return [status.containerStatuses![0]!.ready, status.conditions!.find((c) => c.type === "Ready")!.status];
      };
      expect(ready()).toEqual([true, "True"]);
      // An edit replaces the container: the old one waits out its grace period first.
      const edited = testPod(
        "web",
        spec({
          terminationGracePeriodSeconds: 30,
          containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "7200"] }],
        }),
      );
      l.store.apply("file", { pods: [edited], rejected: [] });
      await l.settle();
      expect(appRunning(l, pod)).toBe(true);
      expect(ready()).toEqual([false, "False"]);
      await l.clock.advance(30_000);
      await l.settle();
      expect(ready()).toEqual([true, "True"]);
      await l.stop();
    });
  });

  describe("resize allocation (the Go kubelet's allocation manager)", () => {
    const policy = {
      maxPods: 10,
      hostNetworkSources: ["*"],
      hostPidSources: ["*"],
      hostIpcSources: ["*"],
      allocatable: { milliCpu: 1000, memoryBytes: 2 ** 33 },
    };
    /** A pod whose one container "app" is limited (so requests) `cpu`; "big" is the older one. */
    const sized = (name: string, cpu: string): Pod => {
      const pod = testPod(
        name,
        spec({
          containers: [
            { name: "app", image: "local/busybox:stable", command: ["sleep", "3600"], resources: { limits: { cpu } } },
          ],
        }),
      );
      const creationTimestamp = name === "big" ? "2026-01-01T00:00:00Z" : "2026-01-02T00:00:00Z";
      return { ...pod, metadata: { ...pod.metadata, creationTimestamp } };
    };
    type Loop = Awaited<ReturnType<typeof loop>>;
    const reported = (l: Loop, name: string) => l.syncLoop.pods().find((p) => p.metadata.name === name)!;
    const pendingOf = (l: Loop, name: string) =>
      reported(l, name).status?.conditions?.find((c) => c.type === "PodResizePending");
    const appOf = (l: Loop, name: string) =>
      [...l.runtime.containers.values()].find(
        (c) => c.labels[LABEL.podName] === name && c.labels[LABEL.containerName] === "app" && c.running,
      );
    const quotaOf = (l: Loop, name: string) => appOf(l, name)?.resources?.cpu_quota;
    /** big (600m) and web (300m) run; web is edited to `cpu`. */
    const resized = async (cpu: string) => {
      const l = await loop(["file"], undefined, { admission: policy });
      const big = sized("big", "600m");
      l.store.apply("file", { pods: [big, sized("web", "300m")], rejected: [] });
      await l.settle();
      l.store.apply("file", { pods: [big, sized("web", cpu)], rejected: [] });
      await l.settle();
      return { l, big };
    };

    test("a resize that fits the node but not beside the other pods is Deferred: not applied, allocatedResources kept", async () => {
      const { l } = await resized("500m");
      expect(pendingOf(l, "web")).toMatchObject({
        status: "True",
        reason: "Deferred",
        message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
      });
      expect(quotaOf(l, "web")).toBe(30_000);
      expect(l.runtime.calls.some((c) => c.method === "updateContainerResources")).toBe(false);
      expect(reported(l, "web").status?.phase).toBe("Running");
      expect(reported(l, "web").status?.containerStatuses?.[0]?.allocatedResources).toEqual({ cpu: "300m" });
      // The spec reported is the one asked for; the event says what waits, in the Go kubelet's words.
      expect(reported(l, "web").spec.containers[0]!.resources).toEqual({ limits: { cpu: "500m" } });
      expect(l.events.list().filter((e) => e.reason === "ResizeDeferred")).toMatchObject([
        {
          type: "Warning",
          message:
            'Pod resize Deferred: {"containers":[{"name":"app","resources":{"limits":{"cpu":"500m"}}}],"generation":0,"error":"Node didn\'t have enough resource: cpu, requested: 500, used: 600, capacity: 1000"}',
        },
      ]);
      await l.stop();
    });

    test("eviction and node shutdown see a pod with a deferred resize at the resources it was allocated", async () => {
      const { l } = await resized("500m");
      const web = l.syncLoop.activePods().find((p) => p.metadata.name === "web")!;
      expect(web.spec.containers[0]!.resources).toEqual({ limits: { cpu: "300m" } });
      await l.stop();
    });

    test("a deferred resize is applied once the other pod is deleted: same container, condition gone", async () => {
      const { l } = await resized("500m");
      const before = appOf(l, "web")!.id;
      l.store.apply("file", { pods: [sized("web", "500m")], rejected: [] });
      await l.settle();
      expect(quotaOf(l, "web")).toBe(50_000);
      expect(pendingOf(l, "web")).toBeUndefined();
      expect(reported(l, "web").status?.containerStatuses?.[0]).toMatchObject({
        allocatedResources: { cpu: "500m" },
        restartCount: 0,
      });
      expect(l.events.list().map((e) => e.reason)).toContain("ResizeStarted");
      expect(appOf(l, "web")!.id).toBe(before);
      await l.stop();
    });

    test("onChange listeners hear every change of version(), a deferred resize allocated when room is freed included", async () => {
      const { l } = await resized("500m");
      const heard: number[] = [];
      l.syncLoop.onChange(() => heard.push(l.syncLoop.version()));
      const from = l.syncLoop.version();
      l.store.apply("file", { pods: [sized("web", "500m")], rejected: [] });
      await l.settle();
      expect(pendingOf(l, "web")).toBeUndefined();
      const to = l.syncLoop.version();
      expect(heard).toEqual(Array.from({ length: to - from }, (_, i) => from + 1 + i));
      await l.stop();
    });

    test("a deferred resize is applied once the other pod shrinks", async () => {
      const { l } = await resized("500m");
      l.store.apply("file", { pods: [sized("big", "400m"), sized("web", "500m")], rejected: [] });
      await l.settle();
      expect([quotaOf(l, "big"), quotaOf(l, "web")]).toEqual([40_000, 50_000]);
      expect(pendingOf(l, "web")).toBeUndefined();
      await l.stop();
    });

    test("a deferred resize stays deferred across a kubelet restart: its allocation is checkpointed, the pod not rejected", async () => {
      let saved: Record<string, Allocation> = {};
      const allocations = { load: () => saved, save: (state: typeof saved) => (saved = structuredClone(state)) };
      const big = sized("big", "600m");
      const first = await loop(["file"], undefined, { admission: policy }, undefined, { allocations });
      first.store.apply("file", { pods: [big, sized("web", "300m")], rejected: [] });
      await first.settle();
      first.store.apply("file", { pods: [big, sized("web", "500m")], rejected: [] });
      await first.settle();
      const id = appOf(first, "web")!.id;
      await first.stop();
      const second = await loop(["file"], undefined, { admission: policy }, () => first.runtime, { allocations });
      second.store.apply("file", { pods: [big, sized("web", "500m")], rejected: [] });
      await second.settle();
      expect(reported(second, "web").status?.phase).toBe("Running");
      expect(pendingOf(second, "web")).toMatchObject({ reason: "Deferred" });
      expect([appOf(second, "web")?.id, quotaOf(second, "web")]).toEqual([id, 30_000]);
      await second.stop();
    });

    test("a pod's allocation leaves the checkpoint once the pod is removed and stopped", async () => {
      let saved: Record<string, Allocation> = {};
      const allocations = { load: () => saved, save: (state: typeof saved) => (saved = structuredClone(state)) };
      const [big, web] = [sized("big", "600m"), sized("web", "300m")];
      const l = await loop(["file"], undefined, { admission: policy }, undefined, { allocations });
      l.store.apply("file", { pods: [big, web], rejected: [] });
      await l.settle();
      expect(Object.keys(saved).sort()).toEqual([big.metadata.uid, web.metadata.uid].sort());
      l.store.apply("file", { pods: [big], rejected: [] });
      await l.settle();
      expect(Object.keys(saved)).toEqual([big.metadata.uid]);
      await l.stop();
    });

    test("a resize beyond the node's allocatable is Infeasible, and the pod runs on as allocated", async () => {
      const { l } = await resized("1500m");
      expect(pendingOf(l, "web")).toMatchObject({
        reason: "Infeasible",
        message: "Node didn't have enough capacity: cpu, requested: 1500, capacity: 1000",
      });
      expect(quotaOf(l, "web")).toBe(30_000);
      expect(l.events.list().map((e) => e.reason)).toContain("ResizeInfeasible");
      await l.stop();
    });
  });

  describe("admission", () => {
    const policy = { maxPods: 2, hostNetworkSources: ["*"], hostPidSources: ["*"], hostIpcSources: ["*"] };
    const running = (l: { runtime: FakeRuntime }, pod: Pod) =>
      [...l.runtime.containers.values()].some(
        (c) => c.labels[LABEL.podUid] === pod.metadata.uid && c.labels[LABEL.containerName] === "app" && c.running,
      );
    const aged = (name: string, time: string, over: Partial<V1PodSpec> = {}): Pod => {
      const pod = testPod(name, spec(over));
      return { ...pod, metadata: { ...pod.metadata, creationTimestamp: time } };
    };

    test("pods beyond maxPods are rejected as OutOfpods with a Warning event, the oldest kept, and reported in pods()", async () => {
      const l = await loop(["file"], undefined, { admission: policy });
      const [a, b, c] = [
        aged("a", "2026-01-01T00:00:00Z"),
        aged("b", "2026-01-02T00:00:00Z"),
        aged("c", "2026-01-03T00:00:00Z"),
      ];
      l.store.apply("file", { pods: [c, b, a], rejected: [] });
      await l.settle();
      expect([a, b, c].map((pod) => running(l, pod))).toEqual([true, true, false]);
      const reported = l.syncLoop.pods().find((p) => p.metadata.name === "c")!;
      expect(reported.status).toMatchObject({
        phase: "Failed",
        reason: "OutOfpods",
        message: "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
      });
      expect(l.events.list().filter((e) => e.reason === "OutOfpods")).toMatchObject([
        { type: "Warning", involvedObject: { name: "c" } },
      ]);
      await l.stop();
    });

    test("a pod refused for room is admitted, oldest first, when an admitted pod leaves", async () => {
      const l = await loop(["file"], undefined, { admission: policy });
      const [a, b, c, d] = ["a", "b", "c", "d"].map((n, i) => aged(n, `2026-01-0${i + 1}T00:00:00Z`)) as [
        Pod,
        Pod,
        Pod,
        Pod,
      ];
      l.store.apply("file", { pods: [a, b, c, d], rejected: [] });
      await l.settle();
      l.store.apply("file", { pods: [b, c, d], rejected: [] });
      await l.settle();
      expect([b, c, d].map((pod) => running(l, pod))).toEqual([true, true, false]);
      expect(l.syncLoop.pods().find((p) => p.metadata.name === "c")!.status?.phase).toBe("Running");
      await l.stop();
    });

    test("a newer pod never displaces a running one, and a pod whose edit asks for a forbidden host namespace is stopped", async () => {
      const l = await loop(["file"], undefined, { admission: { ...policy, hostPidSources: ["etcd"] } });
      const a = aged("a", "2026-01-05T00:00:00Z");
      l.store.apply("file", { pods: [a], rejected: [] });
      await l.settle();
      const older = aged("b", "2026-01-01T00:00:00Z");
      const third = aged("c", "2026-01-02T00:00:00Z");
      l.store.apply("file", { pods: [a, older, third], rejected: [] });
      await l.settle();
      expect([a, older, third].map((pod) => running(l, pod))).toEqual([true, true, false]);
      const edited = aged("a", "2026-01-05T00:00:00Z", { hostPID: true });
      l.store.apply("file", { pods: [edited, older, third], rejected: [] });
      await l.settle();
      expect(running(l, edited)).toBe(false);
      expect(l.syncLoop.pods().find((p) => p.metadata.name === "a")!.status).toMatchObject({
        phase: "Failed",
        reason: "CapabilitiesForbidden",
      });
      expect(running(l, third)).toBe(true);
      await l.stop();
    });

    test("every pod the loop reports carries spec.nodeName, the node's name", async () => {
      const l = await loop();
      l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
      await l.settle();
      expect(l.syncLoop.pods().map((p) => p.spec.nodeName)).toEqual(["node"]);
      await l.stop();
    });
  });

  describe("the periodic resync", () => {
    /** A runtime whose events never arrive: only the resync can see what changed. */
    const deaf = (clock: FakeClock) => {
      const runtime = new FakeRuntime(clock);
      runtime.events = async function* (signal: AbortSignal) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
      };
      return runtime;
    };
    const counting = () => {
      const passes = { count: 0 };
      return { passes, deps: { metrics: { ...noopMetrics, podWorker: () => void passes.count++ } } };
    };

    test("passes over a settled pod once a minute, not at every sync period (once in two minutes, not twelve times)", async () => {
      const { passes, deps } = counting();
      const l = await loop(["file"], undefined, {}, deaf, deps);
      l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
      await l.settle();
      expect(l.syncLoop.pods()[0]!.status?.phase).toBe("Running");
      passes.count = 0;
      for (let t = 0; t < 2 * SETTLED_POD_RESYNC_MS; t += 10_000) await l.clock.advance(10_000);
      await l.settle();
      expect(passes.count).toBe(1);
      await l.stop();
    });

    test("passes at once over a pod whose containers changed unheard (a lost event): it is restarted", async () => {
      const l = await loop(["file"], undefined, {}, deaf);
      l.store.apply("file", { pods: [testPod("web", spec())], rejected: [] });
      await l.settle();
      const [id] = [...l.runtime.containers.keys()];
      await l.runtime.stopContainer(id!, 0);
      l.runtime.calls.length = 0;
      await l.clock.advance(10_000);
      await l.settle();
      expect(l.runtime.calls.map((c) => c.method)).toContain("startContainer");
      await l.stop();
    });

    test("keeps passing every sync period over a pod with a container still waiting (a ConfigMap it reads is missing)", async () => {
      const { passes, deps } = counting();
      const l = await loop(["file"], undefined, {}, deaf, deps);
      const env = [{ name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "a" } } }];
      l.store.apply("file", {
        pods: [testPod("web", spec({ containers: [{ name: "app", image: "local/busybox:stable", env }] }))],
        rejected: [],
      });
      await l.settle();
      passes.count = 0;
      await l.clock.advance(10_000);
      await l.settle();
      expect(passes.count).toBe(1);
      await l.stop();
    });
  });
});
