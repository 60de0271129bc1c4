// What cAdvisor reads of one cgroup — cumulative CPU, memory (usage, working set, rss, cache, page
// faults) and the limits set on it — from the cgroup v1 or v2 files, plus the container cgroups
// below a pod's. The resource analyzer, /metrics/resource and /metrics/cadvisor read these files
// instead of asking the runtime for stats per container.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** One cgroup's counters and limits; absent limits are unlimited. */
export interface CgroupStats {
  cpuUsageNanoseconds: number;
  cpuUserNanoseconds: number;
  cpuSystemNanoseconds: number;
  memoryUsageBytes: number;
  memoryMaxUsageBytes: number;
  /** usage − inactive file pages, as cAdvisor and the kubelet's eviction compute it. */
  memoryWorkingSetBytes: number;
  memoryRssBytes: number;
  memoryCacheBytes: number;
  memoryMappedFileBytes: number;
  memorySwapBytes: number;
  memoryFailcnt: number;
  pageFaults: number;
  majorPageFaults: number;
  memoryLimitBytes?: number;
  cpuShares: number;
  /** CFS quota in µs per period; absent without one. */
  cpuQuota?: number;
  cpuPeriod: number;
  /** Processes (tasks) in the cgroup. */
  pids: number;
}

/** A container's cgroup below its pod's: the runtime's 64-hex container id and the cgroup path. */
export interface ContainerCgroup {
  id: string;
  path: string;
}

export interface CgroupReader {
  version: 1 | 2;
  /** The stats of the cgroup at `path` (below the mount point); undefined when it does not exist. */
  read(path: string): Promise<CgroupStats | undefined>;
  /** The container cgroups directly below `podPath` (cgroupfs `<id>`, systemd `docker-<id>.scope`, `cri-containerd-<id>.scope`). */
  containers(podPath: string): Promise<ContainerCgroup[]>;
  /** A process in the cgroup (its first), for reading the network namespace it is in. */
  firstPid(path: string): Promise<number | undefined>;
}

/** Cgroup values above this are the kernel's "unlimited" (v1 writes PAGE_COUNTER_MAX pages as bytes). */
const UNLIMITED = 2 ** 62;

const statValue = (text: string, key: string) => Number(new RegExp(`^${key} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
const limit = (text: string) => {
  const value = Number(text.trim());
  return text.trim() === "max" || !Number.isFinite(value) || value <= 0 || value >= UNLIMITED ? undefined : value;
};

export function createCgroupReader(options: { mountPoint?: string; version: 1 | 2 }): CgroupReader {
  const mountPoint = options.mountPoint ?? "/sys/fs/cgroup";
  const { version } = options;
  const file = (controller: string, path: string, name: string) =>
    readFile(join(mountPoint, controller, path, name), "utf8").catch(() => "");

  const readV1 = async (path: string): Promise<CgroupStats | undefined> => {
    const [usage, acctStat, memUsage, memMax, memStat, memLimit, failcnt, shares, quota, period, pids] =
      await Promise.all([
        file("cpuacct", path, "cpuacct.usage"),
        file("cpuacct", path, "cpuacct.stat"),
        file("memory", path, "memory.usage_in_bytes"),
        file("memory", path, "memory.max_usage_in_bytes"),
        file("memory", path, "memory.stat"),
        file("memory", path, "memory.limit_in_bytes"),
        file("memory", path, "memory.failcnt"),
        file("cpu", path, "cpu.shares"),
        file("cpu", path, "cpu.cfs_quota_us"),
        file("cpu", path, "cpu.cfs_period_us"),
        file("pids", path, "pids.current"),
      ]);
    if (!usage && !memUsage) return undefined;
    const memoryUsageBytes = Number(memUsage) || 0;
    const ticks = 1e9 / 100; // cpuacct.stat counts USER_HZ (100) ticks
    return {
      cpuUsageNanoseconds: Number(usage) || 0,
      cpuUserNanoseconds: statValue(acctStat, "user") * ticks,
      cpuSystemNanoseconds: statValue(acctStat, "system") * ticks,
      memoryUsageBytes,
      memoryMaxUsageBytes: Number(memMax) || 0,
      memoryWorkingSetBytes: Math.max(0, memoryUsageBytes - statValue(memStat, "total_inactive_file")),
      memoryRssBytes: statValue(memStat, "total_rss"),
      memoryCacheBytes: statValue(memStat, "total_cache"),
      memoryMappedFileBytes: statValue(memStat, "total_mapped_file"),
      memorySwapBytes: statValue(memStat, "total_swap"),
      memoryFailcnt: Number(failcnt) || 0,
      pageFaults: statValue(memStat, "total_pgfault"),
      majorPageFaults: statValue(memStat, "total_pgmajfault"),
      ...(limit(memLimit) !== undefined ? { memoryLimitBytes: limit(memLimit) } : {}),
      cpuShares: Number(shares) || 1024,
      ...(Number(quota) > 0 ? { cpuQuota: Number(quota) } : {}),
      cpuPeriod: Number(period) || 100_000,
      pids: Number(pids) || 0,
    };
  };

  const readV2 = async (path: string): Promise<CgroupStats | undefined> => {
    const [cpuStat, current, peak, memStat, memMax, events, swap, weight, cpuMax, pids] = await Promise.all(
      ["cpu.stat", "memory.current", "memory.peak", "memory.stat", "memory.max", "memory.events"]
        .concat(["memory.swap.current", "cpu.weight", "cpu.max", "pids.current"])
        .map((name) => file("", path, name)),
    );
    if (!cpuStat && !current) return undefined;
    const memoryUsageBytes = Number(current) || 0;
    const [quota = "max", period = "100000"] = (cpuMax || "max 100000").trim().split(/\s+/);
    // The kubelet's CpuWeightToCpuShares, the inverse of the weight the cgroup manager writes.
    const shares = weight ? Math.round(2 + ((Number(weight) - 1) * 262_142) / 9999) : 1024;
    return {
      cpuUsageNanoseconds: statValue(cpuStat, "usage_usec") * 1000,
      cpuUserNanoseconds: statValue(cpuStat, "user_usec") * 1000,
      cpuSystemNanoseconds: statValue(cpuStat, "system_usec") * 1000,
      memoryUsageBytes,
      memoryMaxUsageBytes: Number(peak) || 0,
      memoryWorkingSetBytes: Math.max(0, memoryUsageBytes - statValue(memStat, "inactive_file")),
      memoryRssBytes: statValue(memStat, "anon"),
      memoryCacheBytes: statValue(memStat, "file"),
      memoryMappedFileBytes: statValue(memStat, "file_mapped"),
      memorySwapBytes: Number(swap) || 0,
      memoryFailcnt: statValue(events, "max"),
      pageFaults: statValue(memStat, "pgfault"),
      majorPageFaults: statValue(memStat, "pgmajfault"),
      ...(limit(memMax) !== undefined ? { memoryLimitBytes: limit(memMax) } : {}),
      cpuShares: shares,
      ...(quota !== "max" ? { cpuQuota: Number(quota) } : {}),
      cpuPeriod: Number(period) || 100_000,
      pids: Number(pids) || 0,
    };
  };

  return {
    version,
    read: version === 1 ? readV1 : readV2,
    async firstPid(path) {
      const procs = await file(version === 1 ? "cpuacct" : "", path, "cgroup.procs");
      const pid = Number(procs.split("\n")[0]);
      return pid > 0 ? pid : undefined;
    },
    async containers(podPath) {
      const entries = await readdir(join(mountPoint, version === 1 ? "cpuacct" : "", podPath), {
        withFileTypes: true,
      }).catch(() => []);
      return entries.flatMap((entry) => {
        const id = entry.isDirectory() ? /(?:^|[-:])([0-9a-f]{64})(?:\.scope)?$/.exec(entry.name)?.[1] : undefined;
        return id ? [{ id, path: `${podPath}/${entry.name}` }] : [];
      });
    },
  };
}
