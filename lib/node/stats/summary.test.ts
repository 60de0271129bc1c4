import { describe, expect, test } from "bun:test";
import { LABEL, type ContainerStats, type ContainerSummary } from "../../container/runtime.ts";
import { testPod } from "../../testing/pods.ts";
import { usageSample } from "../../testing/usage-samples.ts";
import type { FsStats } from "./filesystem.ts";
import { buildSummary, createUsageRates, MIN_RATE_SPAN_MS, type SummaryInputs } from "./summary.ts";

const INODES = { inodes: 1000, inodesFree: 400, inodesUsed: 600 };
const NODE_FS: FsStats = { capacityBytes: 100e9, availableBytes: 40e9, usedBytes: 60e9, ...INODES };
const IMAGE_FS: FsStats = { ...NODE_FS, capacityBytes: 50e9, availableBytes: 10e9, usedBytes: 40e9 };
const NOW = Date.parse("2026-11-28T12:00:00Z");

const pod = testPod("web", { volumes: [{ name: "scratch", emptyDir: {} }] });
pod.metadata.uid = "u1";

function container(
  id: string,
  name: string,
  overrides: Partial<ContainerSummary> = {},
  restarts = 0,
): ContainerSummary {
  return {
    id,
    name: `k8s_${name}_web_default_u1_${restarts}`,
    podSandboxId: "pause-id",
    labels: { [LABEL.podUid]: "u1", [LABEL.containerName]: name, [LABEL.restartCount]: String(restarts) },
    image: "local/busybox:stable",
    imageId: "sha256:1",
    state: "CONTAINER_RUNNING",
    createdAt: NOW - 60_000,
    ...overrides,
  };
}

const runtimeStats = (overrides: Partial<ContainerStats> = {}): ContainerStats => ({
  time: new Date(NOW).toISOString(),
  cpuUsageNanoseconds: 4e9,
  systemCpuNanoseconds: 0,
  memoryUsageBytes: 3000,
  memoryWorkingSetBytes: 2000,
  memoryLimitBytes: 0,
  networkRxBytes: 0,
  networkTxBytes: 0,
  pids: 1,
  ...overrides,
});

/** One collection: pod web (uid u1) with container app (id app-id) and its sandbox, measured by the runtime. */
function inputs(overrides: Partial<SummaryInputs> = {}): SummaryInputs {
  return {
    nodeName: "node-a",
    startTime: "2026-11-28T11:00:00.000Z",
    now: NOW,
    node: {
      memory: { capacityBytes: 8e9, availableBytes: 6e9, workingSetBytes: 2e9 },
      nodeFs: NODE_FS,
      imageFs: IMAGE_FS,
      observations: {},
    },
    nodeCpuNs: 5e9,
    nodeInterfaces: [],
    kubelet: { cpuNs: 1e9, rssBytes: 5e7 },
    pods: [pod],
    listing: {
      containers: [container("app-id", "app")],
      sandboxes: [
        {
          id: "pause-id",
          metadata: { name: "web", namespace: "default", uid: "u1", attempt: 0 },
          state: "ready",
          createdAt: NOW - 60_000,
          labels: {},
        },
      ],
    },
    cgroupsPerQOS: false,
    runtimeStats: new Map([
      ["app-id", runtimeStats({ memoryLimitBytes: 10_000 })],
      ["pause-id", runtimeStats({ networkRxBytes: 10, networkTxBytes: 20 })],
    ]),
    fs: {
      at: NOW - 30_000,
      rootfs: new Map([["app-id", 8192]]),
      logs: new Map([["app-id", 4096]]),
      volumes: new Map([["u1", [{ name: "scratch", usage: { bytes: 12_288, inodes: 3, complete: true } }]]]),
    },
    ...overrides,
  };
}

describe("the stats summary", () => {
  test("the node's memory use is its capacity less what is available, with its filesystems and the kubelet's own use", () => {
    const { node } = buildSummary(inputs(), createUsageRates());
    expect(node).toMatchObject({
      nodeName: "node-a",
      startTime: "2026-11-28T11:00:00.000Z",
      cpu: { time: "2026-11-28T12:00:00.000Z", usageCoreNanoSeconds: 5e9 },
      memory: { availableBytes: 6e9, usageBytes: 2e9, workingSetBytes: 2e9 },
      fs: { capacityBytes: 100e9, availableBytes: 40e9, usedBytes: 60e9, inodesUsed: 600 },
      runtime: { imageFs: { capacityBytes: 50e9, usedBytes: 40e9 }, containerFs: { capacityBytes: 50e9 } },
    });
    expect(node.systemContainers).toEqual([
      expect.objectContaining({ name: "kubelet", memory: expect.objectContaining({ rssBytes: 5e7 }) }),
    ]);
    expect(node.rlimit).toBeUndefined();
  });

  test("a container's rootfs is a share of the image filesystem and its logs of the node's, at the walk's time; ephemeral storage adds emptyDirs", () => {
    const [web] = buildSummary(inputs(), createUsageRates()).pods;
    const [app] = web!.containers;
    expect(app!.rootfs).toEqual({
      time: "2026-11-28T11:59:30.000Z",
      usedBytes: 8192,
      inodesUsed: 0,
      availableBytes: 10e9,
      capacityBytes: 50e9,
      inodesFree: 400,
      inodes: 1000,
    });
    expect(app!.logs).toMatchObject({ time: "2026-11-28T11:59:30.000Z", usedBytes: 4096, capacityBytes: 100e9 });
    expect(web!.volume).toEqual([expect.objectContaining({ name: "scratch", usedBytes: 12_288, inodesUsed: 3 })]);
    expect(web!["ephemeral-storage"]).toMatchObject({ usedBytes: 8192 + 4096 + 12_288, capacityBytes: 100e9 });
  });

  test("without cgroups a running container's CPU and memory are the runtime's, available only under a limit; the pod's are their sums and its network its sandbox's", () => {
    const [web] = buildSummary(inputs(), createUsageRates()).pods;
    expect(web!.containers[0]).toMatchObject({
      name: "app",
      cpu: { usageCoreNanoSeconds: 4e9 },
      memory: { availableBytes: 8000, usageBytes: 3000, workingSetBytes: 2000 },
    });
    expect(web!.cpu!.usageCoreNanoSeconds).toBe(4e9);
    expect(web!.memory).toMatchObject({ usageBytes: 3000, workingSetBytes: 2000 });
    expect(web!.network).toMatchObject({ rxBytes: 10, txBytes: 20, interfaces: [] });
    expect(web!.process_stats).toBeUndefined();
    const unlimited = inputs({ runtimeStats: new Map([["app-id", runtimeStats()]]) });
    expect(buildSummary(unlimited, createUsageRates()).pods[0]!.containers[0]!.memory).not.toHaveProperty(
      "availableBytes",
    );
  });

  test("with cgroups, CPU, memory, processes and network are the cgroups' and the pods' total is a system container", () => {
    const summary = buildSummary(
      inputs({ cgroupsPerQOS: true, cgroups: usageSample(NOW), runtimeStats: new Map() }),
      createUsageRates(),
    );
    const [web] = summary.pods;
    expect(web!.containers[0]).toMatchObject({
      cpu: { usageCoreNanoSeconds: 2e9 },
      memory: { availableBytes: 64 * 2 ** 20 - 9000, workingSetBytes: 9000, rssBytes: 4000, majorPageFaults: 3 },
    });
    expect(web!.cpu!.usageCoreNanoSeconds).toBe(3e9);
    expect(web!.process_stats).toEqual({ process_count: 2 });
    expect(web!.network).toMatchObject({ name: "eth0", rxBytes: 10, txBytes: 20 });
    expect(summary.node.memory).toMatchObject({ rssBytes: 4000, pageFaults: 77, majorPageFaults: 3 });
    expect(summary.node.systemContainers!.map((c) => [c.name, c.cpu.usageCoreNanoSeconds])).toEqual([
      ["kubelet", 1e9],
      ["pods", 3e9],
    ]);
  });

  test("with cgroups whose read failed, a running container has no CPU nor memory rather than zeros", () => {
    const [web] = buildSummary(inputs({ cgroupsPerQOS: true, runtimeStats: new Map() }), createUsageRates()).pods;
    expect(web!.containers[0]!.cpu).toBeUndefined();
    expect(web!.containers[0]!.memory).toBeUndefined();
  });

  test("a pod its cgroups did not show this time (right after a container restart) keeps its last CPU and memory, with their time", () => {
    const rates = createUsageRates();
    const before = buildSummary(
      inputs({ now: NOW - 10_000, cgroupsPerQOS: true, cgroups: usageSample(NOW - 10_000), runtimeStats: new Map() }),
      rates,
    );
    const missing = { ...usageSample(NOW), pods: [] };
    const [web] = buildSummary(
      inputs({ cgroupsPerQOS: true, cgroups: missing, runtimeStats: new Map(), previous: before }),
      rates,
    ).pods;
    expect(web!.memory).toEqual(before.pods[0]!.memory!);
    expect(web!.memory!.workingSetBytes).toBe(9000);
    expect(web!.cpu).toEqual(before.pods[0]!.cpu!);
    expect(web!.cpu!.time).toBe(new Date(NOW - 10_000).toISOString());
  });

  test("a pod not measured yet has no CPU nor memory rather than zeros, with cgroups or without", () => {
    for (const cgroupsPerQOS of [true, false]) {
      const [web] = buildSummary(inputs({ cgroupsPerQOS, runtimeStats: new Map() }), createUsageRates()).pods;
      expect(web!.cpu).toBeUndefined();
      expect(web!.memory).toBeUndefined();
      expect(web!.containers[0]!.cpu).toBeUndefined();
    }
  });

  test("without cgroups, a running container the runtime gave no stats for leaves its pod's last figures, not zeros", () => {
    const rates = createUsageRates();
    const before = buildSummary(inputs(), rates);
    const [web] = buildSummary(inputs({ runtimeStats: new Map(), previous: before }), rates).pods;
    expect(web!.containers[0]!.memory).toBeUndefined();
    expect(web!.memory).toEqual(before.pods[0]!.memory!);
    expect(web!.memory!.workingSetBytes).toBe(2000);
  });

  test("only the newest instance of each container name is reported: a running one, else the most restarted, else the last created", () => {
    const listing = (containers: ContainerSummary[]) => ({ ...inputs().listing, containers });
    const exited = { state: "CONTAINER_EXITED" as const };
    const startTimes = (containers: ContainerSummary[]) =>
      buildSummary(inputs({ listing: listing(containers) }), createUsageRates()).pods[0]!.containers.map(
        (c) => c.startTime,
      );
    const at = (ms: number) => new Date(NOW - ms).toISOString();
    expect(
      startTimes([
        container("a", "app", { ...exited, createdAt: NOW - 1000 }, 2),
        container("b", "app", { createdAt: NOW - 9000 }, 1),
      ]),
    ).toEqual([at(9000)]);
    expect(
      startTimes([
        container("a", "app", { ...exited, createdAt: NOW - 1000 }, 1),
        container("b", "app", { ...exited, createdAt: NOW - 9000 }, 2),
      ]),
    ).toEqual([at(9000)]);
    expect(
      startTimes([
        container("a", "app", { ...exited, createdAt: NOW - 9000 }, 1),
        container("b", "app", { ...exited, createdAt: NOW - 1000 }, 1),
      ]),
    ).toEqual([at(1000)]);
  });

  test("the host's rlimit and the default interface's counters are reported when read", () => {
    const eth = (name: string, rxBytes: number) => ({
      name,
      rxBytes,
      rxPackets: 0,
      rxErrors: 1,
      rxDropped: 0,
      txBytes: 7,
      txPackets: 0,
      txErrors: 0,
      txDropped: 0,
    });
    const { node } = buildSummary(
      inputs({ rlimit: { maxpid: 4096, curproc: 100 }, nodeInterfaces: [eth("ens3", 5), eth("eth0", 9)] }),
      createUsageRates(),
    );
    expect(node.rlimit).toEqual({ time: "2026-11-28T12:00:00.000Z", maxpid: 4096, curproc: 100 });
    expect(node.network).toMatchObject({ name: "eth0", rxBytes: 9, rxErrors: 1, txBytes: 7 });
    expect(node.network!.interfaces.map((i) => i.name)).toEqual(["ens3", "eth0"]);
  });
});

describe("usage rates", () => {
  test("usageNanoCores comes from a key's second sample on, and is left out after its counter went back", () => {
    const rates = createUsageRates();
    expect(rates.rate("c", 1e9, 0)).toBeUndefined();
    expect(rates.rate("c", 3e9, 10_000)).toBe(2e8);
    expect(rates.rate("c", 1e9, 20_000)).toBeUndefined();
    expect(rates.rate("c", 1e9, 20_000)).toBeUndefined();
  });

  test("a sample less than MIN_RATE_SPAN_MS after the key's base answers the base's rate, and the next rate is over the whole span", () => {
    const rates = createUsageRates();
    rates.rate("node", 0, 0);
    // 40 ms later the node's 10 ms ticks may not have moved: no rate of 0 from that.
    expect(rates.rate("node", 0, 40)).toBeUndefined();
    expect(rates.rate("node", 2e9, 10_000)).toBe(2e8);
    expect(rates.rate("node", 2e9, 10_000 + MIN_RATE_SPAN_MS - 1)).toBe(2e8);
    expect(rates.rate("node", 5e9, 20_000)).toBe(3e8);
  });

  test("a key not sampled between two forgetUnseen calls starts again from its first sample", () => {
    const rates = createUsageRates();
    rates.rate("gone", 1e9, 0);
    rates.rate("kept", 1e9, 0);
    rates.forgetUnseen();
    rates.rate("kept", 2e9, 10_000);
    rates.forgetUnseen();
    expect(rates.rate("gone", 2e9, 20_000)).toBeUndefined();
    expect(rates.rate("kept", 3e9, 20_000)).toBe(1e8);
  });

  test("the summary's CPU rates: a container's over its runtime samples' times, the node's and pods' over the collections'", () => {
    const rates = createUsageRates();
    buildSummary(inputs(), rates);
    rates.forgetUnseen();
    const sampled = runtimeStats({ time: new Date(NOW + 5000).toISOString(), cpuUsageNanoseconds: 5e9 });
    const summary = buildSummary(
      inputs({ now: NOW + 10_000, nodeCpuNs: 25e9, runtimeStats: new Map([["app-id", sampled]]) }),
      rates,
    );
    expect(summary.node.cpu.usageNanoCores).toBe(2e9);
    expect(summary.pods[0]!.containers[0]!.cpu).toMatchObject({
      time: "2026-11-28T12:00:05.000Z",
      usageNanoCores: 2e8,
    });
    expect(summary.pods[0]!.cpu!.usageNanoCores).toBe(1e8);
  });
});
