// The sync loop and its pod sync step on a fake runtime and a fake clock.
import { describe, expect, test } from "bun:test";
import { containerConfig, podSandboxConfig, type PodContext } from "../container/container-config.ts";
import type { ContainerConfig } from "../container/cri-types.ts";
import { containerHash } from "../api/hash.ts";
import { LABEL, type PodSandboxFilter } from "../container/runtime.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createImageManager } from "../node/images/images.ts";
import { silentLogger } from "../log.ts";
import { noopMetrics, type WorkingPods } from "../metrics.ts";
import { createPodExecutor, type PodExecutorOptions, type SyncResult } from "./pod-executor.ts";
import { createPodObserver } from "./pod-observer.ts";
import { noneObserved } from "./pod-plan.ts";
import { createProbeManager } from "../node/prober/probes.ts";
import { createPodStore, type PodStore } from "../sources/store.ts";
import { computePodStatus } from "./pod-status.ts";
import { createSyncLoop, type SyncLoopDeps, type SyncLoopOptions } from "./sync-loop.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { fakeVolumes } from "../testing/fake-volumes.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import { noConfigs } from "../api/config-objects.ts";
import type { Pod, V1PodSpec } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import type { Allocation } from "../node/state/allocation-file.ts";

const options: PodExecutorOptions = {
  hostname: "node",
  hostIP: "10.0.0.1",
  networkMode: "none",
  allowPrivileged: false,
};
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
/** What containers wrote to their termination logs, by `<uid>/<name>/<attempt>`. */
const terminationLogs = new Map<string, string>();
const volumes = fakeVolumes(terminationLogs);

function harness() {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const events = createEventRecorder({ clock });
  const images = createImageManager({ qps: 0, burst: 10, clock, events, dockerConfigPaths: [] }, runtime);
  const observer = createPodObserver({ runtime, volumes });
  const syncer = createPodExecutor(options, {
    runtime,
    images,
    volumes,
    configs: noConfigs,
    clock,
    log: silentLogger,
    events,
  });
  let fresh: Set<string> | undefined;
  const sync = async (pod: Pod) => {
    const result = await syncer.syncPod(
      pod,
      (await observer.observe(undefined, fresh)).get(pod.metadata.uid) ?? noneObserved(),
      new Map(),
    );
    fresh = result.resized && new Set(result.resized);
    return result;
  };
  const app = (pod: Pod, name = "app") =>
    [...runtime.containers.values()]
      .filter((c) => c.labels[LABEL.podUid] === pod.metadata.uid && c.labels[LABEL.containerName] === name)
      .sort((a, b) => Number(b.labels[LABEL.restartCount]) - Number(a.labels[LABEL.restartCount]));
  /** The pod's status from what the runtime shows now, after a sync that gave `result`. */
  const statusAfter = async (pod: Pod, result: SyncResult) =>
    computePodStatus({
      pod,
      ...((await observer.observe(undefined, new Set(result.resized))).get(pod.metadata.uid) ?? noneObserved()),
      waiting: result.waiting,
      ...(result.resize ? { resize: result.resize } : {}),
      isReady: () => false,
      isStarted: () => false,
      hostIP: "",
      podIP: "",
      firstSeen: 0,
      now: 0,
    });
  return { clock, runtime, events, observer, syncer, sync, app, statusAfter };
}

const spec = (over: Partial<V1PodSpec> = {}): Partial<V1PodSpec> => ({
  containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] }],
  ...over,
});

describe("pod sync step", () => {
  test("starts a pause container, then the app container in its namespaces, with the dockershim names", async () => {
    const h = harness();
    const pod = testPod("web", spec());
    await h.sync(pod);
    const names = [...h.runtime.containers.values()].map((c) => c.name);
    expect(names).toEqual([`k8s_POD_web_default_${pod.metadata.uid}_0`, `k8s_app_web_default_${pod.metadata.uid}_0`]);
    const app = h.app(pod)[0]!;
    expect(app.sandboxId).toBe([...h.runtime.containers.keys()][0]);
    expect(app.running).toBe(true);
  });

  test("a container's image is looked up once: the pull policy's look gives runAsNonRoot the image's user", async () => {
    const h = harness();
    const lookup = h.runtime.imageStatus.bind(h.runtime);
    h.runtime.imageStatus = async (ref) => {
      const status = await lookup(ref);
      return status && { ...status, uid: 1000 };
    };
    const pod = testPod("web", spec({ securityContext: { runAsNonRoot: true } }));
    const result = await h.sync(pod);
    expect(result.waiting.get("app")).toBeUndefined();
    expect(h.app(pod)[0]?.running).toBe(true);
    expect(h.runtime.calls.filter((c) => c.method === "imageStatus").map((c) => c.args[0])).toEqual([
      "local/busybox:stable",
    ]);
  });

  test("a second sync of an unchanged, running pod does nothing", async () => {
    const h = harness();
    const pod = testPod("web", spec());
    await h.sync(pod);
    const before = h.runtime.calls.filter((c) =>
      ["createContainer", "stopContainer", "removeContainer"].includes(c.method),
    ).length;
    await h.sync(pod);
    expect(
      h.runtime.calls.filter((c) => ["createContainer", "stopContainer", "removeContainer"].includes(c.method)).length,
    ).toBe(before);
  });

  test("a changed container is replaced, the pause container and the others stay", async () => {
    const h = harness();
    const two = (image: string) =>
      testPod(
        "web",
        spec({
          containers: [
            { name: "app", image },
            { name: "side", image: "local/busybox:stable" },
          ],
        }),
      );
    await h.sync(two("local/busybox:stable"));
    const side = h.app(two("x"), "side")[0]!.id;
    h.runtime.images.add("local/busybox:other");
    await h.sync(two("local/busybox:other"));
    const apps = h.app(two("x"));
    expect(apps[0]!.image).toBe("local/busybox:other");
    expect(apps[0]!.labels[LABEL.restartCount]).toBe("1");
    expect(apps[1]!.running).toBe(false);
    expect(h.app(two("x"), "side")[0]!.id).toBe(side);
  });

  test("a pod-level change (hostNetwork) recreates the whole pod", async () => {
    const h = harness();
    await h.sync(testPod("web", spec()));
    const firstPause = [...h.runtime.containers.values()].find((c) => c.labels[LABEL.containerName] === "POD")!.id;
    await h.sync(testPod("web", spec({ hostNetwork: true })));
    const pause = [...h.runtime.containers.values()].find((c) => c.labels[LABEL.containerName] === "POD")!;
    expect(pause.id).not.toBe(firstPause);
    expect(pause.sandbox!.linux!.security_context!.namespace_options!.network).toBe("NODE");
  });

  for (const [policy, code, restarts] of [
    ["Always", 0, true],
    ["Always", 1, true],
    ["OnFailure", 0, false],
    ["OnFailure", 2, true],
    ["Never", 0, false],
    ["Never", 2, false],
  ] as const) {
    test(`restartPolicy ${policy}: a container that exited ${code} is ${restarts ? "" : "not "}restarted`, async () => {
      const h = harness();
      const pod = testPod("job", spec({ restartPolicy: policy }));
      await h.sync(pod);
      h.runtime.exit(h.app(pod)[0]!.id, code);
      await h.sync(pod);
      expect(h.app(pod).length).toBe(restarts ? 2 : 1);
    });
  }

  test("crash loops back off: at once, then 10 s, 20 s, 40 s …, with reason CrashLoopBackOff", async () => {
    const h = harness();
    const pod = testPod("crash", spec());
    await h.sync(pod);
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      h.runtime.exit(h.app(pod)[0]!.id, 1);
      let result = await h.sync(pod);
      let waited = 0;
      while (result.waiting.get("app")?.reason === "CrashLoopBackOff") {
        expect(result.waiting.get("app")!.message).toContain("restarting failed container=app pod=crash_default");
        await h.clock.advance(1000);
        waited += 1000;
        result = await h.sync(pod);
      }
      waits.push(waited);
    }
    expect(waits).toEqual([0, 10_000, 20_000, 40_000]);
  });

  test("init containers run in order to completion before the app containers", async () => {
    const h = harness();
    const pod = testPod(
      "init",
      spec({
        initContainers: [
          { name: "one", image: "local/busybox:stable" },
          { name: "two", image: "local/busybox:stable" },
        ],
      }),
    );
    await h.sync(pod);
    expect(h.app(pod, "one")).toHaveLength(1);
    expect(h.app(pod, "two")).toHaveLength(0);
    expect(h.app(pod, "app")).toHaveLength(0);
    h.runtime.exit(h.app(pod, "one")[0]!.id, 0);
    await h.sync(pod);
    expect(h.app(pod, "two")).toHaveLength(1);
    h.runtime.exit(h.app(pod, "two")[0]!.id, 0);
    await h.sync(pod);
    expect(h.app(pod, "app")[0]!.running).toBe(true);
  });

  test("a failed init container is retried under Always and fails the pod under Never", async () => {
    for (const [policy, retried] of [
      ["Always", true],
      ["Never", false],
    ] as const) {
      const h = harness();
      const pod = testPod(
        "init",
        spec({ restartPolicy: policy, initContainers: [{ name: "one", image: "local/busybox:stable" }] }),
      );
      await h.sync(pod);
      h.runtime.exit(h.app(pod, "one")[0]!.id, 1);
      await h.sync(pod);
      expect(h.app(pod, "one")).toHaveLength(retried ? 2 : 1);
      expect(h.app(pod, "app")).toHaveLength(0);
    }
  });

  test("an image that cannot be pulled becomes ErrImagePull, then ImagePullBackOff, without touching other containers", async () => {
    const h = harness();
    h.runtime.failNext("pullImage", new Error("manifest unknown"));
    const pod = testPod(
      "pull",
      spec({
        containers: [
          { name: "app", image: "reg.example/nope:1" },
          { name: "ok", image: "local/busybox:stable" },
        ],
      }),
    );
    const first = await h.sync(pod);
    expect(first.waiting.get("app")?.reason).toBe("ErrImagePull");
    expect(h.app(pod, "ok")[0]!.running).toBe(true);
    expect((await h.sync(pod)).waiting.get("app")?.reason).toBe("ImagePullBackOff");
    await h.clock.advance(10_000);
    await h.sync(pod);
    expect(h.app(pod, "app")[0]!.running).toBe(true);
  });

  test("a failed machineInfo() at start-up is not cached: nothing is created, and the next sync reads the node's capacity", async () => {
    const h = harness();
    const pod = testPod(
      "limits",
      spec({
        containers: [
          {
            name: "app",
            image: "local/busybox:stable",
            env: [{ name: "CPUS", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } }],
          },
        ],
      }),
    );
    h.runtime.failNext("machineInfo", new Error("Docker is restarting"));
    await expect(h.sync(pod)).rejects.toThrow("cannot read the node's capacity: Docker is restarting");
    expect(h.runtime.containers.size).toBe(0);
    await h.sync(pod);
    expect(h.app(pod)[0]!.config!.envs).toContainEqual({ key: "CPUS", value: "2" });
  });

  test("a sandbox that fails to start is a FailedCreatePodSandBox event, its containers left ContainerCreating", async () => {
    const h = harness();
    const pod = testPod("web", spec());
    h.runtime.failNext("runPodSandbox", new Error("network plugin not ready"));
    const result = await h.sync(pod);
    expect(
      h.events
        .list()
        .filter((e) => e.type === "Warning")
        .map((e) => [e.reason, e.message]),
    ).toEqual([["FailedCreatePodSandBox", "Failed to create pod sandbox: network plugin not ready"]]);
    expect(result.waiting.size).toBe(0);
    expect(result.retryAfterMs).toBe(10_000);
    const status = await h.statusAfter(pod, result);
    expect(status.containerStatuses![0]!.state).toEqual({ waiting: { reason: "ContainerCreating" } });
    expect(status.conditions!.find((c) => c.type === "PodReadyToStartContainers")!.status).toBe("False");
  });

  test("a new pod's host is prepared once: volumes, cgroup and resolv.conf serve its sandbox and its containers", async () => {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    const events = createEventRecorder({ clock });
    const calls: string[] = [];
    const executor = createPodExecutor(options, {
      runtime,
      images: createImageManager({ qps: 0, burst: 10, clock, events, dockerConfigPaths: [] }, runtime),
      volumes: {
        ...volumes,
        setup: async (...args) => (calls.push("volumes"), volumes.setup(...args)),
      },
      configs: noConfigs,
      clock,
      log: silentLogger,
      events,
      cgroups: {
        ensurePod: async () => (calls.push("cgroup"), "/kubepods/pod"),
        removePod: async () => true,
        resizePod: async () => {},
      },
      dns: {
        resolvConfFor: async () => (calls.push("resolv.conf"), "/run/resolv.conf"),
        hostsFileFor: async () => (calls.push("hosts"), "/run/hosts"),
        clusterDomain: "cluster.local",
        forget: () => {},
      },
    });
    const pod = testPod("web", spec());
    await executor.syncPod(pod, noneObserved(), new Map());
    expect(calls).toEqual(["volumes", "cgroup", "resolv.conf", "hosts"]);
    // Both the sandbox and the container were configured from that one setup.
    const configs = runtime.calls.filter((c) => c.method === "runPodSandbox" || c.method === "createContainer");
    expect(configs.map((c) => JSON.stringify(c.args).includes("/kubepods/pod"))).toEqual([true, true]);
  });

  test("killPod stops app containers before their sandbox, then removes the containers before the sandbox", async () => {
    const h = harness();
    const pod = testPod("gone", spec());
    await h.sync(pod);
    const app = h.app(pod)[0]!.id;
    const pause = h.app(pod, "POD")[0]!.id;
    await h.syncer.killPod(pod.metadata.uid, (await h.observer.observe()).get(pod.metadata.uid)!, pod);
    const calls = h.runtime.calls
      .filter((c) => /^(stop|remove)(Container|PodSandbox)$/.test(c.method))
      .map((c) => [c.method, ...c.args]);
    expect(calls).toEqual([
      ["stopContainer", app, 30],
      ["stopPodSandbox", pause],
      ["removeContainer", app],
      ["removePodSandbox", pause],
    ]);
    expect(h.runtime.containers.size).toBe(0);
  });
});

describe("termination messages and OOM kills", () => {
  const status = async (h: ReturnType<typeof harness>, pod: Pod) =>
    computePodStatus({
      pod,
      ...((await h.observer.observe()).get(pod.metadata.uid) ?? noneObserved()),
      waiting: new Map(),
      isReady: () => true,
      isStarted: () => true,
      hostIP: "10.0.0.1",
      podIP: "",
      firstSeen: 0,
      now: h.clock.now(),
    }).containerStatuses![0]!;

  test("what a container wrote to its terminationMessagePath is its terminated state's message", async () => {
    const h = harness();
    const pod = testPod("msg", spec({ restartPolicy: "Never" }));
    await h.sync(pod);
    const app = h.app(pod)[0]!;
    expect(app.config!.mounts).toContainEqual({
      host_path: `/fake/pods/${pod.metadata.uid}/containers/app/0`,
      container_path: "/dev/termination-log",
    });
    expect(app.labels[LABEL.terminationMessagePolicy]).toBe("File");
    terminationLogs.set(`${pod.metadata.uid}/app/0`, "bad config: port 80 in use");
    h.runtime.writeLogs(app.id, "log line\n");
    h.runtime.exit(app.id, 2);
    expect((await status(h, pod)).state?.terminated).toMatchObject({
      exitCode: 2,
      reason: "Error",
      message: "bad config: port 80 in use",
    });
  });

  test("FallbackToLogsOnError takes the log's last lines when a failed container wrote no message", async () => {
    const h = harness();
    const fallback = testPod(
      "fallback",
      spec({
        restartPolicy: "Never",
        containers: [{ name: "app", image: "local/busybox:stable", terminationMessagePolicy: "FallbackToLogsOnError" }],
      }),
    );
    await h.sync(fallback);
    const app = h.app(fallback)[0]!;
    h.runtime.writeLogs(app.id, Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(""));
    h.runtime.exit(app.id, 1);
    const message = (await status(h, fallback)).state!.terminated!.message!;
    expect(message.split("\n").filter(Boolean)).toEqual(Array.from({ length: 80 }, (_, i) => `line ${i + 20}`));
  });

  test("a container killed at its memory limit shows OOMKilled and one OOMKilling event", async () => {
    const h = harness();
    const pod = testPod(
      "oom",
      spec({
        containers: [{ name: "app", image: "local/busybox:stable", resources: { limits: { memory: "16Mi" } } }],
      }),
    );
    await h.sync(pod);
    h.runtime.exit(h.app(pod)[0]!.id, 137, { oomKilled: true });
    await h.sync(pod);
    await h.sync(pod);
    expect((await status(h, pod)).lastState?.terminated).toMatchObject({ reason: "OOMKilled", exitCode: 137 });
    const oom = h.events.list().filter((e) => e.reason === "OOMKilling");
    expect(oom).toHaveLength(1);
    expect(oom[0]).toMatchObject({
      type: "Warning",
      message: "Memory cgroup out of memory: container app was killed at its memory limit 16Mi (exit code 137)",
      involvedObject: { name: "oom", fieldPath: "spec.containers{app}" },
    });
  });
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
});

describe("in-place resize (KEP-1287)", () => {
  const sized = (limits: Record<string, string>) =>
    spec({
      containers: [{ name: "app", image: "local/busybox:stable", command: ["sleep", "3600"], resources: { limits } }],
    });
  const MiB = 2 ** 20;
  /** Syncs the pod as first written, then as edited; returns the edited sync's result and the runtime calls it made. */
  const edit = async (h: ReturnType<typeof harness>, before: Record<string, string>, after: Record<string, string>) => {
    await h.sync(testPod("web", sized(before)));
    const from = h.runtime.calls.length;
    const result = await h.sync(testPod("web", sized(after)));
    return { result, calls: h.runtime.calls.slice(from).map((c) => c.method) };
  };

  test("a cpu and memory limit edit is applied to the running container: same id, new limits, nothing stopped", async () => {
    const h = harness();
    const pod = testPod("web", sized({ cpu: "500m", memory: "64Mi" }));
    const { result, calls } = await edit(h, { cpu: "200m", memory: "32Mi" }, { cpu: "500m", memory: "64Mi" });
    expect(calls.filter((m) => /^(create|start|stop|remove|update)/.test(m))).toEqual(["updateContainerResources"]);
    expect(result.resize).toBeUndefined();
    const [app, ...older] = h.app(pod);
    expect(older).toEqual([]);
    expect(app!.resources).toEqual({
      cpu_period: 100_000,
      cpu_quota: 50_000,
      cpu_shares: 512,
      memory_limit_in_bytes: 64 * MiB,
    });
    // Once in effect, the edit asks for nothing more.
    const again = h.runtime.calls.length;
    await h.sync(pod);
    expect(h.runtime.calls.slice(again).some((c) => c.method === "updateContainerResources")).toBe(false);
  });

  test("a memory limit below the container's use is not applied; the cpu change is, and the status says why", async () => {
    const h = harness();
    // The fake's containers use 512 KiB.
    const { result } = await edit(h, { cpu: "200m", memory: "32Mi" }, { cpu: "500m", memory: "256Ki" });
    const message = `cannot decrease memory limits: attempting to set container "app" memory limit (${256 * 1024}) below current usage (${512 * 1024})`;
    expect(result.resize).toEqual({ type: "PodResizeInProgress", reason: "Error", message });
    expect(h.events.list().filter((e) => e.reason === "ResizeError")).toMatchObject([
      {
        type: "Warning",
        message: `Pod resize error: {"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"256Ki"}}}],"generation":0,"error":${JSON.stringify(message)}}`,
      },
    ]);
    const app = h.app(testPod("web", sized({})))[0]!;
    expect([app.resources!.cpu_quota, app.resources!.memory_limit_in_bytes]).toEqual([50_000, 32 * MiB]);
    const pod = testPod("web", sized({ cpu: "500m", memory: "256Ki" }));
    const status = await h.statusAfter(pod, result);
    expect(status.conditions!.find((c) => c.type === "PodResizeInProgress")).toMatchObject({
      status: "True",
      reason: "Error",
    });
    expect(status.containerStatuses![0]).toMatchObject({
      allocatedResources: { cpu: "500m", memory: "256Ki" },
      resources: { limits: { cpu: "500m", memory: String(32 * MiB) } },
    });
  });

  test("a resize applied in full is reported with the Go kubelet's ResizeCompleted event", async () => {
    const h = harness();
    await edit(h, { cpu: "200m", memory: "32Mi" }, { cpu: "500m", memory: "64Mi" });
    expect(h.events.list().filter((e) => e.reason === "ResizeCompleted")).toMatchObject([
      {
        type: "Normal",
        message:
          'Pod resize completed: {"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"64Mi"}}}],"generation":0}',
      },
    ]);
  });
});
