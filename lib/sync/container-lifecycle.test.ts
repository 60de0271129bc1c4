// One container's start and stop on a fake runtime and a fake clock: events, waiting reasons, hooks, grace period.
import { describe, expect, test } from "bun:test";
import { podSandboxConfig, type PodContext } from "../container/container-config.ts";
import type { ContainerDetails } from "../container/runtime.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createImageManager } from "../node/images/images.ts";
import { noConfigs } from "../api/config-objects.ts";
import type { Pod, V1Container } from "../api/types.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { fakeVolumes } from "../testing/fake-volumes.ts";
import { testPod } from "../testing/pods.ts";
import { createContainerLifecycle, type ContainerDevices } from "./container-lifecycle.ts";
import { silentLogger, type Logger } from "../log.ts";

const ctx: PodContext = {
  nodeName: "node",
  hostIP: "10.0.0.1",
  podIP: "",
  networkMode: "none",
  allowPrivileged: false,
  volumePaths: new Map(),
  node: { cpus: 2, memoryBytes: 2 ** 30 },
  configs: noConfigs,
};

/**
 * A lifecycle on a fake runtime, with a running sandbox for `pod`; `told` lists what it reported beside events;
 * `eventLog` receives the events' lines.
 */
async function harness(
  container: V1Container,
  eventLog?: Logger,
  extra: { devices?: ContainerDevices; containerUnified?: (c: V1Container) => Record<string, string> } = {},
) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const events = createEventRecorder({ clock, ...(eventLog ? { log: eventLog } : {}) });
  const told: string[] = [];
  const lifecycle = createContainerLifecycle({
    runtime,
    images: createImageManager({ qps: 0, burst: 10, clock, events, dockerConfigPaths: [] }, runtime),
    volumes: fakeVolumes(),
    probes: { removeContainer: (id) => void told.push(`probes removed ${id}`) },
    clock,
    events,
    onStopping: (c) => void told.push(`stopping ${c.id}`),
    log: { warn: (line) => void told.push(line) },
    ...extra,
  });
  const pod: Pod = testPod("web", { containers: [container] });
  const sandbox = await runtime.podSandboxStatus(await runtime.runPodSandbox(podSandboxConfig(pod, ctx, 0)));
  const done = { created: 0, killed: 0 };
  const start = () =>
    lifecycle.start(
      pod,
      { spec: container, init: false, attempt: 0, resetBackoff: false, restart: false },
      ctx,
      sandbox,
      done,
      new AbortController().signal,
    );
  const app = () => [...runtime.containers.values()].find((c) => c.id !== sandbox.id) as ContainerDetails;
  const reasons = () => events.list().map((e) => e.reason);
  return { clock, runtime, lifecycle, pod, start, app, reasons, done, told, events };
}

const busybox: V1Container = { name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] };

describe("container lifecycle", () => {
  test("a start creates and starts the container with the Created and Started events", async () => {
    const h = await harness(busybox);
    expect(await h.start()).toBeUndefined();
    expect(h.app().running).toBe(true);
    expect(h.reasons()).toEqual(["Created", "Started"]);
    expect(h.done).toEqual({ created: 1, killed: 0 });
  });

  test("the cgroup v2 files memory QoS gives a container reach the runtime in its unified map", async () => {
    const asked: string[] = [];
    const h = await harness(busybox, undefined, {
      containerUnified: (c) => {
        asked.push(c.name);
        return { "memory.oom.group": "1", "memory.high": "954204160" };
      },
    });
    expect(await h.start()).toBeUndefined();
    const [, config] = h.runtime.calls.find((c) => c.method === "createContainer")!.args as [
      string,
      { linux: { resources: Record<string, unknown> } },
    ];
    expect(config.linux.resources.unified).toEqual({ "memory.oom.group": "1", "memory.high": "954204160" });
    expect(asked).toEqual(["app"]);
    const plain = await harness(busybox, undefined, { containerUnified: () => ({}) });
    await plain.start();
    const [, none] = plain.runtime.calls.find((c) => c.method === "createContainer")!.args as [
      string,
      { linux: { resources: Record<string, unknown> } },
    ];
    expect(none.linux.resources).not.toHaveProperty("unified");
  });

  test("a container the runtime will not start is RunContainerError with a Failed event, its creation counted", async () => {
    const h = await harness(busybox);
    h.runtime.failNext("startContainer", new Error("exec format error"));
    expect(await h.start()).toEqual({ reason: "RunContainerError", message: "exec format error" });
    expect(h.reasons()).toEqual(["Created", "Failed"]);
    expect(h.done.created).toBe(1);
  });

  test("a failed postStart hook stops the container: PostStartHookError and a FailedPostStartHook event", async () => {
    const h = await harness({ ...busybox, lifecycle: { postStart: { exec: { command: ["false"] } } } });
    h.runtime.execHandler = () => ({ exitCode: 1, stdout: "", stderr: "no" });
    const waiting = await h.start();
    expect(waiting?.reason).toBe("PostStartHookError");
    expect(h.app().running).toBe(false);
    expect(h.reasons()).toEqual(["Created", "Started", "FailedPostStartHook"]);
    expect(h.done).toEqual({ created: 1, killed: 1 });
  });

  test("a stop makes the container unready first, runs its preStop hook, then stops it within what is left", async () => {
    const spec = { ...busybox, lifecycle: { preStop: { sleep: { seconds: 3 } } } };
    const h = await harness(spec);
    await h.start();
    const id = h.app().id;
    const stopped = h.lifecycle.stop(
      h.pod,
      { container: h.app(), spec, reason: "PodDeleted", message: "Stopping container app" },
      10,
    );
    await h.clock.advance(3000);
    await stopped;
    expect(h.told).toEqual([`probes removed ${id}`, `stopping ${id}`]);
    expect(h.runtime.calls.filter((c) => c.method === "stopContainer").map((c) => c.args)).toEqual([[id, 7]]);
    expect(h.reasons()).toEqual(["Created", "Started", "Killing"]);
  });

  /** A stop on `h` whose runtime takes `takesMs` (on the fake clock) before the container is killed with `exitCode`. */
  const slowStop = async (h: Awaited<ReturnType<typeof harness>>, takesMs: number, exitCode: number) => {
    h.runtime.stopContainer = async (id) => {
      await h.clock.sleep(takesMs);
      h.runtime.exit(id, exitCode);
    };
    const stopped = h.lifecycle.stop(
      h.pod,
      { container: h.app(), spec: busybox, reason: "SpecChanged", message: "Container app definition changed" },
      30,
    );
    await h.clock.advance(takesMs);
    await stopped;
  };

  test("a container killed when its grace period ran out is said to have ignored SIGTERM, once: an event, logged as a warning", async () => {
    const logged: string[] = [];
    const h = await harness(busybox, { ...silentLogger, warn: (line: string) => void logged.push(line) });
    await h.start();
    await slowStop(h, 30_000, 137);
    expect(logged).toEqual([
      "default/web: container app ignored SIGTERM; killed after 30s (its PID 1 does not exit on SIGTERM; see docs/behaviour.md)",
    ]);
    expect(h.reasons()).toEqual(["Created", "Started", "Killing", "IgnoredSIGTERM"]);
    expect(h.events.list().at(-1)?.message).toBe("container app ignored SIGTERM; killed after 30s");
    expect(h.told.filter((line) => line.includes("SIGTERM"))).toEqual([]);
  });

  test("a container of a pod known only from the runtime that ignored SIGTERM gets a log line", async () => {
    const h = await harness(busybox);
    await h.start();
    h.runtime.stopContainer = async (id) => {
      await h.clock.sleep(30_000);
      h.runtime.exit(id, 137);
    };
    const stopped = h.lifecycle.stop(undefined, { container: h.app(), reason: "PodDeleted", message: "Stopping" }, 30);
    await h.clock.advance(30_000);
    await stopped;
    expect(h.told.filter((line) => line.includes("SIGTERM"))).toEqual([
      "default/web: container app ignored SIGTERM; killed after 30s (its PID 1 does not exit on SIGTERM; see docs/behaviour.md)",
    ]);
  });

  test("a container that exits on SIGTERM, or is killed before its grace period ends, is not said to have ignored it", async () => {
    for (const [takesMs, exitCode] of [
      [2_000, 137],
      [30_000, 143],
      [30_000, 0],
    ] as const) {
      const h = await harness(busybox);
      await h.start();
      await slowStop(h, takesMs, exitCode);
      expect(h.told.filter((line) => line.includes("SIGTERM"))).toEqual([]);
      expect(h.reasons()).toEqual(["Created", "Started", "Killing"]);
    }
  });

  test("a container's device plugin options reach its config; a plugin that cannot allocate is CreateContainerConfigError", async () => {
    const options = {
      envs: [{ key: "WIDGET_IDS", value: "w0" }],
      mounts: [],
      devices: [{ container_path: "/dev/w0", host_path: "/dev/null", permissions: "rw" }],
      annotations: {},
      cdiDevices: [],
    };
    const h = await harness(busybox, undefined, { devices: { runContainerOptions: async () => options } });
    expect(await h.start()).toBeUndefined();
    const created = h.runtime.calls.find((c) => c.method === "createContainer")!.args[1] as {
      devices?: unknown;
      envs?: unknown[];
    };
    expect(created.devices).toEqual(options.devices);
    expect(created.envs?.[0]).toEqual({ key: "WIDGET_IDS", value: "w0" });
    const failing = await harness(busybox, undefined, {
      devices: {
        runContainerOptions: async () => {
          throw new Error("endpoint example.com/widget has been stopped");
        },
      },
    });
    expect(await failing.start()).toEqual({
      reason: "CreateContainerConfigError",
      message: "endpoint example.com/widget has been stopped",
    });
  });
});
