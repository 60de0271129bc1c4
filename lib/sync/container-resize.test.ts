// In-place resize on a fake runtime: the pod cgroup around the container updates, a memory decrease below use refused.
import { describe, expect, test } from "bun:test";
import type { LinuxResources } from "../container/runtime.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { silentLogger } from "../log.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testPod } from "../testing/pods.ts";
import { createContainerResizer } from "./container-resize.ts";
import type { ContainerResize } from "./pod-resize.ts";

const MiB = 2 ** 20;
const limits = (cpuQuota: number, memory: number): LinuxResources =>
  ({ cpu_period: 100_000, cpu_quota: cpuQuota, cpu_shares: 512, memory_limit_in_bytes: memory }) as LinuxResources;

/** A resizer on a fake runtime with one running container (using 512 KiB); `calls` orders cgroup and runtime calls. */
async function harness() {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const events = createEventRecorder({ clock });
  const calls: string[] = [];
  const resize = createContainerResizer({
    runtime: {
      stats: (id) => runtime.stats(id),
      updateContainerResources: async (id, to) => void calls.push(`update ${to.cpu_quota}/${to.memory_limit_in_bytes}`),
    },
    cgroups: { resizePod: async (_pod, step) => void calls.push(`cgroup ${step}`) },
    log: silentLogger,
    events,
  });
  const pod = testPod("web");
  const container = await runtime.inspectContainer(runtime.seedRunning(pod));
  const change = (from: LinuxResources, to: LinuxResources, resources: ContainerResize["resources"]) =>
    ({ spec: pod.spec.containers[0]!, container, from, to, resources }) as ContainerResize;
  return { resize, events, calls, pod, container, change };
}

describe("container resize", () => {
  test("the pod cgroup grows before the containers are updated and is set to its final size after them", async () => {
    const h = await harness();
    const done = { resized: [] as string[] };
    const left = await h.resize(
      h.pod,
      [h.change(limits(20_000, 32 * MiB), limits(50_000, 64 * MiB), ["cpu", "memory"])],
      done,
    );
    expect(left).toBeUndefined();
    expect(h.calls).toEqual(["cgroup grow", `update 50000/${64 * MiB}`, "cgroup final"]);
    expect(done.resized).toEqual([h.container.id]);
    expect(h.events.list().map((e) => e.reason)).toEqual(["ResizeCompleted"]);
  });

  test("a memory limit below what the container uses is kept, the rest applied, and the pod cgroup not shrunk", async () => {
    const h = await harness();
    const left = await h.resize(
      h.pod,
      [h.change(limits(20_000, 32 * MiB), limits(50_000, 256 * 1024), ["cpu", "memory"])],
      { resized: [] },
    );
    expect(left).toMatchObject({ type: "PodResizeInProgress", reason: "Error" });
    expect(left?.message).toContain(`below current usage (${512 * 1024})`);
    expect(h.calls).toEqual(["cgroup grow", `update 50000/${32 * MiB}`]);
    expect(h.events.list().map((e) => e.reason)).toEqual(["ResizeError"]);
  });
});
