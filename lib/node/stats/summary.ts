// The pure half of the resource analyzer: the kubelet's stats/v1alpha1 Summary (/stats/summary) built
// from one collection's figures (node measurement, runtime listing and stats, cgroup sample, the last
// filesystem walk); reading them is stats-analyzer.ts's job.
import { LABEL, type ContainerStats, type ContainerSummary, type PodSandboxSummary } from "../../container/runtime.ts";
import type { Pod } from "../../api/types.ts";
import type { NodeMeasurement } from "../eviction/node-signals.ts";
import type { CgroupStats } from "./cgroup-stats.ts";
import type { DiskUsage, FsStats } from "./filesystem.ts";
import type { InterfaceSample, UsageSample } from "./usage-sampler.ts";

/** kubelet stats/v1alpha1 FsStats. */
export interface SummaryFs {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed: number;
}

/** stats/v1alpha1 CPUStats; usageNanoCores once two samples exist. */
export interface SummaryCpu {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds: number;
}

/** stats/v1alpha1 MemoryStats; availableBytes only under a limit. */
export interface SummaryMemory {
  time: string;
  availableBytes?: number;
  usageBytes: number;
  workingSetBytes: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** stats/v1alpha1 InterfaceStats. */
export interface SummaryInterface {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

/** stats/v1alpha1 NetworkStats: the default interface's counters inline, every interface listed. */
export interface SummaryNetwork extends Partial<SummaryInterface> {
  time: string;
  interfaces: SummaryInterface[];
}

export interface ContainerSummaryStats {
  name: string;
  startTime: string;
  cpu?: SummaryCpu;
  memory?: SummaryMemory;
  rootfs?: SummaryFs;
  logs?: SummaryFs;
}

export interface PodSummaryStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime?: string;
  containers: ContainerSummaryStats[];
  network?: SummaryNetwork;
  volume: Array<SummaryFs & { name: string }>;
  /** Absent while the pod has not been measured yet (as upstream's omitempty). */
  cpu?: SummaryCpu;
  memory?: SummaryMemory;
  "ephemeral-storage": SummaryFs;
  process_stats?: { process_count: number };
}

/** stats/v1alpha1 ContainerStats of a system container (kubelet, pods). */
export interface SystemContainerStats {
  name: string;
  startTime: string;
  cpu: SummaryCpu;
  memory: SummaryMemory;
}

/** The kubelet's stats/v1alpha1 Summary. */
export interface StatsSummary {
  node: {
    nodeName: string;
    systemContainers?: SystemContainerStats[];
    startTime: string;
    cpu: SummaryCpu;
    memory: SummaryMemory;
    network?: SummaryNetwork;
    fs: SummaryFs;
    runtime: { imageFs?: SummaryFs; containerFs?: SummaryFs };
    rlimit?: { time: string; maxpid: number; curproc: number };
  };
  pods: PodSummaryStats[];
}

/** The runtime listing of a collection. */
export interface RuntimeListingView {
  containers: ContainerSummary[];
  sandboxes: PodSandboxSummary[];
  /** Each pod's resources as one text, by uid (usage-sampler.ts keys a cgroup's limits by it). */
  podResources?: Map<string, string>;
}

/** The last filesystem walk: containers' writable layers and logs (bytes, by container id), pods' emptyDirs (by uid). */
export interface FsFigures {
  /** ms since the epoch. */
  at: number;
  rootfs: Map<string, number>;
  logs: Map<string, number>;
  volumes: Map<string, Array<{ name: string; usage: DiskUsage }>>;
}

/** One collection's figures. */
export interface SummaryInputs {
  nodeName: string;
  /** When the kubelet started, ISO 8601. */
  startTime: string;
  /** ms since the epoch. */
  now: number;
  node: NodeMeasurement;
  /** Cumulative node CPU, ns. */
  nodeCpuNs: number;
  nodeInterfaces: InterfaceSample[];
  rlimit?: { maxpid: number; curproc: number };
  /** The kubelet process: cumulative CPU (ns) and resident memory. */
  kubelet: { cpuNs: number; rssBytes: number };
  /** Pods with their statuses (for startTime). */
  pods: Pod[];
  listing: RuntimeListingView;
  /** Pods' and containers' CPU and memory are read from cgroups (cgroupsPerQOS), not asked of the runtime. */
  cgroupsPerQOS: boolean;
  /** The cgroup read; undefined without cgroups or when it failed. */
  cgroups?: UsageSample;
  /** Without cgroups: the runtime's stats of running containers and sandboxes, by id. */
  runtimeStats: Map<string, ContainerStats | undefined>;
  fs: FsFigures;
  /** The last collection's Summary: a pod missing from this collection's measurement keeps its last figures. */
  previous?: StatsSummary;
}

/** The Summary of one collection; `rates` keeps the previous CPU samples for usageNanoCores. */
export function buildSummary(input: SummaryInputs, rates: UsageRates): StatsSummary {
  const { node, pods, fs, cgroups: sample } = input;
  const { containers, sandboxes } = input.listing;
  const nowMs = input.now;
  const now = new Date(nowMs).toISOString();
  const fsTime = new Date(fs.at).toISOString();
  const started = input.startTime;
  const stats = input.runtimeStats;
  const cgroupPods = new Map(sample?.pods.map((p) => [p.uid, p]));
  const summaryCpu = (key: string, usage: number, time = now, at = nowMs): SummaryCpu => {
    const nanoCores = rates.rate(key, usage, at);
    return { time, ...(nanoCores !== undefined ? { usageNanoCores: nanoCores } : {}), usageCoreNanoSeconds: usage };
  };
  const kubeletRss = input.kubelet.rssBytes;
  const podsCpu = sample?.pods.reduce((n, p) => n + p.stats.cpuUsageNanoseconds, 0);
  const podsMemory = sample?.pods.reduce((n, p) => n + p.stats.memoryWorkingSetBytes, 0);
  const previousPods = new Map(input.previous?.pods.map((p) => [p.podRef.uid, p]));
  // Each pod's containers and first sandbox found once, not by a scan of the whole listing per pod.
  const containersOf = new Map<string, ContainerSummary[]>();
  for (const c of containers) {
    const uid = c.labels[LABEL.podUid];
    if (uid === undefined) continue;
    const list = containersOf.get(uid);
    if (list) list.push(c);
    else containersOf.set(uid, [c]);
  }
  const sandboxOf = new Map<string, PodSandboxSummary>();
  for (const s of sandboxes) if (!sandboxOf.has(s.metadata.uid)) sandboxOf.set(s.metadata.uid, s);
  const podSummaries = pods.map((pod): PodSummaryStats => {
    const uid = pod.metadata.uid;
    const cgroup = cgroupPods.get(uid);
    const pause = sandboxOf.get(uid);
    const containerStats: ContainerSummaryStats[] = newestPerName(containersOf.get(uid) ?? []).map((c) => {
      const fromCgroup = cgroup?.containers.find((x) => x.id === c.id)?.stats;
      const fromRuntime = stats.get(c.id);
      const time = fromRuntime?.time ?? now;
      return {
        name: c.labels[LABEL.containerName]!,
        startTime: new Date(c.createdAt).toISOString(),
        ...(fromCgroup
          ? { cpu: summaryCpu(c.id, fromCgroup.cpuUsageNanoseconds), memory: summaryMemory(fromCgroup, now) }
          : c.state === "CONTAINER_RUNNING" && !input.cgroupsPerQOS && fromRuntime
            ? {
                cpu: summaryCpu(c.id, fromRuntime.cpuUsageNanoseconds, time, Date.parse(time) || nowMs),
                memory: {
                  time,
                  ...(fromRuntime.memoryLimitBytes
                    ? {
                        availableBytes: Math.max(0, fromRuntime.memoryLimitBytes - fromRuntime.memoryWorkingSetBytes),
                      }
                    : {}),
                  usageBytes: fromRuntime.memoryUsageBytes,
                  workingSetBytes: fromRuntime.memoryWorkingSetBytes,
                },
              }
            : {}),
        ...(fs.rootfs.has(c.id) ? { rootfs: usedFs(fs.rootfs.get(c.id)!, fsTime, node.imageFs) } : {}),
        ...(fs.logs.has(c.id) ? { logs: usedFs(fs.logs.get(c.id)!, fsTime, node.nodeFs) } : {}),
      };
    });
    const volumes = (fs.volumes.get(uid) ?? []).map(({ name, usage }) => ({
      name,
      ...usedFs(usage.bytes, fsTime, node.nodeFs, usage.inodes),
    }));
    const ephemeral =
      containerStats.reduce((n, c) => n + (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0), 0) +
      volumes.reduce((n, v) => n + v.usedBytes, 0);
    const pauseStats = pause ? stats.get(pause.id) : undefined;
    const sum = (pick: (c: ContainerSummaryStats) => number | undefined) =>
      containerStats.reduce((n, c) => n + (pick(c) ?? 0), 0);
    return {
      podRef: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid },
      ...(pod.status?.startTime ? { startTime: pod.status.startTime } : {}),
      containers: containerStats,
      network: cgroup
        ? summaryNetwork(cgroup.interfaces, now)
        : {
            time: pauseStats?.time ?? now,
            rxBytes: pauseStats?.networkRxBytes ?? 0,
            rxErrors: 0,
            txBytes: pauseStats?.networkTxBytes ?? 0,
            txErrors: 0,
            interfaces: [],
          },
      volume: volumes,
      // Not measured this time (its cgroup not read, or no container measured, as right after a container
      // restart): the last figures, with their time, or none; never a zero that reads as "uses nothing".
      ...(cgroup
        ? { cpu: summaryCpu(`pod/${uid}`, cgroup.stats.cpuUsageNanoseconds), memory: summaryMemory(cgroup.stats, now) }
        : !input.cgroupsPerQOS && containerStats.some((c) => c.cpu)
          ? {
              cpu: summaryCpu(
                `pod/${uid}`,
                sum((c) => c.cpu?.usageCoreNanoSeconds),
              ),
              memory: {
                time: now,
                usageBytes: sum((c) => c.memory?.usageBytes),
                workingSetBytes: sum((c) => c.memory?.workingSetBytes),
              },
            }
          : lastFigures(previousPods.get(uid))),
      "ephemeral-storage": usedFs(ephemeral, fsTime, node.nodeFs),
      ...(cgroup ? { process_stats: { process_count: cgroup.stats.pids } } : {}),
    };
  });
  return {
    node: {
      nodeName: input.nodeName,
      systemContainers: [
        {
          name: "kubelet",
          startTime: started,
          cpu: summaryCpu("system/kubelet", input.kubelet.cpuNs),
          memory: { time: now, usageBytes: kubeletRss, workingSetBytes: kubeletRss, rssBytes: kubeletRss },
        },
        ...(podsCpu !== undefined && podsMemory !== undefined
          ? [
              {
                name: "pods",
                startTime: started,
                cpu: summaryCpu("system/pods", podsCpu),
                memory: { time: now, usageBytes: podsMemory, workingSetBytes: podsMemory },
              },
            ]
          : []),
      ],
      startTime: started,
      cpu: summaryCpu("node", input.nodeCpuNs),
      memory: {
        time: now,
        availableBytes: node.memory.availableBytes,
        usageBytes: node.memory.capacityBytes - node.memory.availableBytes,
        workingSetBytes: node.memory.workingSetBytes,
        // The root cgroup's, as cAdvisor's machine-wide figures.
        ...(sample?.root
          ? {
              rssBytes: sample.root.memoryRssBytes,
              pageFaults: sample.root.pageFaults,
              majorPageFaults: sample.root.majorPageFaults,
            }
          : {}),
      },
      network: summaryNetwork(input.nodeInterfaces, now),
      fs: summaryFs(node.nodeFs, now),
      runtime: node.imageFs ? { imageFs: summaryFs(node.imageFs, now), containerFs: summaryFs(node.imageFs, now) } : {},
      ...(input.rlimit ? { rlimit: { time: now, ...input.rlimit } } : {}),
    },
    pods: podSummaries,
  };
}

/** usageNanoCores from the last two samples of cumulative CPU counters, by key. */
export interface UsageRates {
  /** The rate since this key's last sample (ns per s), undefined for its first or after a reset. */
  rate(key: string, usage: number, at: number): number | undefined;
  /** Drops the keys not sampled since the last call (containers and pods that went). */
  forgetUnseen(): void;
}

/**
 * The shortest span a rate is taken over. /proc/stat counts the node's CPU in 10 ms ticks, so two collections a few ms
 * apart (an endpoint asking for pods right after another's collection without them) gave a rate of 0 on an idle node;
 * cAdvisor's samples are its housekeeping interval (1 s at least) apart. A sample closer than this to the key's base
 * answers the base's rate and leaves the base where it is.
 */
export const MIN_RATE_SPAN_MS = 1_000;

/** Rates over the last two samples of each key at least MIN_RATE_SPAN_MS apart. */
export function createUsageRates(): UsageRates {
  const previous = new Map<string, { usage: number; at: number; rate?: number }>();
  const seen = new Set<string>();
  return {
    rate(key: string, usage: number, at: number): number | undefined {
      seen.add(key);
      const before = previous.get(key);
      if (before && usage >= before.usage && at >= before.at && at - before.at < MIN_RATE_SPAN_MS) return before.rate;
      if (!before || at <= before.at || usage < before.usage) {
        previous.set(key, { usage, at });
        return undefined;
      }
      const rate = Math.round(((usage - before.usage) * 1000) / (at - before.at));
      previous.set(key, { usage, at, rate });
      return rate;
    },
    forgetUnseen() {
      for (const key of previous.keys()) if (!seen.has(key)) previous.delete(key);
      seen.clear();
    },
  };
}

/** A pod's CPU and memory from the last Summary, those it had. */
function lastFigures(previous: PodSummaryStats | undefined): Pick<PodSummaryStats, "cpu" | "memory"> {
  return {
    ...(previous?.cpu ? { cpu: previous.cpu } : {}),
    ...(previous?.memory ? { memory: previous.memory } : {}),
  };
}

/** The newest instance of each container name (a crash-looping container is listed though none runs). */
function newestPerName(containers: ContainerSummary[]): ContainerSummary[] {
  const newest = new Map<string, ContainerSummary>();
  for (const c of containers) {
    const name = c.labels[LABEL.containerName] ?? "";
    const known = newest.get(name);
    const rank = (x: ContainerSummary) => [
      x.state === "CONTAINER_RUNNING" ? 1 : 0,
      Number(x.labels[LABEL.restartCount] ?? 0),
      x.createdAt,
    ];
    if (!known || compareRanks(rank(c), rank(known)) > 0) newest.set(name, c);
  }
  return [...newest.values()];
}

function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** MemoryStats from a cgroup: availableBytes only under a limit, as the kubelet reports it. */
function summaryMemory(stats: CgroupStats, time: string): SummaryMemory {
  return {
    time,
    ...(stats.memoryLimitBytes !== undefined
      ? { availableBytes: Math.max(0, stats.memoryLimitBytes - stats.memoryWorkingSetBytes) }
      : {}),
    usageBytes: stats.memoryUsageBytes,
    workingSetBytes: stats.memoryWorkingSetBytes,
    rssBytes: stats.memoryRssBytes,
    pageFaults: stats.pageFaults,
    majorPageFaults: stats.majorPageFaults,
  };
}

/** NetworkStats: eth0 (or the first interface) inline, as the kubelet's default interface, and every interface. */
function summaryNetwork(interfaces: InterfaceSample[], time: string): SummaryNetwork {
  const list = interfaces.map(({ name, rxBytes, rxErrors, txBytes, txErrors }) => ({
    name,
    rxBytes,
    rxErrors,
    txBytes,
    txErrors,
  }));
  const primary = list.find((i) => i.name === "eth0") ?? list[0];
  return { time, ...primary, interfaces: list };
}

function summaryFs(fs: FsStats, time: string): SummaryFs {
  return {
    time,
    availableBytes: fs.availableBytes,
    capacityBytes: fs.capacityBytes,
    usedBytes: fs.usedBytes,
    inodesFree: fs.inodesFree,
    inodes: fs.inodes,
    inodesUsed: fs.inodesUsed,
  };
}

/** A share of a filesystem: its own use, with the filesystem's capacity and availability (as the kubelet reports). */
function usedFs(usedBytes: number, time: string, on: FsStats | undefined, inodesUsed = 0): SummaryFs {
  return {
    time,
    usedBytes,
    inodesUsed,
    ...(on
      ? {
          availableBytes: on.availableBytes,
          capacityBytes: on.capacityBytes,
          inodesFree: on.inodesFree,
          inodes: on.inodes,
        }
      : {}),
  };
}
