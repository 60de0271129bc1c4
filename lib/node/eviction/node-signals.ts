// The eviction signals measured from the host, as the Go kubelet measures them: memory.available
// is capacity minus the root memory cgroup's working set (usage − inactive file pages; MemAvailable
// of /proc/meminfo where no cgroup v1 root exists), nodefs is statfs of root_dir and imagefs is
// statfs of Docker's data root; pid.available is the pid limit (the lower of kernel.pid_max and
// kernel.threads-max) minus the tasks that exist (/proc/loadavg's count, sysinfo's procs).
import { readFile } from "node:fs/promises";
import type { Observations } from "./eviction-thresholds.ts";
import type { FsStats, StatFs } from "../stats/filesystem.ts";

/** A memory measurement: capacity, what is available and the working set (bytes). */
export interface MemoryStats {
  capacityBytes: number;
  availableBytes: number;
  workingSetBytes: number;
  /** Usage with inactive file pages (the root memory cgroup's memory.usage_in_bytes; the working set without one). */
  usageBytes?: number;
}

/** Reads a text file (injected so tests can give /proc and /sys contents). */
export type ReadText = (path: string) => Promise<string>;

const readText: ReadText = (path) => readFile(path, "utf8");

/** memory.available the kubelet's way; `read` defaults to the real /proc and /sys. */
export async function memoryStats(read: ReadText = readText): Promise<MemoryStats> {
  const meminfo = parseKeyValues(await read("/proc/meminfo"));
  const capacityBytes = (meminfo.MemTotal ?? 0) * 1024;
  const cgroup = await Promise.all([
    read("/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    read("/sys/fs/cgroup/memory/memory.stat"),
  ]).catch(() => undefined);
  if (cgroup) {
    const usage = Number(cgroup[0].trim());
    const inactiveFile = parseKeyValues(cgroup[1]).total_inactive_file ?? 0;
    const workingSetBytes = Math.max(0, usage - inactiveFile);
    return {
      capacityBytes,
      workingSetBytes,
      availableBytes: Math.max(0, capacityBytes - workingSetBytes),
      usageBytes: usage,
    };
  }
  const availableBytes = (meminfo.MemAvailable ?? meminfo.MemFree ?? 0) * 1024;
  const workingSetBytes = Math.max(0, capacityBytes - availableBytes);
  return { capacityBytes, availableBytes, workingSetBytes, usageBytes: workingSetBytes };
}

/** pid.available the kubelet's way: the pid limit and the tasks in use; undefined where /proc does not say. */
export async function pidStats(
  read: ReadText = readText,
): Promise<{ capacity: number; available: number } | undefined> {
  const [pidMax, threadsMax, loadavg] = await Promise.all([
    read("/proc/sys/kernel/pid_max"),
    read("/proc/sys/kernel/threads-max"),
    read("/proc/loadavg"),
  ]).catch(() => [] as string[]);
  const capacity = Math.min(Number(pidMax?.trim()), Number(threadsMax?.trim()));
  const tasks = Number(/\d+\/(\d+)/.exec(loadavg ?? "")?.[1]);
  if (!Number.isFinite(capacity) || !Number.isFinite(tasks)) return undefined;
  return { capacity, available: Math.max(0, capacity - tasks) };
}

/** "Key: 123 kB" or "key 123" lines → numbers (as written, kB not converted). */
function parseKeyValues(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const match = /^(\w+):?\s+(\d+)/.exec(line);
    if (match) out[match[1]!] = Number(match[2]);
  }
  return out;
}

export interface NodeSignalDeps {
  rootDir: string;
  /** Docker's data root (asked of the daemon once). */
  imageFsPath(): Promise<string>;
  statFs: StatFs;
  readText?: ReadText;
}

/** What one measurement of the node found, for eviction and /stats/summary. */
export interface NodeMeasurement {
  memory: MemoryStats;
  nodeFs: FsStats;
  imageFs?: FsStats;
  observations: Observations;
}

/** Measures every signal; a filesystem that cannot be measured leaves its signals out (they meet no threshold). */
export function createNodeSignals(deps: NodeSignalDeps): () => Promise<NodeMeasurement> {
  return async () => {
    const [memory, nodeFs, imageFs, pids] = await Promise.all([
      memoryStats(deps.readText),
      deps.statFs(deps.rootDir),
      deps
        .imageFsPath()
        .then((path) => deps.statFs(path))
        .catch(() => undefined),
      pidStats(deps.readText),
    ]);
    const observations: Observations = {
      "memory.available": { available: memory.availableBytes, capacity: memory.capacityBytes },
      "nodefs.available": { available: nodeFs.availableBytes, capacity: nodeFs.capacityBytes },
      "nodefs.inodesFree": { available: nodeFs.inodesFree, capacity: nodeFs.inodes },
    };
    if (imageFs) {
      observations["imagefs.available"] = { available: imageFs.availableBytes, capacity: imageFs.capacityBytes };
      observations["imagefs.inodesFree"] = { available: imageFs.inodesFree, capacity: imageFs.inodes };
    }
    if (pids) observations["pid.available"] = pids;
    return { memory, nodeFs, imageFs, observations };
  };
}
