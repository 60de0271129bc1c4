// The pods' cgroup hierarchy, as the kubelet's container manager builds it (cgroupsPerQOS):
// <cgroupRoot>/kubepods (bounded by node allocatable), kubepods/burstable and kubepods/besteffort,
// and one pod<uid> cgroup per pod with limits from the sum of its containers. cgroupfs and systemd
// naming; cgroup v1 (one hierarchy per controller) and v2 (one unified hierarchy).
import { existsSync } from "node:fs";
import { mkdir, readdir, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { podQosClass, podTotals, type QosClass } from "../../api/qos.ts";
import { parseQuantity } from "../../api/quantity.ts";
import type { Pod } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import type { KubeletMetrics } from "../../metrics.ts";
import { createCgroupReader, type CgroupReader, type CgroupStats } from "../stats/cgroup-stats.ts";

export type CgroupDriver = "cgroupfs" | "systemd";

/** What a cgroup is limited to; absent fields are left unlimited. */
export interface ResourceConfig {
  cpuShares?: number;
  /** CFS quota in µs per period; -1 = none. */
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimit?: number;
  pidsLimit?: number;
}

const MIN_SHARES = 2;
const MAX_SHARES = 262_144;
const MIN_QUOTA_US = 1000;

/** The kubelet's MilliCPUToShares. */
export function milliCpuToShares(milliCpu: number): number {
  if (milliCpu === 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milliCpu * 1024) / 1000)));
}

/** The kubelet's MilliCPUToQuota: µs of CPU per period, at least 1 ms. */
export function milliCpuToQuota(milliCpu: number, periodUs: number): number {
  return Math.max(MIN_QUOTA_US, Math.floor((milliCpu * periodUs) / 1000));
}

/** The cgroup name of a pod as path components below the root: kubepods[/burstable|/besteffort]/pod<uid>. */
export function podCgroupName(qos: QosClass, uid: string): string[] {
  return qos === "Guaranteed" ? ["kubepods", `pod${uid}`] : ["kubepods", qos.toLowerCase(), `pod${uid}`];
}

/** The path of a cgroup in the hierarchy: `/root/kubepods/burstable/pod<uid>` or systemd's nested slices. */
export function cgroupPath(root: string, name: string[], driver: CgroupDriver): string {
  const rootParts = root.split("/").filter(Boolean);
  if (driver === "cgroupfs") return "/" + [...rootParts, ...name].join("/");
  // systemd: every component is a slice named after all its ancestors, "-" in names escaped as "_".
  const slices: string[] = [];
  let prefix = "";
  for (const part of [...rootParts.map((p) => p.replace(/\.slice$/, "")), ...name]) {
    prefix = prefix ? `${prefix}-${part.replace(/-/g, "_")}` : part.replace(/-/g, "_");
    slices.push(`${prefix}.slice`);
  }
  return "/" + slices.join("/");
}

/** What Docker's HostConfig.CgroupParent takes: the path for cgroupfs, the slice name for systemd. */
export function runtimeCgroupParent(root: string, name: string[], driver: CgroupDriver): string {
  const path = cgroupPath(root, name, driver);
  return driver === "cgroupfs" ? path : path.slice(path.lastIndexOf("/") + 1);
}

/** The pod cgroup's limits: cpu shares from requests, quota and memory only when every container has a limit. */
export function podResourceConfig(pod: Pod, options: { cfsQuota: boolean; cfsPeriodUs: number; pidsLimit: number }) {
  const qos = podQosClass(pod);
  const { requests, limits } = podTotals(pod);
  const config: ResourceConfig = {
    cpuShares: qos === "BestEffort" ? MIN_SHARES : milliCpuToShares(requests.cpu),
    ...(options.pidsLimit > 0 ? { pidsLimit: options.pidsLimit } : {}),
  };
  if (qos !== "BestEffort") {
    if (options.cfsQuota && limits.cpu !== undefined) {
      config.cpuQuota = milliCpuToQuota(limits.cpu, options.cfsPeriodUs);
      config.cpuPeriod = options.cfsPeriodUs;
    }
    if (limits.memory !== undefined) config.memoryLimit = Math.round(limits.memory);
  }
  return config;
}

/** Node allocatable: capacity − kubeReserved − systemReserved − the hard eviction threshold (memory). */
export function nodeAllocatable(
  capacity: { milliCpu: number; memoryBytes: number },
  reserved: { kube: Record<string, string>; system: Record<string, string>; evictionHard: Record<string, string> },
): { milliCpu: number; memoryBytes: number } {
  const amount = (values: Record<string, string>, name: string, whole: number) => {
    const text = values[name];
    if (text === undefined) return 0;
    if (text.endsWith("%")) return (Number(text.slice(0, -1)) / 100) * whole;
    return parseQuantity(text) ?? 0;
  };
  const cpu = (v: Record<string, string>) => amount(v, "cpu", capacity.milliCpu / 1000) * 1000;
  const memory = (v: Record<string, string>) => amount(v, "memory", capacity.memoryBytes);
  return {
    milliCpu: Math.max(0, Math.round(capacity.milliCpu - cpu(reserved.kube) - cpu(reserved.system))),
    memoryBytes: Math.max(
      0,
      Math.round(
        capacity.memoryBytes -
          memory(reserved.kube) -
          memory(reserved.system) -
          amount(reserved.evictionHard, "memory.available", capacity.memoryBytes),
      ),
    ),
  };
}

/** The files and values that apply `config` to one cgroup, as [controller, file, value]. */
export function cgroupFiles(version: 1 | 2, config: ResourceConfig): Array<[string, string, string]> {
  const files: Array<[string, string, string]> = [];
  if (version === 1) {
    if (config.cpuShares !== undefined) files.push(["cpu", "cpu.shares", String(config.cpuShares)]);
    if (config.cpuPeriod !== undefined) files.push(["cpu", "cpu.cfs_period_us", String(config.cpuPeriod)]);
    files.push(["cpu", "cpu.cfs_quota_us", String(config.cpuQuota ?? -1)]);
    files.push(["memory", "memory.limit_in_bytes", String(config.memoryLimit ?? -1)]);
    files.push(["pids", "pids.max", config.pidsLimit !== undefined ? String(config.pidsLimit) : "max"]);
    return files;
  }
  // cgroup v2: the kubelet's CpuSharesToCpuWeight, "quota period" for cpu.max.
  if (config.cpuShares !== undefined)
    files.push(["", "cpu.weight", String(1 + Math.floor(((config.cpuShares - 2) * 9999) / 262_142))]);
  files.push([
    "",
    "cpu.max",
    `${config.cpuQuota !== undefined && config.cpuQuota > 0 ? config.cpuQuota : "max"} ${config.cpuPeriod ?? 100_000}`,
  ]);
  files.push(["", "memory.max", config.memoryLimit !== undefined ? String(config.memoryLimit) : "max"]);
  files.push(["", "pids.max", config.pidsLimit !== undefined ? String(config.pidsLimit) : "max"]);
  return files;
}

/** v1 controllers the kubelet writes; the runtime creates the container cgroups in the others. */
const V1_CONTROLLERS = ["cpu", "cpuacct", "memory", "pids"];

export interface CgroupManagerOptions {
  driver: CgroupDriver;
  /** cgroupRoot: "/" for the kubelet's default. */
  root: string;
  cfsQuota: boolean;
  cfsPeriodUs: number;
  pidsLimit: number;
  /** Where the cgroup file systems are mounted; a temporary tree in tests. */
  mountPoint?: string;
  log: Logger;
  /** kubelet_cgroup_manager_duration_seconds. */
  metrics?: Pick<KubeletMetrics, "cgroupManager">;
}

export interface CgroupManager {
  version: 1 | 2;
  /** Creates kubepods and its QoS children; bounds kubepods when `allocatable` is given. */
  init(allocatable?: { milliCpu: number; memoryBytes: number }): Promise<void>;
  /** Creates or updates the pod's cgroup; returns the runtime's cgroup parent for its containers. */
  ensurePod(pod: Pod): Promise<string>;
  /**
   * Resizes a running pod's cgroup for a resize of its containers: `grow` (before them) raises each limit that
   * grows and keeps the others, so no container is ever above its pod; `final` (after them) writes the new limits.
   */
  resizePod(pod: Pod, step: "grow" | "final"): Promise<void>;
  /** Removes a pod's cgroup (its containers must be gone); false when something still runs in it. */
  removePod(uid: string): Promise<boolean>;
  /** Removes pod cgroups of pods not in `active`; returns the uids removed. */
  removeOrphans(active: ReadonlySet<string>): Promise<string[]>;
  /** CPU and memory use of a pod, read from its cgroup; undefined when it has none. */
  podUsage(uid: string): Promise<CgroupStats | undefined>;
  /** Every pod cgroup on the node by pod uid (path below the mount point), adopted pods included. */
  podCgroups(): Promise<Map<string, string>>;
  /** Reads cgroup stats and container cgroups on this hierarchy. */
  reader: CgroupReader;
}

/** Each limit at the larger of two configs (an absent cpu quota or memory limit is unlimited, the largest). */
function larger(a: ResourceConfig, b: ResourceConfig): ResourceConfig {
  const quota = (c: ResourceConfig) => (c.cpuQuota === undefined || c.cpuQuota < 0 ? Infinity : c.cpuQuota);
  const memory = (c: ResourceConfig) => c.memoryLimit ?? Infinity;
  return {
    ...b,
    cpuShares: Math.max(a.cpuShares ?? 0, b.cpuShares ?? 0),
    ...(Math.max(quota(a), quota(b)) === Infinity
      ? { cpuQuota: undefined, cpuPeriod: undefined }
      : { cpuQuota: Math.max(a.cpuQuota!, b.cpuQuota!) }),
    memoryLimit: Math.max(memory(a), memory(b)) === Infinity ? undefined : Math.max(memory(a), memory(b)),
  };
}

/** Detects the mounted cgroup version: v2 when the unified hierarchy is mounted at the mount point itself. */
export function cgroupVersion(mountPoint = "/sys/fs/cgroup"): 1 | 2 {
  return existsSync(join(mountPoint, "cgroup.controllers")) ? 2 : 1;
}

export function createCgroupManager(options: CgroupManagerOptions): CgroupManager {
  const mountPoint = options.mountPoint ?? "/sys/fs/cgroup";
  const version = cgroupVersion(mountPoint);
  const { driver, root, log } = options;
  const pathOf = (name: string[]) => cgroupPath(root, name, driver);
  const dir = (controller: string, path: string) => join(mountPoint, controller, path);
  const podPaths = new Map<string, { path: string; applied: string }>();
  const reader = createCgroupReader({ mountPoint, version });

  const create = async (path: string) => {
    if (version === 2) {
      // Controllers must be enabled in every ancestor's subtree_control for a child to use them.
      const parts = path.split("/").filter(Boolean);
      for (let i = 0; i < parts.length; i++) {
        const parent = join(mountPoint, ...parts.slice(0, i));
        await writeFile(join(parent, "cgroup.subtree_control"), "+cpu +memory +pids").catch(() => {});
        await mkdir(join(parent, parts[i]!), { recursive: true });
      }
      return;
    }
    for (const controller of V1_CONTROLLERS) await mkdir(dir(controller, path), { recursive: true });
  };

  const apply = async (path: string, config: ResourceConfig) => {
    for (const [controller, file, value] of cgroupFiles(version, config)) {
      try {
        await writeFile(join(dir(controller, path), file), value);
      } catch (error) {
        throw new Error(`cannot write ${value} to ${join(dir(controller, path), file)}: ${(error as Error).message}`);
      }
    }
  };

  /** Removes a cgroup from every hierarchy: "absent" when it was in none (already removed), "busy" when one refused. */
  const removeDirs = async (path: string): Promise<"removed" | "absent" | "busy"> => {
    const controllers = version === 2 ? [""] : await readdir(mountPoint).catch(() => [] as string[]);
    let outcome: "removed" | "absent" | "busy" = "absent";
    for (const controller of controllers) {
      const target = dir(controller, path);
      if (!existsSync(target)) continue;
      try {
        await rmdir(target);
        if (outcome === "absent") outcome = "removed";
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOENT") outcome = "busy";
        if (code !== "ENOENT" && code !== "EBUSY")
          log.warn(`cannot remove cgroup ${target}: ${(error as Error).message}`);
      }
    }
    return outcome;
  };
  /** Removes a cgroup; false when something still runs in it (one already gone is removed). */
  const remove = async (path: string): Promise<boolean> => (await removeDirs(path)) !== "busy";

  const podDirs = async (): Promise<Map<string, string>> => {
    const found = new Map<string, string>();
    const probe = version === 2 ? "" : "memory";
    for (const parent of [["kubepods"], ["kubepods", "burstable"], ["kubepods", "besteffort"]]) {
      const parentPath = pathOf(parent);
      const entries = await readdir(dir(probe, parentPath)).catch(() => [] as string[]);
      for (const entry of entries) {
        const uid = /^(?:.*-)?pod(.+?)(?:\.slice)?$/.exec(entry)?.[1];
        if (uid && !entry.includes("besteffort.slice") && !entry.includes("burstable.slice"))
          found.set(driver === "systemd" ? uid.replace(/_/g, "-") : uid, `${parentPath}/${entry}`);
      }
    }
    return found;
  };

  // The stats analyzer asks for every pod's usage at once, and pods adopted after a restart are not in podPaths:
  // concurrent lookups share one scan instead of a readdir of every QoS parent per pod.
  let scanning: Promise<Map<string, string>> | undefined;
  /** The last removeOrphans pass, which the next one waits for. */
  let orphans: Promise<unknown> = Promise.resolve();
  const sharedPodDirs = () => (scanning ??= podDirs().finally(() => (scanning = undefined)));

  return {
    version,
    async init(allocatable) {
      await create(pathOf(["kubepods"]));
      await create(pathOf(["kubepods", "burstable"]));
      await create(pathOf(["kubepods", "besteffort"]));
      await apply(pathOf(["kubepods", "besteffort"]), { cpuShares: MIN_SHARES });
      if (allocatable) {
        // The kernel refuses a memory limit below what the pods already use (EBUSY). Refusing to start would
        // leave those pods unmanaged: keep the old bound, say so, and let eviction bring the usage down.
        const bound = { cpuShares: milliCpuToShares(allocatable.milliCpu), memoryLimit: allocatable.memoryBytes };
        await apply(pathOf(["kubepods"]), bound).catch((error: Error) => {
          if (!/EBUSY|Device or resource busy/.test(error.message)) throw error;
          options.log.warn(
            `${error.message}: the pods already use more memory than node allocatable; kubepods keeps its previous bound until eviction frees memory`,
          );
        });
      }
    },
    async ensurePod(pod) {
      const uid = pod.metadata.uid;
      const name = podCgroupName(podQosClass(pod), uid);
      const path = pathOf(name);
      const config = podResourceConfig(pod, options);
      const applied = JSON.stringify(config);
      const known = podPaths.get(uid);
      if (known && known.path !== path) await remove(known.path);
      if (known?.path !== path || known.applied !== applied) {
        const began = performance.now();
        await create(path);
        await apply(path, config);
        podPaths.set(uid, { path, applied });
        options.metrics?.cgroupManager(known ? "update" : "create", (performance.now() - began) / 1000);
      }
      return runtimeCgroupParent(root, name, driver);
    },
    async resizePod(pod, step) {
      const uid = pod.metadata.uid;
      const path = pathOf(podCgroupName(podQosClass(pod), uid));
      const next = podResourceConfig(pod, options);
      const known = podPaths.get(uid);
      const config = step === "grow" && known ? larger(JSON.parse(known.applied) as ResourceConfig, next) : next;
      await apply(path, config);
      podPaths.set(uid, { path, applied: JSON.stringify(config) });
    },
    async removePod(uid) {
      const began = performance.now();
      const paths = new Set([podPaths.get(uid)?.path, (await podDirs()).get(uid)].filter(Boolean) as string[]);
      let removed = true;
      for (const path of paths) removed = (await remove(path)) && removed;
      if (removed) podPaths.delete(uid);
      options.metrics?.cgroupManager("destroy", (performance.now() - began) / 1000);
      return removed;
    },
    removeOrphans(active) {
      // One pass at a time: two housekeeping passes at once would both find a cgroup and both report its removal.
      const pass = orphans.then(async () => {
        const removed: string[] = [];
        for (const [uid, path] of await podDirs()) {
          if (active.has(uid)) continue;
          const outcome = await removeDirs(path);
          if (outcome !== "busy") podPaths.delete(uid);
          // A cgroup gone meanwhile (reset, or the runtime's own clean-up) was not removed here: not said.
          if (outcome !== "removed") continue;
          removed.push(uid);
          log.info(`removed the cgroup of orphaned pod ${uid} (${path})`);
        }
        return removed;
      });
      orphans = pass.catch(() => []);
      return pass;
    },
    async podUsage(uid) {
      const path = podPaths.get(uid)?.path ?? (await sharedPodDirs()).get(uid);
      return path ? reader.read(path) : undefined;
    },
    podCgroups: sharedPodDirs,
    reader,
  };
}
