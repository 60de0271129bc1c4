// In-place resize (KEP-1287) of static pods end to end, on each runtime of the matrix: a cpu and memory limit edit
// under resizePolicy NotRequired changes the running container's limits (the runtime's inspect, the container's own
// cgroup files and its pod cgroup) with the same container id; under RestartContainer the container is replaced;
// a memory limit below what the container uses is not applied and the pod's status says why; a cpu edit that fits the
// node's allocatable but not beside the other pod waits (PodResizePending, Deferred) until that pod is deleted.
import { beforeAll, expect } from "bun:test";
import { existsSync, readFileSync, unlinkSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { type ApiPod, type Kubelet, test } from "./harness-kubelet.ts";
import {
  describeOnRuntimes,
  type RuntimeUnderTest,
  staticPodNode,
  testCgroupRoot,
  writePod,
} from "./harness-runtimes.ts";
import { removeDir, runBinary, tempDir } from "./harness.ts";

const MiB = 2 ** 20;
/** 40 MiB in the container's own /dev/shm (tmpfs, charged to its memory) before it idles. */
const FILL = "head -c 41943040 /dev/zero > /dev/shm/fill; ";

/** A cgroup file of a cgroupfs path on the host, cgroup v1 or v2. */
function hostCgroupFile(path: string, v1: [string, string], v2: string): string {
  const unified = existsSync("/sys/fs/cgroup/cgroup.controllers");
  return readFileSync(unified ? join("/sys/fs/cgroup", path, v2) : join("/sys/fs/cgroup", v1[0], path, v1[1]), "utf8")
    .trim()
    .split(" ")[0]!;
}

/**
 * What `kubelet plan` prints for `pods` on the runtime: they are written to a manifest directory of their own, which
 * the running kubelet does not see.
 */
function planOf(rt: RuntimeUnderTest, pods: Record<string, Record<string, unknown>>, extra: string[] = []): string {
  const edited = tempDir("rs-plan");
  const planRoot = tempDir("rs-plan-root");
  try {
    for (const [name, spec] of Object.entries(pods)) writePod(edited, name, spec);
    return runBinary(["plan", "-c", edited, ...rt.flags(planRoot), ...extra]).stdout;
  } finally {
    removeDir(edited);
    removeDir(planRoot);
  }
}

describeOnRuntimes("in-place resize", (services, rt) => {
  const node = staticPodNode("rs", services, rt, ["e2e-rs-web", "e2e-rs-restart", "e2e-rs-full"]);
  let kubelet: Kubelet;
  /** A pod with one container, "app", limited to `cpu` and `memory`, idling after `script`. */
  const sized = (cpu: string, memory: string, extra: Record<string, unknown> = {}, script = "") => ({
    containers: [
      {
        name: "app",
        image: services.busybox,
        command: ["sh", "-c", `${script}trap 'exit 0' TERM; while true; do sleep 0.2; done`],
        resources: { limits: { cpu, memory } },
        ...extra,
      },
    ],
  });
  const write = (name: string, ...args: Parameters<typeof sized>) => node.write(name, sized(...args));
  /** The container's own view of its limits: its cgroup files, read inside it (v2, else v1). */
  const ownLimits = async (id: string) => {
    const read = async (v2: string, v1: string) =>
      (await rt.runtime.exec(id, ["sh", "-c", `cat ${v2} 2>/dev/null || cat ${v1}`])).stdout.trim();
    return {
      memory: await read("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
      cpu: (await read("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")).split(" ")[0],
    };
  };
  /** The pod's and its app container's memory limit and CPU quota on /metrics/cadvisor (two entries). */
  const scrapedLimits = async (pod: string) => {
    const text = await (await fetch(`http://127.0.0.1:${kubelet.port}/metrics/cadvisor`)).text();
    const value = (name: string, container: string) =>
      Number(
        new RegExp(`^${name}\\{container="${container}",.*pod="${pod}"\\} (\\S+) `, "m").exec(text)?.[1] ?? Number.NaN,
      );
    return ["", "app"].map((c) => ({
      memory: value("container_spec_memory_limit_bytes", c),
      quota: value("container_spec_cpu_quota", c),
    }));
  };
  const running = (name: string) => kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
  const condition = (pod: ApiPod, type: string) =>
    (pod.status?.conditions as Array<{ type: string; status: string; reason?: string; message?: string }>)?.find(
      (c) => c.type === type,
    );

  beforeAll(async () => {
    write("e2e-rs-web", "200m", "32Mi");
    write("e2e-rs-restart", "200m", "32Mi", {
      resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }],
    });
    write("e2e-rs-full", "200m", "128Mi", {}, FILL);
    kubelet = await node.start();
  });

  test("kubelet plan shows a resources-only edit as a resize of the same container, not a restart", async () => {
    await running("e2e-rs-web");
    const plan = planOf(rt, { "e2e-rs-web": sized("500m", "64Mi") });
    expect(plan).toContain(
      "~   resize-container app: in place, same container: cpu limit 200m → 500m, cpu request 200m → 500m, memory limit 33554432 → 67108864",
    );
    expect(plan).not.toContain("replace-container app");
  }, 60_000);

  test("a cpu and memory limit edit (NotRequired) changes the running container's limits, same container id", async () => {
    const before = await running("e2e-rs-web");
    expect(await ownLimits(before.id)).toEqual({ memory: String(32 * MiB), cpu: "20000" });
    // Scraped before the edit: the limits /metrics/cadvisor read are kept until the pod's resources change.
    await kubelet.waitFor("the old limits on /metrics/cadvisor", async () =>
      (await scrapedLimits("e2e-rs-web")).every((l) => l.memory === 32 * MiB && l.quota === 20_000),
    );
    write("e2e-rs-web", "500m", "64Mi");
    await kubelet.waitFor(
      "the new limits in the runtime's inspect",
      async () => (await rt.runtime.inspectContainer(before.id)).resources?.memory_limit_in_bytes === 64 * MiB,
    );
    expect((await rt.runtime.inspectContainer(before.id)).resources).toMatchObject({
      cpu_quota: 50_000,
      memory_limit_in_bytes: 64 * MiB,
    });
    expect(await ownLimits(before.id)).toEqual({ memory: String(64 * MiB), cpu: "50000" });
    expect((await rt.running("e2e-rs-web", "app"))?.id).toBe(before.id);
    // Its pod cgroup (Guaranteed: kubepods/pod<uid>) grew with it.
    const uid = before.labels["io.kubernetes.pod.uid"];
    const podPath = `${testCgroupRoot(node.rootDir)}/kubepods/pod${uid}`;
    expect(hostCgroupFile(podPath, ["memory", "memory.limit_in_bytes"], "memory.max")).toBe(String(64 * MiB));
    expect(hostCgroupFile(podPath, ["cpu", "cpu.cfs_quota_us"], "cpu.max")).toBe("50000");
    const pod = await kubelet.waitForPod("e2e-rs-web", "the new limits in its status", (p) => {
      const s = p.status?.containerStatuses?.[0] as { resources?: { limits?: Record<string, string> } } | undefined;
      return s?.resources?.limits?.memory === String(64 * MiB);
    });
    expect(pod.status?.containerStatuses?.[0]).toMatchObject({
      restartCount: 0,
      allocatedResources: { cpu: "500m", memory: "64Mi" },
      resources: { limits: { cpu: "500m", memory: String(64 * MiB) } },
    });
    // The pod's and the container's series show the resize without the container starting again.
    await kubelet.waitFor("the new limits on /metrics/cadvisor", async () =>
      (await scrapedLimits("e2e-rs-web")).every((l) => l.memory === 64 * MiB && l.quota === 50_000),
    );
  }, 120_000);

  test("under resizePolicy RestartContainer a memory edit restarts the container with the new limit", async () => {
    const before = await running("e2e-rs-restart");
    write("e2e-rs-restart", "200m", "48Mi", {
      resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }],
    });
    const after = await kubelet.waitFor("a new container", async () => {
      const now = await rt.running("e2e-rs-restart", "app");
      return now && now.id !== before.id ? now : undefined;
    });
    expect((await rt.runtime.inspectContainer(after.id)).resources?.memory_limit_in_bytes).toBe(48 * MiB);
  }, 120_000);

  test("a memory limit below what the container uses is not applied, and the status says why", async () => {
    const before = await running("e2e-rs-full");
    await kubelet.waitFor(
      "40 MiB used",
      async () => (await rt.runtime.stats(before.id)).memoryWorkingSetBytes > 40 * MiB,
    );
    write("e2e-rs-full", "300m", "16Mi", {}, FILL);
    const pod = await kubelet.waitForPod("e2e-rs-full", "PodResizeInProgress", (p) =>
      condition(p, "PodResizeInProgress"),
    );
    expect(condition(pod, "PodResizeInProgress")).toMatchObject({ status: "True", reason: "Error" });
    expect(condition(pod, "PodResizeInProgress")!.message).toMatch(
      /^cannot decrease memory limits: attempting to set container "app" memory limit \(16777216\) below current usage \(\d+\)$/,
    );
    const resources = (await rt.runtime.inspectContainer(before.id)).resources!;
    // The cpu change went through; the memory limit stayed.
    expect([resources.cpu_quota, resources.memory_limit_in_bytes]).toEqual([30_000, 128 * MiB]);
    expect((await rt.running("e2e-rs-full", "app"))?.id).toBe(before.id);
  }, 120_000);
});

describeOnRuntimes("deferred in-place resize", (services, rt) => {
  const node = staticPodNode("rsd", services, rt, ["e2e-rsd-big", "e2e-rsd-web"]);
  // Node allocatable cpu is 1000m whatever the host's cores: kubeReserved takes the rest.
  const reserved = ["--kube_reserved", `cpu=${cpus().length * 1000 - 1000}m`];
  let kubelet: Kubelet;
  const limited = (cpu: string) => ({
    containers: [
      {
        name: "app",
        image: services.busybox,
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"],
        resources: { limits: { cpu, memory: "32Mi" } },
      },
    ],
  });
  const pending = (pod: ApiPod) =>
    (pod.status?.conditions as Array<{ type: string; reason?: string; message?: string }>)?.find(
      (c) => c.type === "PodResizePending",
    );
  const allocated = (pod: ApiPod) =>
    (pod.status?.containerStatuses?.[0] as { allocatedResources?: Record<string, string> } | undefined)
      ?.allocatedResources;

  beforeAll(async () => {
    node.write("e2e-rsd-big", limited("600m"));
    node.write("e2e-rsd-web", limited("300m"));
    kubelet = await node.start(reserved);
  });

  test("kubelet plan shows a resize that does not fit beside the other pod as Deferred, not as a resize", async () => {
    await kubelet.waitFor(
      "both pods running",
      async () => (await rt.running("e2e-rsd-big", "app")) && (await rt.running("e2e-rsd-web", "app")),
      60_000,
    );
    const plan = planOf(rt, { "e2e-rsd-big": limited("600m"), "e2e-rsd-web": limited("500m") }, reserved);
    expect(plan).toContain(
      "!   wait app: resize Deferred (cpu limit 300m → 500m, cpu request 300m → 500m): Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    );
    expect(plan).not.toContain("resize-container app");
  }, 90_000);

  test("a cpu edit that fits the node but not beside the other pod is Deferred, through a kubelet restart, and applied once that pod is deleted", async () => {
    const before = await kubelet.waitFor("web running", () => rt.running("e2e-rsd-web", "app"), 60_000);
    await kubelet.waitFor("big running", () => rt.running("e2e-rsd-big", "app"), 60_000);
    node.write("e2e-rsd-web", limited("500m"));
    const deferred = await kubelet.waitForPod("e2e-rsd-web", "PodResizePending", pending);
    expect(pending(deferred)).toMatchObject({
      status: "True",
      reason: "Deferred",
      message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    });
    expect(allocated(deferred)).toEqual({ cpu: "300m", memory: "32Mi" });
    expect((await rt.runtime.inspectContainer(before.id)).resources?.cpu_quota).toBe(30_000);
    // A kubelet restart keeps the allocation (its checkpoint): the pod runs on, its resize still deferred.
    await kubelet.stop();
    kubelet = await node.start(reserved);
    const restarted = await kubelet.waitForPod("e2e-rsd-web", "PodResizePending after the restart", pending);
    expect([restarted.status?.phase, pending(restarted)?.reason]).toEqual(["Running", "Deferred"]);
    expect((await rt.running("e2e-rsd-web", "app"))?.id).toBe(before.id);
    unlinkSync(join(node.manifests, "e2e-rsd-big.yaml"));
    await kubelet.waitFor(
      "the resize applied",
      async () => (await rt.runtime.inspectContainer(before.id)).resources?.cpu_quota === 50_000,
    );
    expect((await rt.running("e2e-rsd-web", "app"))?.id).toBe(before.id);
    const applied = await kubelet.waitForPod("e2e-rsd-web", "the condition gone", (p) => !pending(p));
    expect(allocated(applied)).toEqual({ cpu: "500m", memory: "32Mi" });
    expect(applied.status?.containerStatuses?.[0]).toMatchObject({ restartCount: 0 });
  }, 120_000);
});
