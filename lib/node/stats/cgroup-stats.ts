// What cAdvisor reads of one cgroup — cumulative CPU, memory (usage, working set, rss, cache, page
// faults) and the limits set on it — from the cgroup v1 or v2 files, plus the container cgroups
// below a pod's. The resource analyzer, /metrics/resource and /metrics/cadvisor read these files
// instead of asking the runtime for stats per container.
import { existsSync, readdirSync, type Dirent } from "node:fs";
import { join } from "node:path";
import { createOpenFiles, openFilesLimit } from "./open-files.ts";

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

/**
 * How much of a cgroup to read: "all"; "summary", what /stats/summary shows of a pod (cumulative CPU, memory usage and
 * working set, rss and page faults, the memory limit and the process count); "limits", what it shows of a container
 * (the same without the process count); or "usage" (the counters without the limit and the count). The counters a
 * level leaves out read 0 and no limit is reported.
 */
export type CgroupDetail = "all" | "summary" | "limits" | "usage";

/** The files a "usage" read opens, v1 and v2. */
const USAGE_FILES = new Set(["cpuacct.usage", "memory.usage_in_bytes", "memory.stat", "cpu.stat", "memory.current"]);
/** The files a "limits" read opens: a container's in the stats analyzer's collection every 10 s, 4 of 11 on v1. */
const LIMITS_FILES = new Set([...USAGE_FILES, "memory.limit_in_bytes", "memory.max"]);
/** The files a "summary" read opens: a pod's in the same collection, 5 of 11 (v1) or 10 (v2) per cgroup. */
const SUMMARY_FILES = new Set([...LIMITS_FILES, "pids.current"]);
const FILES: Record<CgroupDetail, Set<string> | undefined> = {
  all: undefined,
  summary: SUMMARY_FILES,
  limits: LIMITS_FILES,
  usage: USAGE_FILES,
};

/**
 * The files that hold a cgroup's limits (v1: 4 of 11, v2: 3 of 10): set when a container starts and when it is resized,
 * so a read given a limits key takes them again only when the key changed (see CgroupReader.read).
 */
const LIMIT_FILES = new Set([
  "memory.limit_in_bytes",
  "cpu.shares",
  "cpu.cfs_quota_us",
  "cpu.cfs_period_us",
  "memory.max",
  "cpu.weight",
  "cpu.max",
]);

/** The files of a cgroup read, in the order read (controller, name); the last is cgroup.procs, read for firstPid. */
const V1_FILES: Array<[string, string]> = [
  ["cpuacct", "cpuacct.usage"],
  ["cpuacct", "cpuacct.stat"],
  ["memory", "memory.usage_in_bytes"],
  ["memory", "memory.max_usage_in_bytes"],
  ["memory", "memory.stat"],
  ["memory", "memory.limit_in_bytes"],
  ["memory", "memory.failcnt"],
  ["cpu", "cpu.shares"],
  ["cpu", "cpu.cfs_quota_us"],
  ["cpu", "cpu.cfs_period_us"],
  ["pids", "pids.current"],
  ["cpuacct", "cgroup.procs"],
];
const V2_FILES: Array<[string, string]> = [
  "cpu.stat",
  "memory.current",
  "memory.peak",
  "memory.stat",
  "memory.max",
  "memory.events",
  "memory.swap.current",
  "cpu.weight",
  "cpu.max",
  "pids.current",
  "cgroup.procs",
].map((name) => ["", name]);

/** Per level of detail, whether each file of the version's list is read. */
const wanted = (files: Array<[string, string]>) =>
  Object.fromEntries(
    Object.entries(FILES).map(([detail, names]) => [detail, files.map(([, name]) => !names || names.has(name))]),
  ) as Record<CgroupDetail, boolean[]>;

export interface CgroupReader {
  version: 1 | 2;
  /**
   * The stats of the cgroup at `path` (below the mount point); undefined when it does not exist (absent files: 0).
   * With `limitsKey`, the limit files are read only when the key differs from the one this path was last read with
   * (the caller's word for "started or resized since"): their last texts are used otherwise.
   */
  read(path: string, detail?: CgroupDetail, limitsKey?: string): Promise<CgroupStats | undefined>;
  /** The container cgroups directly below `podPath` (cgroupfs `<id>`, systemd `docker-<id>.scope`, `cri-containerd-<id>.scope`). */
  containers(podPath: string): Promise<ContainerCgroup[]>;
  /** A process in the cgroup (its first), for reading the network namespace it is in. */
  firstPid(path: string): Promise<number | undefined>;
  /** Ends a round of reads (one sample of every pod): the files of cgroups no longer read are closed. */
  sweep(): void;
}

/** Cgroup values above this are the kernel's "unlimited" (v1 writes PAGE_COUNTER_MAX pages as bytes). */
const UNLIMITED = 2 ** 62;

/**
 * The value of one `key value` line of a flat-keyed file (memory.stat, cpu.stat), 0 without one: found with indexOf,
 * since a scrape reads thousands of these files and a regular expression per key and file cost more than the read.
 */
const statField = (key: string) => {
  const first = `${key} `;
  const later = `\n${key} `;
  return (text: string): number => {
    let start = first.length;
    if (!text.startsWith(first)) {
      const at = text.indexOf(later);
      if (at < 0) return 0;
      start = at + later.length;
    }
    const end = text.indexOf("\n", start);
    const value = text.slice(start, end < 0 ? text.length : end);
    return /^\d+$/.test(value) ? Number(value) : 0;
  };
};
const [userTicks, systemTicks] = [statField("user"), statField("system")];
const [totalInactiveFile, totalRss, totalCache, totalMappedFile, totalSwap, totalPgfault, totalPgmajfault] = [
  "total_inactive_file",
  "total_rss",
  "total_cache",
  "total_mapped_file",
  "total_swap",
  "total_pgfault",
  "total_pgmajfault",
].map(statField) as Array<(text: string) => number>;
const [usageUsec, userUsec, systemUsec, inactiveFile, anon, file, fileMapped, pgfault, pgmajfault, maxEvents] = [
  "usage_usec",
  "user_usec",
  "system_usec",
  "inactive_file",
  "anon",
  "file",
  "file_mapped",
  "pgfault",
  "pgmajfault",
  "max",
].map(statField) as Array<(text: string) => number>;
const limit = (text: string) => {
  const value = Number(text.trim());
  return text.trim() === "max" || !Number.isFinite(value) || value <= 0 || value >= UNLIMITED ? undefined : value;
};

export function createCgroupReader(options: { mountPoint?: string; version: 1 | 2 }): CgroupReader {
  const mountPoint = options.mountPoint ?? "/sys/fs/cgroup";
  const { version } = options;
  // Synchronous on purpose: cgroup files are generated by the kernel on read, never wait on a disk, and a scrape of
  // 110 pods reads thousands of them, where an asynchronous read's own overhead is most of the cost. They stay open
  // between reads (open-files.ts).
  const files = createOpenFiles({ limit: openFilesLimit() });
  const list = version === 1 ? V1_FILES : V2_FILES;
  const detailed = wanted(list);
  /**
   * Each cgroup's file paths, joined once while it is read (a path.join per file and scrape was a tenth of a
   * scrape's CPU), with its limit files' last texts and the key they were read under; the cgroups not read in the
   * last sweeps go with their files.
   */
  interface Known {
    files: string[];
    limitsKey?: string;
    limits: string[];
  }
  let paths = new Map<string, Known>();
  let pathsBefore = new Map<string, Known>();
  const isLimit = list.map(([, name]) => LIMIT_FILES.has(name));
  const knownOf = (path: string) => {
    let known = paths.get(path);
    if (!known) {
      known = pathsBefore.get(path) ?? {
        files: list.map(([controller, name]) => join(mountPoint, controller, path, name)),
        limits: [],
      };
      paths.set(path, known);
    }
    return known;
  };
  /** The files of the cgroup at `path` (in the version's list order, cgroup.procs left out), "" where `detail` skips one. */
  const readFiles = (path: string, detail: CgroupDetail, limitsKey: string | undefined) => {
    const known = knownOf(path);
    const filePaths = known.files;
    const read = detailed[detail];
    if (known.limitsKey !== limitsKey) {
      known.limitsKey = limitsKey;
      known.limits = [];
    }
    const texts: string[] = [];
    for (let i = 0; i < filePaths.length - 1; i++) {
      if (!read[i]) texts.push("");
      else if (limitsKey === undefined || !isLimit[i]) texts.push(files.read(filePaths[i]!));
      else {
        // An empty text is no limit file's content (the cgroup went, or is not made yet): read again next time.
        const text = known.limits[i] || files.read(filePaths[i]!);
        known.limits[i] = text;
        texts.push(text);
      }
    }
    return texts;
  };

  const readV1 = async (
    path: string,
    detail: CgroupDetail = "all",
    limitsKey?: string,
  ): Promise<CgroupStats | undefined> => {
    const [usage, acctStat, memUsage, memMax, memStat, memLimit, failcnt, shares, quota, period, pids] = readFiles(
      path,
      detail,
      limitsKey,
    ) as [string, string, string, string, string, string, string, string, string, string, string];
    // A cgroup that exists has these two files: the two directory checks only when neither was read.
    if (
      !usage &&
      !memUsage &&
      !existsSync(join(mountPoint, "cpuacct", path)) &&
      !existsSync(join(mountPoint, "memory", path))
    )
      return undefined;
    const memoryUsageBytes = Number(memUsage) || 0;
    const ticks = 1e9 / 100; // cpuacct.stat counts USER_HZ (100) ticks
    return {
      cpuUsageNanoseconds: Number(usage) || 0,
      cpuUserNanoseconds: userTicks(acctStat) * ticks,
      cpuSystemNanoseconds: systemTicks(acctStat) * ticks,
      memoryUsageBytes,
      memoryMaxUsageBytes: Number(memMax) || 0,
      memoryWorkingSetBytes: Math.max(0, memoryUsageBytes - totalInactiveFile(memStat)),
      memoryRssBytes: totalRss(memStat),
      memoryCacheBytes: totalCache(memStat),
      memoryMappedFileBytes: totalMappedFile(memStat),
      memorySwapBytes: totalSwap(memStat),
      memoryFailcnt: Number(failcnt) || 0,
      pageFaults: totalPgfault(memStat),
      majorPageFaults: totalPgmajfault(memStat),
      ...(limit(memLimit) !== undefined ? { memoryLimitBytes: limit(memLimit) } : {}),
      cpuShares: Number(shares) || 1024,
      ...(Number(quota) > 0 ? { cpuQuota: Number(quota) } : {}),
      cpuPeriod: Number(period) || 100_000,
      pids: Number(pids) || 0,
    };
  };

  const readV2 = async (
    path: string,
    detail: CgroupDetail = "all",
    limitsKey?: string,
  ): Promise<CgroupStats | undefined> => {
    const [cpuStat, current, peak, memStat, memMax, events, swap, weight, cpuMax, pids] = readFiles(
      path,
      detail,
      limitsKey,
    ) as [string, string, string, string, string, string, string, string, string, string];
    if (!cpuStat && !current && !existsSync(join(mountPoint, path))) return undefined;
    const memoryUsageBytes = Number(current) || 0;
    const [quota = "max", period = "100000"] = (cpuMax || "max 100000").trim().split(/\s+/);
    // The kubelet's CpuWeightToCpuShares, the inverse of the weight the cgroup manager writes.
    const shares = weight ? Math.round(2 + ((Number(weight) - 1) * 262_142) / 9999) : 1024;
    return {
      cpuUsageNanoseconds: usageUsec(cpuStat) * 1000,
      cpuUserNanoseconds: userUsec(cpuStat) * 1000,
      cpuSystemNanoseconds: systemUsec(cpuStat) * 1000,
      memoryUsageBytes,
      memoryMaxUsageBytes: Number(peak) || 0,
      memoryWorkingSetBytes: Math.max(0, memoryUsageBytes - inactiveFile(memStat)),
      memoryRssBytes: anon(memStat),
      memoryCacheBytes: file(memStat),
      memoryMappedFileBytes: fileMapped(memStat),
      memorySwapBytes: Number(swap) || 0,
      memoryFailcnt: maxEvents(events),
      pageFaults: pgfault(memStat),
      majorPageFaults: pgmajfault(memStat),
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
    sweep() {
      files.sweep();
      pathsBefore = paths;
      paths = new Map();
    },
    async firstPid(path) {
      const filePaths = knownOf(path).files;
      const procs = files.read(filePaths[filePaths.length - 1]!);
      const pid = Number(procs.split("\n")[0]);
      return pid > 0 ? pid : undefined;
    },
    async containers(podPath) {
      let entries: Dirent[];
      try {
        entries = readdirSync(join(mountPoint, version === 1 ? "cpuacct" : "", podPath), { withFileTypes: true });
      } catch {
        entries = [];
      }
      return entries.flatMap((entry) => {
        const id = entry.isDirectory() ? /(?:^|[-:])([0-9a-f]{64})(?:\.scope)?$/.exec(entry.name)?.[1] : undefined;
        return id ? [{ id, path: `${podPath}/${entry.name}` }] : [];
      });
    },
  };
}
