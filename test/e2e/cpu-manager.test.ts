// The CPU, memory and topology managers end to end, on each runtime of the matrix, on this machine (2 CPUs, one
// NUMA node): cpuManagerPolicy static with reservedSystemCPUs "0" gives a Guaranteed pod with cpu: 1 CPU 1 alone
// and a BestEffort pod the shared pool (Cpus_allowed_list of the container's process, read from the host's /proc);
// topologyManagerPolicy single-numa-node with the Static memory manager admits it on node 0; a kubelet restart
// keeps the assignment (cpu_manager_state); deleting the pod returns CPU 1 to the shared pool, written into the
// BestEffort container in place (same container id); and a start with another policy is refused.
import { beforeAll, expect } from "bun:test";
import { readdirSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import type { ContainerSummary } from "../../lib/container/runtime.ts";
import { type Kubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";
import { runBinary } from "./harness.ts";
import { podResourcesClient } from "../../lib/testing/podresources-client.ts";

/** The host PID of a container's process: the process whose cgroup path names the container's id. */
function hostPid(container: ContainerSummary): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cgroup`, "utf8").includes(container.id)) return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

/** A field of /proc/<pid>/status (Cpus_allowed_list, Mems_allowed_list). */
function procStatus(pid: number, field: string): string | undefined {
  return new RegExp(`^${field}:\\s*(.*)$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]?.trim();
}

describeOnRuntimes("CPU, memory and topology managers", (services, rt) => {
  const node = staticPodNode("cpumgr", services, rt, ["e2e-cpu-pinned", "e2e-cpu-shared"]);
  const flags = [
    "--cpu_manager_policy",
    "static",
    "--reserved_cpus",
    "0",
    "--cpu_manager_reconcile_period",
    "1s",
    "--topology_manager_policy",
    "single-numa-node",
    "--memory_manager_policy",
    "Static",
    // Node allocatable's memory reservation is the default hard eviction threshold, 100Mi.
    "--reserved_memory",
    "0:memory=100Mi",
  ];
  const idle = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"];
  let kubelet: Kubelet;
  const cpusOf = async (pod: string) => {
    const container = await kubelet.waitFor(`${pod} running`, () => rt.running(pod, "app"), 60_000);
    const pid = await kubelet.waitFor(`${pod}'s process`, () => hostPid(container));
    return { id: container.id, pid, uid: container.labels["io.kubernetes.pod.uid"]! };
  };
  const allowed = (pid: number, want: string) =>
    kubelet.waitFor(
      `Cpus_allowed_list ${want} for ${pid}`,
      () => procStatus(pid, "Cpus_allowed_list") === want,
      15_000,
    );
  const state = (name: string) => JSON.parse(readFileSync(join(node.rootDir, name), "utf8"));

  beforeAll(async () => {
    node.write("e2e-cpu-pinned", {
      containers: [
        {
          name: "app",
          image: services.busybox,
          command: idle,
          resources: { requests: { cpu: "1", memory: "32Mi" }, limits: { cpu: "1", memory: "32Mi" } },
        },
      ],
    });
    node.write("e2e-cpu-shared", { containers: [{ name: "app", image: services.busybox, command: idle }] });
    kubelet = await node.start(flags);
  });

  test("the Guaranteed container runs on CPU 1 alone and the BestEffort one on the shared pool, CPU 0", async () => {
    const pinned = await cpusOf("e2e-cpu-pinned");
    const shared = await cpusOf("e2e-cpu-shared");
    await allowed(pinned.pid, "1");
    await allowed(shared.pid, "0");
    expect(procStatus(pinned.pid, "Mems_allowed_list")).toBe("0");
    expect(state("cpu_manager_state")).toMatchObject({
      policyName: "static",
      defaultCpuSet: "0",
      entries: { [pinned.uid]: { app: "1" } },
    });
    // single-numa-node admitted it on the one node, where the memory manager took its 32Mi.
    expect(state("memory_manager_state").entries[pinned.uid].app).toEqual([
      { numaAffinity: [0], type: "memory", size: 32 * 2 ** 20 },
    ]);
  });

  test("the pod resources API lists the Guaranteed container's CPU 1 and its memory, and no CPU for the BestEffort one", async () => {
    await cpusOf("e2e-cpu-pinned");
    const client = await podResourcesClient(join(node.rootDir, "pod-resources", "kubelet.sock"));
    try {
      const pods = (await client.list()).pod_resources;
      const app = (name: string) => pods.find((p: { name: string }) => p.name.startsWith(name))?.containers[0];
      expect(app("e2e-cpu-pinned")).toMatchObject({
        cpu_ids: [1],
        memory: [{ memory_type: "memory", size: 32 * 2 ** 20, topology: { nodes: [{ ID: 0 }] } }],
      });
      expect(app("e2e-cpu-shared")?.cpu_ids).toEqual([]);
      expect((await client.getAllocatableResources()).cpu_ids).toEqual([1]);
    } finally {
      client.close();
    }
  });

  test("a kubelet restart keeps the assignment from cpu_manager_state", async () => {
    const before = await cpusOf("e2e-cpu-pinned");
    const file = readFileSync(join(node.rootDir, "cpu_manager_state"), "utf8");
    await kubelet.stop();
    kubelet = await node.start(flags);
    // Restored before any pod is read: CPU 1 is still out of the shared pool (a fresh state would start at 0-1).
    expect(kubelet.output).toMatch(/reserved 0, shared pool 0"/);
    await kubelet.waitForPod("e2e-cpu-pinned", "running again", (p) => p.status?.phase === "Running");
    const after = await cpusOf("e2e-cpu-pinned");
    expect(after.id).toBe(before.id);
    expect(procStatus(after.pid, "Cpus_allowed_list")).toBe("1");
    expect(JSON.parse(readFileSync(join(node.rootDir, "cpu_manager_state"), "utf8"))).toEqual(JSON.parse(file));
  });

  test("deleting the Guaranteed pod returns CPU 1 to the shared pool, written into the other container in place", async () => {
    const shared = await cpusOf("e2e-cpu-shared");
    unlinkSync(join(node.manifests, "e2e-cpu-pinned.yaml"));
    await kubelet.waitFor("e2e-cpu-pinned gone", async () => !(await rt.running("e2e-cpu-pinned", "app")), 60_000);
    await allowed(shared.pid, "0-1");
    expect((await cpusOf("e2e-cpu-shared")).id).toBe(shared.id);
    await kubelet.waitFor("the state file's pool", () => state("cpu_manager_state").defaultCpuSet === "0-1");
    expect(state("cpu_manager_state").entries).toBeUndefined();
  });

  test("a start with another CPU manager policy than the state file's is refused in upstream's words", async () => {
    await kubelet.stop();
    const { code, stdout, stderr } = runBinary([
      "run",
      "-c",
      node.manifests,
      ...rt.flags(node.rootDir),
      "--network_container_image",
      services.pause,
      "--cpu_manager_policy",
      "none",
      "--port",
      "0",
    ]);
    expect(code).not.toBe(0);
    // The JSON log escapes the quotes.
    expect((stdout + stderr).replaceAll('\\"', '"')).toContain(
      `start cpu manager error: could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file "${join(node.rootDir, "cpu_manager_state")}" before restarting Kubelet`,
    );
  });
});
