// The resource analyzer (the Go kubelet's, behind /stats/summary): one periodic collector of the
// node's memory and filesystems, every running container's CPU and memory, and — on a slower
// period, since they walk directories — per-container rootfs and log usage and per-pod volume
// usage. Requests read the last collection; nothing is measured on the request path.
import { stat } from "node:fs/promises";
import { readFile } from "node:fs/promises";
import type { Clock } from "../clock.ts";
import { LABEL, type ContainerStats, type Runtime } from "../container/runtime.ts";
import type { KubeletError, Pod } from "../api/types.ts";
import type { Logger } from "../log.ts";
import type { PodUsage } from "./cgroups.ts";
import type { DiskUsage, FsStats } from "./filesystem.ts";
import type { NodeMeasurement } from "./node-signals.ts";

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

export interface ContainerSummaryStats {
  name: string;
  startTime: string;
  cpu: { time: string; usageCoreNanoSeconds: number };
  memory: { time: string; usageBytes: number; workingSetBytes: number };
  rootfs?: SummaryFs;
  logs?: SummaryFs;
}

export interface PodSummaryStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime?: string;
  containers: ContainerSummaryStats[];
  network: { time: string; rxBytes: number; txBytes: number };
  volume: Array<SummaryFs & { name: string }>;
  cpu: { time: string; usageCoreNanoSeconds: number };
  memory: { time: string; usageBytes: number; workingSetBytes: number };
  "ephemeral-storage": SummaryFs;
}

/** The kubelet's stats/v1alpha1 Summary. */
export interface StatsSummary {
  node: {
    nodeName: string;
    startTime: string;
    cpu: { time: string; usageCoreNanoSeconds: number };
    memory: { time: string; availableBytes: number; usageBytes: number; workingSetBytes: number };
    fs: SummaryFs;
    runtime: { imageFs?: SummaryFs };
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
  /** A pod's CPU and memory from its pod cgroup (cgroupsPerQOS), as the kubelet's summary reads them. */
  podCgroupUsage?(podUid: string): Promise<PodUsage | undefined>;
  /** Cumulative node CPU (ns); defaults to /proc/stat. */
  nodeCpu?(): Promise<number>;
}

export interface StatsAnalyzer {
  /** One collection (run every ~10 s). */
  refresh(): Promise<void>;
  /** The last collection; undefined before the first. */
  summary(): StatsSummary | undefined;
}

interface FsCache {
  rootfs: Map<string, number>;
  logs: Map<string, number>;
  volumes: Map<string, Array<{ name: string; usage: DiskUsage }>>;
}

export function createStatsAnalyzer(options: StatsAnalyzerOptions, deps: StatsAnalyzerDeps): StatsAnalyzer {
  const { clock } = options;
  const started = new Date(clock.now() - process.uptime() * 1000).toISOString();
  let last: StatsSummary | undefined;
  let fs: FsCache = { rootfs: new Map(), logs: new Map(), volumes: new Map() };
  let fsAt = -Infinity;
  const samples = new Map<string, { at: number; sample: ContainerStats | undefined }>();
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

  return {
    async refresh() {
      const pods = deps.pods();
      const [node, cpu, listed, sandboxes] = await Promise.all([
        deps.measureNode(),
        (deps.nodeCpu ?? procStatCpu)(),
        deps.runtime.listContainers(),
        deps.runtime.listPodSandboxes({ state: "ready" }),
      ]);
      let containers = listed;
      // A new pod or container is measured at the next collection, not a whole fs period later.
      const unseen =
        pods.some((p) => !fs.volumes.has(p.metadata.uid)) ||
        containers.some((c) => c.state === "CONTAINER_RUNNING" && !fs.rootfs.has(c.id));
      if (unseen || clock.now() - fsAt >= options.fsPeriodMs) {
        containers = await walkFilesystems(pods);
      }
      // A pod's network is its sandbox's: sampled like a running container (the Docker shim's pause answers stats).
      const running: Array<{ id: string }> = [
        ...containers.filter((c) => c.state === "CONTAINER_RUNNING"),
        ...sandboxes,
      ];
      const cgroupUsage = new Map(
        await Promise.all(
          pods.map(
            async (p) =>
              [
                p.metadata.uid,
                deps.podCgroupUsage &&
                  (await measured("the cgroup usage of pod", p.metadata.uid, () =>
                    deps.podCgroupUsage!(p.metadata.uid),
                  )),
              ] as const,
          ),
        ),
      );
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
      const present = new Set([
        ...containers.map((c) => c.id),
        ...running.map((c) => c.id),
        ...pods.map((p) => p.metadata.uid),
      ]);
      for (const [key, id] of reported) if (!present.has(id)) reported.delete(key);
      const stats = new Map(running.map((c) => [c.id, samples.get(c.id)?.sample]));
      const now = new Date(clock.now()).toISOString();
      const fsTime = new Date(fsAt).toISOString();
      last = {
        node: {
          nodeName: options.nodeName,
          startTime: started,
          cpu: { time: now, usageCoreNanoSeconds: cpu },
          memory: {
            time: now,
            availableBytes: node.memory.availableBytes,
            usageBytes: node.memory.capacityBytes - node.memory.availableBytes,
            workingSetBytes: node.memory.workingSetBytes,
          },
          fs: summaryFs(node.nodeFs, now),
          runtime: node.imageFs ? { imageFs: summaryFs(node.imageFs, now) } : {},
        },
        pods: pods.map((pod) => {
          const pause = sandboxes.find((s) => s.metadata.uid === pod.metadata.uid);
          const apps = containers.filter(
            (c) => c.state === "CONTAINER_RUNNING" && c.labels[LABEL.podUid] === pod.metadata.uid,
          );
          const containerStats: ContainerSummaryStats[] = apps.map((c) => {
            const s = stats.get(c.id);
            return {
              name: c.labels[LABEL.containerName]!,
              startTime: new Date(c.createdAt).toISOString(),
              cpu: { time: s?.time ?? now, usageCoreNanoSeconds: s?.cpuUsageNanoseconds ?? 0 },
              memory: {
                time: s?.time ?? now,
                usageBytes: s?.memoryUsageBytes ?? 0,
                workingSetBytes: s?.memoryWorkingSetBytes ?? 0,
              },
              ...(fs.rootfs.has(c.id) ? { rootfs: usedFs(fs.rootfs.get(c.id)!, fsTime, node.imageFs) } : {}),
              ...(fs.logs.has(c.id) ? { logs: usedFs(fs.logs.get(c.id)!, fsTime, node.nodeFs) } : {}),
            };
          });
          const volumes = (fs.volumes.get(pod.metadata.uid) ?? []).map(({ name, usage }) => ({
            name,
            ...usedFs(usage.bytes, fsTime, node.nodeFs, usage.inodes),
          }));
          const ephemeral =
            containerStats.reduce((n, c) => n + (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0), 0) +
            volumes.reduce((n, v) => n + v.usedBytes, 0);
          const pauseStats = pause ? stats.get(pause.id) : undefined;
          const cgroup = cgroupUsage.get(pod.metadata.uid);
          return {
            podRef: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
            ...(pod.status?.startTime ? { startTime: pod.status.startTime } : {}),
            containers: containerStats,
            network: {
              time: pauseStats?.time ?? now,
              rxBytes: pauseStats?.networkRxBytes ?? 0,
              txBytes: pauseStats?.networkTxBytes ?? 0,
            },
            volume: volumes,
            cpu: {
              time: now,
              usageCoreNanoSeconds:
                cgroup?.cpuUsageNanoseconds ?? containerStats.reduce((n, c) => n + c.cpu.usageCoreNanoSeconds, 0),
            },
            memory: {
              time: now,
              usageBytes: cgroup?.memoryUsageBytes ?? containerStats.reduce((n, c) => n + c.memory.usageBytes, 0),
              workingSetBytes:
                cgroup?.memoryWorkingSetBytes ?? containerStats.reduce((n, c) => n + c.memory.workingSetBytes, 0),
            },
            "ephemeral-storage": usedFs(ephemeral, fsTime, node.nodeFs),
          };
        }),
      };
    },
    summary: () => last,
  };
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

/** A json-file log and its rotated siblings (`…-json.log.1`, …). */
async function logBytes(path: string): Promise<number> {
  let total = 0;
  for (let i = 0; ; i++) {
    const s = await stat(i === 0 ? path : `${path}.${i}`).catch(() => undefined);
    if (!s) return total;
    total += s.blocks * 512;
  }
}

async function procStatCpu(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8").catch(() => "")).split("\n")[0] ?? "";
  const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = line.trim().split(/\s+/).map(Number);
  return (user + nice + system + irq + softirq) * 1e7; // USER_HZ 100 → ns
}
