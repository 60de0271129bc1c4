// The pod executor on a fake runtime and a fake clock: one pod's plan carried out, step by step.
import { describe, expect, test } from "bun:test";
import { LABEL } from "../container/runtime.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createImageManager } from "../node/images/images.ts";
import { silentLogger } from "../log.ts";
import { createPodExecutor, type PodExecutorOptions, type SyncResult } from "./pod-executor.ts";
import { createPodObserver } from "./pod-observer.ts";
import { noneObserved } from "./pod-plan.ts";
import { computePodStatus } from "./pod-status.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { fakeVolumes } from "../testing/fake-volumes.ts";
import { testPod } from "../testing/pods.ts";
import { noConfigs } from "../api/config-objects.ts";
import type { Pod, V1PodSpec } from "../api/types.ts";

const options: PodExecutorOptions = {
  hostname: "node",
  hostIP: "10.0.0.1",
  networkMode: "none",
  allowPrivileged: false,
};
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

  test("a container the runtime will not start backs off as one that crashed: it is not tried again at once", async () => {
    const h = harness();
    const pod = testPod("web", spec());
    h.runtime.failNext("startContainer", new Error("exec format error"));
    expect((await h.sync(pod)).waiting.get("app")?.reason).toBe("RunContainerError");
    expect((await h.sync(pod)).waiting.get("app")?.reason).toBe("CrashLoopBackOff");
    await h.clock.advance(10_000);
    await h.sync(pod);
    expect(h.app(pod)[0]!.running).toBe(true);
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
