// The resource analyzer (the Go kubelet's, behind /stats/summary): one periodic collector of the
// node's memory and filesystems, every running container's CPU and memory, and — on a slower
// period, since they walk directories — per-container rootfs and log usage and per-pod volume
// usage. Requests read the last collection; nothing is measured on the request path. With pod
// cgroups (cgroupsPerQOS) CPU and memory come from the cgroup files (usage-sampler.ts), and
// usageNanoCores from the last two collections' cumulative usage; without them, from the runtime's
// stats call per container, once per container stats period.
import { readdir, readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Clock } from "../../clock.ts";
import {
  LABEL,
  type ContainerStats,
  type ContainerSummary,
  type PodSandboxSummary,
  type Runtime,
} from "../../container/runtime.ts";
import type { KubeletError, Pod } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import type { CgroupDetail, CgroupStats } from "./cgroup-stats.ts";
import type { DiskUsage, FsStats } from "./filesystem.ts";
import type { NodeMeasurement } from "../eviction/node-signals.ts";
import { parseNetDev, type InterfaceSample, type UsageSample, type UsageSampler } from "./usage-sampler.ts";

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
  cpu: SummaryCpu;
  memory: SummaryMemory;
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

export interface StatsAnalyzerOptions {
  nodeName: string;
  /** Period of the filesystem walks (rootfs, logs, volumes); the Go kubelet's --volume_stats_agg_period is 1m. */
  fsPeriodMs: number;
  /**
   * How old a container's CPU and memory sample may get before it is asked of Docker again (one stats call per
   * container; node memory and pod cgroups are read every collection, they are file reads).
   */
  containerStatsPeriodMs: number;
  clock: Clock;
}

export interface StatsAnalyzerDeps {
  runtime: Runtime;
  /** Where a measurement that failed is reported (once per container and cause), with its cause. */
  log: Logger;
  /** Pods with their statuses (for startTime). */
  pods(): Pod[];
  measureNode(): Promise<NodeMeasurement>;
  /** Usage of a pod's emptyDir volume (hostPath volumes are the host's, not the pod's: not counted). */
  emptyDirUsage(podUid: string, volume: string): Promise<DiskUsage>;
  /**
   * Pods' and containers' CPU and memory from their cgroups (cgroupsPerQOS), as the kubelet's summary reads
   * them; bound to listing() below. Without it, containers are measured by the runtime's stats call.
   */
  sampler?(listing: () => RuntimeListingView): UsageSampler;
  /** Cumulative node CPU (ns); defaults to /proc/stat. */
  nodeCpu?(): Promise<number>;
  /** The node's own cgroups and counters: /proc, the root cgroup; defaults to the host's. */
  host?: HostReader;
}

/** The runtime listing the analyzer keeps from its last collection. */
export interface RuntimeListingView {
  containers: ContainerSummary[];
  sandboxes: PodSandboxSummary[];
}

/** The host readings beyond memory and filesystems: rlimit, network, the root and kubelet cgroups. */
export interface HostReader {
  rlimit(): Promise<{ maxpid: number; curproc: number }>;
  interfaces(): Promise<InterfaceSample[]>;
}

export interface StatsAnalyzer {
  /** One collection (run every ~10 s). */
  refresh(): Promise<void>;
  /** The last collection; undefined before the first. */
  summary(): StatsSummary | undefined;
  /** A fresh read of every pod's cgroups against the last listing (file reads only); undefined without cgroups. */
  sample(detail?: CgroupDetail): Promise<UsageSample | undefined>;
}

interface FsCache {
  rootfs: Map<string, number>;
  logs: Map<string, number>;
  volumes: Map<string, Array<{ name: string; usage: DiskUsage }>>;
}

export function createStatsAnalyzer(options: StatsAnalyzerOptions, deps: StatsAnalyzerDeps): StatsAnalyzer {
  const { clock } = options;
  const started = new Date(clock.now() - process.uptime() * 1000).toISOString();
  const host = deps.host ?? procHost;
  let last: StatsSummary | undefined;
  let fs: FsCache = { rootfs: new Map(), logs: new Map(), volumes: new Map() };
  let fsAt = -Infinity;
  let listing: RuntimeListingView = { containers: [], sandboxes: [] };
  const sampler = deps.sampler?.(() => listing);
  const samples = new Map<string, { at: number; sample: ContainerStats | undefined }>();
  const rates = createRates();
  /** Failures already logged (`<what> <id>: <cause>` → id), forgotten when their container or pod goes. */
  const reported = new Map<string, string>();
  /**
   * A measurement's answer, or undefined when it failed: a container or pod that went meanwhile (NotFound) is
   * not an error; any other failure is logged with its cause, once while it lasts, and the figure left out.
   */
  const measured = async <T>(what: string, id: string, ask: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await ask();
    } catch (error) {
      if ((error as KubeletError).code === "NotFound") return undefined;
      const key = `${what} ${id}: ${(error as Error).message}`;
      if (!reported.has(key)) deps.log.warn(`cannot read ${key}; its figures are left out of /stats/summary`);
      reported.set(key, id);
      return undefined;
    }
  };

  const walkFilesystems = async (pods: Pod[]) => {
    const listed = await deps.runtime.listContainers({ size: true });
    const next: FsCache = { rootfs: new Map(), logs: new Map(), volumes: new Map() };
    for (const c of listed) next.rootfs.set(c.id, c.sizeRwBytes ?? 0);
    await Promise.all(
      listed
        .filter((c) => c.state === "CONTAINER_RUNNING")
        .map(async (c) => {
          const details = await measured("the log path of container", c.id, () => deps.runtime.inspectContainer(c.id));
          if (details?.logPath) next.logs.set(c.id, await logBytes(details.logPath));
        }),
    );
    for (const pod of pods) {
      const volumes: Array<{ name: string; usage: DiskUsage }> = [];
      for (const v of pod.spec.volumes ?? [])
        if (v.emptyDir) volumes.push({ name: v.name, usage: await deps.emptyDirUsage(pod.metadata.uid, v.name) });
      next.volumes.set(pod.metadata.uid, volumes);
    }
    fs = next;
    fsAt = clock.now();
    return listed;
  };

  /** Without cgroups: the runtime's stats of running containers and sandboxes, once per container stats period. */
  const runtimeStats = async (running: Array<{ id: string }>) => {
    const due = running.filter(
      (c) => clock.now() - (samples.get(c.id)?.at ?? -Infinity) >= options.containerStatsPeriodMs,
    );
    await Promise.all(
      due.map(async (c) => {
        const sample = await measured("the stats of container", c.id, () => deps.runtime.stats(c.id));
        samples.set(c.id, { at: clock.now(), sample });
      }),
    );
    for (const id of samples.keys()) if (!running.some((c) => c.id === id)) samples.delete(id);
    return new Map(running.map((c) => [c.id, samples.get(c.id)?.sample]));
  };

  return {
    async refresh() {
      const pods = deps.pods();
      const [node, cpu, listed, sandboxes, rlimit, nodeInterfaces] = await Promise.all([
        deps.measureNode(),
        (deps.nodeCpu ?? procStatCpu)(),
        deps.runtime.listContainers(),
        deps.runtime.listPodSandboxes({ state: "ready" }),
        host.rlimit().catch(() => undefined),
        host.interfaces().catch(() => [] as InterfaceSample[]),
      ]);
      let containers = listed;
      // A new pod or container is measured at the next collection, not a whole fs period later.
      const unseen =
        pods.some((p) => !fs.volumes.has(p.metadata.uid)) ||
        containers.some((c) => c.state === "CONTAINER_RUNNING" && !fs.rootfs.has(c.id));
      if (unseen || clock.now() - fsAt >= options.fsPeriodMs) {
        containers = await walkFilesystems(pods);
      }
      listing = { containers, sandboxes };
      const sample =
        sampler && (await measured("the cgroups of the pods on", options.nodeName, () => sampler.sample("summary")));
      // Failures are reported once while they last: forget those of containers and pods that went.
      const present = new Set([
        options.nodeName,
        ...containers.map((c) => c.id),
        ...sandboxes.map((s) => s.id),
        ...pods.map((p) => p.metadata.uid),
      ]);
      for (const [key, id] of reported) if (!present.has(id)) reported.delete(key);
      const cgroupPods = new Map(sample?.pods.map((p) => [p.uid, p]));
      // A pod's network is its sandbox's: sampled like a running container (the Docker shim's pause answers stats).
      const stats = sampler
        ? new Map<string, ContainerStats | undefined>()
        : await runtimeStats([...containers.filter((c) => c.state === "CONTAINER_RUNNING"), ...sandboxes]);
      const nowMs = clock.now();
      const now = new Date(nowMs).toISOString();
      const fsTime = new Date(fsAt).toISOString();
      const summaryCpu = (key: string, usage: number, time = now, at = nowMs): SummaryCpu => {
        const nanoCores = rates.rate(key, usage, at);
        return { time, ...(nanoCores !== undefined ? { usageNanoCores: nanoCores } : {}), usageCoreNanoSeconds: usage };
      };
      const kubelet = process.cpuUsage();
      const kubeletRss = process.memoryUsage().rss;
      const podsCpu = sample?.pods.reduce((n, p) => n + p.stats.cpuUsageNanoseconds, 0);
      const podsMemory = sample?.pods.reduce((n, p) => n + p.stats.memoryWorkingSetBytes, 0);
      const podSummaries = pods.map((pod): PodSummaryStats => {
        const uid = pod.metadata.uid;
        const cgroup = cgroupPods.get(uid);
        const pause = sandboxes.find((s) => s.metadata.uid === uid);
        const containerStats: ContainerSummaryStats[] = newestPerName(
          containers.filter((c) => c.labels[LABEL.podUid] === uid),
        ).map((c) => {
          const fromCgroup = cgroup?.containers.find((x) => x.id === c.id)?.stats;
          const fromRuntime = stats.get(c.id);
          const time = fromRuntime?.time ?? now;
          return {
            name: c.labels[LABEL.containerName]!,
            startTime: new Date(c.createdAt).toISOString(),
            ...(fromCgroup
              ? { cpu: summaryCpu(c.id, fromCgroup.cpuUsageNanoseconds), memory: summaryMemory(fromCgroup, now) }
              : c.state === "CONTAINER_RUNNING" && !sampler
                ? {
                    cpu: summaryCpu(c.id, fromRuntime?.cpuUsageNanoseconds ?? 0, time, Date.parse(time) || nowMs),
                    memory: {
                      time,
                      ...(fromRuntime?.memoryLimitBytes
                        ? {
                            availableBytes: Math.max(
                              0,
                              fromRuntime.memoryLimitBytes - fromRuntime.memoryWorkingSetBytes,
                            ),
                          }
                        : {}),
                      usageBytes: fromRuntime?.memoryUsageBytes ?? 0,
                      workingSetBytes: fromRuntime?.memoryWorkingSetBytes ?? 0,
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
          cpu: summaryCpu(`pod/${uid}`, cgroup?.stats.cpuUsageNanoseconds ?? sum((c) => c.cpu?.usageCoreNanoSeconds)),
          memory: cgroup
            ? summaryMemory(cgroup.stats, now)
            : {
                time: now,
                usageBytes: sum((c) => c.memory?.usageBytes),
                workingSetBytes: sum((c) => c.memory?.workingSetBytes),
              },
          "ephemeral-storage": usedFs(ephemeral, fsTime, node.nodeFs),
          ...(cgroup ? { process_stats: { process_count: cgroup.stats.pids } } : {}),
        };
      });
      last = {
        node: {
          nodeName: options.nodeName,
          systemContainers: [
            {
              name: "kubelet",
              startTime: started,
              cpu: summaryCpu("system/kubelet", (kubelet.user + kubelet.system) * 1000),
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
          cpu: summaryCpu("node", cpu),
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
          network: summaryNetwork(nodeInterfaces, now),
          fs: summaryFs(node.nodeFs, now),
          runtime: node.imageFs
            ? { imageFs: summaryFs(node.imageFs, now), containerFs: summaryFs(node.imageFs, now) }
            : {},
          ...(rlimit ? { rlimit: { time: now, ...rlimit } } : {}),
        },
        pods: podSummaries,
      };
      rates.forgetUnseen();
    },
    summary: () => last,
    async sample(detail) {
      const sample = await sampler?.sample(detail);
      for (const c of sample?.pods.flatMap((p) => p.containers) ?? [])
        if (fs.rootfs.has(c.id)) c.rootfsBytes = fs.rootfs.get(c.id);
      return sample;
    },
  };
}

/** usageNanoCores from the last two samples of a cumulative counter; keys not seen in a collection are dropped. */
function createRates() {
  const previous = new Map<string, { usage: number; at: number }>();
  const seen = new Set<string>();
  return {
    rate(key: string, usage: number, at: number): number | undefined {
      seen.add(key);
      const before = previous.get(key);
      previous.set(key, { usage, at });
      if (!before || at <= before.at || usage < before.usage) return undefined;
      return Math.round(((usage - before.usage) * 1000) / (at - before.at));
    },
    forgetUnseen() {
      for (const key of previous.keys()) if (!seen.has(key)) previous.delete(key);
      seen.clear();
    },
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

/**
 * Rotated siblings of a container log, as each runtime names them: the container log manager's CRI rotation
 * `<log>.<YYYYMMDD-hhmmss>` (gzipped `.gz` once older), a compression cut short (`.tmp`), and Docker's json-file
 * `<log>.1`, `<log>.2` (`.N.gz` with its compress option).
 */
const ROTATED = /^(?:\d{8}-\d{6}(?:\.gz|\.tmp)?|\d+(?:\.gz)?)$/;

/** A container log and its rotated siblings, in bytes on disk. */
async function logBytes(path: string): Promise<number> {
  const prefix = `${basename(path)}.`;
  const siblings = await readdir(dirname(path)).catch(() => [] as string[]);
  const files = [
    path,
    ...siblings
      .filter((n) => n.startsWith(prefix) && ROTATED.test(n.slice(prefix.length)))
      .map((n) => join(dirname(path), n)),
  ];
  const sizes = await Promise.all(
    files.map((f) =>
      stat(f).then(
        (s) => s.blocks * 512,
        () => 0,
      ),
    ),
  );
  return sizes.reduce((n, b) => n + b, 0);
}

async function procStatCpu(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8").catch(() => "")).split("\n")[0] ?? "";
  const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = line.trim().split(/\s+/).map(Number);
  return (user + nice + system + irq + softirq) * 1e7; // USER_HZ 100 → ns
}

/** The host's /proc: pid_max and the number of processes (the kubelet's rlimit), and the node's interfaces. */
const procHost: HostReader = {
  async rlimit() {
    const [max, entries] = await Promise.all([readFile("/proc/sys/kernel/pid_max", "utf8"), readdir("/proc")]);
    return { maxpid: Number(max.trim()), curproc: entries.filter((e) => /^\d+$/.test(e)).length };
  },
  async interfaces() {
    return parseNetDev(await readFile("/proc/net/dev", "utf8"));
  },
};
