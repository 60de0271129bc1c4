// The resource analyzer (the Go kubelet's, behind /stats/summary): the node's memory and filesystems,
// every running container's CPU and memory, and — on a slower period, since they walk directories —
// per-container rootfs and log usage and per-pod volume usage. The periodic collection measures the
// node and walks; pods are read when an endpoint or eviction asks, and that read is served to whoever
// else asks within 15 s. With pod cgroups (cgroupsPerQOS) CPU and memory come from the cgroup files
// (usage-sampler.ts), and usageNanoCores from the last two reads' cumulative usage; without them, from
// the runtime's stats call per container, once per container stats period. This file gathers the
// figures; summary.ts builds the Summary from them.
import { readdir, readFile, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Clock } from "../../clock.ts";
import type { ContainerStats, Runtime } from "../../container/runtime.ts";
import { listedContainers, listedSandboxes, STATS_LISTING_MAX_AGE_MS } from "../../container/shared-listing.ts";
import type { KubeletError, Pod } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import type { CgroupDetail } from "./cgroup-stats.ts";
import type { DiskUsage } from "./filesystem.ts";
import type { NodeMeasurement } from "../eviction/node-signals.ts";
import {
  buildSummary,
  createUsageRates,
  type FsFigures,
  type RuntimeListingView,
  type StatsSummary,
} from "./summary.ts";
import { parseNetDev, type InterfaceSample, type UsageSample, type UsageSampler } from "./usage-sampler.ts";

export type {
  ContainerSummaryStats,
  PodSummaryStats,
  RuntimeListingView,
  StatsSummary,
  SummaryCpu,
  SummaryFs,
  SummaryInterface,
  SummaryMemory,
  SummaryNetwork,
  SystemContainerStats,
} from "./summary.ts";

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

/** The host readings beyond memory and filesystems: rlimit, network, the root and kubelet cgroups. */
export interface HostReader {
  rlimit(): Promise<{ maxpid: number; curproc: number }>;
  interfaces(): Promise<InterfaceSample[]>;
}

export interface StatsAnalyzer {
  /**
   * The periodic collection (every ~10 s): the filesystem walk when it is due, with the node's figures. Pods are
   * read only for whoever asks (current, sample), never ahead of them.
   */
  refresh(): Promise<void>;
  /** The last collection; undefined before the first. */
  summary(): StatsSummary | undefined;
  /**
   * The last collection, collected first when its pods were read more than SAMPLE_MAX_AGE_MS ago, or without their
   * networks when `network` (/stats/summary shows them; eviction's ranking and metrics.k8s.io do not).
   */
  current(network: boolean): Promise<StatsSummary | undefined>;
  /**
   * Every pod's cgroups (file reads only); undefined without cgroups. A read at least as detailed taken within
   * SAMPLE_MAX_AGE_MS (a collection's, made for an earlier scrape or request) is served again; otherwise a
   * collection reads pods at this detail, so the next endpoint within 15 s is served the same read, and concurrent
   * scrapes share one.
   */
  sample(detail?: CgroupDetail): Promise<UsageSample | undefined>;
}

/**
 * How old a cgroup read an endpoint is served may be: cAdvisor serves its last housekeeping, every 10 to 15 s
 * (--housekeeping_interval, --max_housekeeping_interval). Prometheus' usual 15 s interval then reads pods once per
 * interval for all four endpoints (the first to come reads, the others are served its read).
 */
export const SAMPLE_MAX_AGE_MS = 15_000;

/** The reads each level includes (cgroup-stats.ts: every level reads a superset of the next). */
const INCLUDES: Record<CgroupDetail, readonly CgroupDetail[]> = {
  all: ["all", "summary", "limits", "usage"],
  summary: ["summary", "limits", "usage"],
  limits: ["limits", "usage"],
  usage: ["usage"],
};

/** What a collection reads: pods or not, their cgroups at which detail, their networks or not. */
interface Wanted {
  withPods: boolean;
  detail: CgroupDetail;
  network: boolean;
}

export function createStatsAnalyzer(options: StatsAnalyzerOptions, deps: StatsAnalyzerDeps): StatsAnalyzer {
  const { clock } = options;
  const started = new Date(clock.now() - process.uptime() * 1000).toISOString();
  const host = deps.host ?? procHost;
  let last: StatsSummary | undefined;
  let fs: FsFigures = { at: -Infinity, rootfs: new Map(), logs: new Map(), volumes: new Map() };
  let listing: RuntimeListingView = { containers: [], sandboxes: [] };
  const sampler = deps.sampler?.(() => listing);
  const samples = new Map<string, { at: number; sample: ContainerStats | undefined }>();
  const rates = createUsageRates();
  /** The last cgroup read, served again within SAMPLE_MAX_AGE_MS to whoever asks no more; gone when it failed. */
  let recent: { detail: CgroupDetail; at: number; reading: Promise<UsageSample | undefined> } | undefined;
  /** The last collection's read, failed or not (what a scrape that made the collection is answered). */
  let lastReading: Promise<UsageSample | undefined> | undefined;
  /** When the pods' figures were last read (cgroups or the runtime's stats), and whether with their networks. */
  let podsRead = { at: -Infinity, network: false };
  /** Starts a read of the pod cgroups that later scrapes may be served (see sample). */
  const read = (detail: CgroupDetail, network: boolean) => {
    const reading = sampler!.sample(detail, network).then((sample) => {
      for (const c of sample?.pods.flatMap((p) => p.containers) ?? [])
        if (fs.rootfs.has(c.id)) c.rootfsBytes = fs.rootfs.get(c.id);
      return sample;
    });
    const entry = { detail, at: clock.now(), reading };
    recent = entry;
    lastReading = reading;
    reading.catch(() => recent === entry && (recent = undefined));
    return reading;
  };
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

  /**
   * Each running container's log path, asked of the runtime once: a container's log path is fixed when it is
   * created, and inspecting 110 containers every fs period was most of an idle Docker node's Engine calls (and a
   * new connection each, past the kept-alive ones). The Go kubelet builds the path from the pod and container names.
   */
  const logPaths = new Map<string, string>();
  const walkFilesystems = async (pods: Pod[]) => {
    const listed = await deps.runtime.listContainers({ size: true });
    const next: FsFigures = { at: clock.now(), rootfs: new Map(), logs: new Map(), volumes: new Map() };
    for (const c of listed) next.rootfs.set(c.id, c.sizeRwBytes ?? 0);
    const running = listed.filter((c) => c.state === "CONTAINER_RUNNING");
    const runningIds = new Set(running.map((c) => c.id));
    for (const id of logPaths.keys()) if (!runningIds.has(id)) logPaths.delete(id);
    await Promise.all(
      running.map(async (c) => {
        let path = logPaths.get(c.id);
        if (path === undefined) {
          path = (await measured("the log path of container", c.id, () => deps.runtime.inspectContainer(c.id)))
            ?.logPath;
          if (path) logPaths.set(c.id, path);
        }
        if (path) next.logs.set(c.id, await logBytes(path));
      }),
    );
    for (const pod of pods) {
      const volumes: Array<{ name: string; usage: DiskUsage }> = [];
      for (const v of pod.spec.volumes ?? [])
        if (v.emptyDir) volumes.push({ name: v.name, usage: await deps.emptyDirUsage(pod.metadata.uid, v.name) });
      next.volumes.set(pod.metadata.uid, volumes);
    }
    fs = next;
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

  /**
   * One collection. With `withPods`, every pod's and container's CPU and memory read at `detail` (at least what the
   * Summary shows), their networks with `network`; without, the node's figures and, when due, the filesystem walk,
   * the pods keeping their last figures.
   */
  const collect = async ({ withPods, detail, network }: Wanted) => {
    const pods = deps.pods();
    const [node, cpu, listed, sandboxes, rlimit, nodeInterfaces] = await Promise.all([
      deps.measureNode(),
      (deps.nodeCpu ?? procStatCpu)(),
      withPods ? listedContainers(deps.runtime, STATS_LISTING_MAX_AGE_MS) : listing.containers,
      withPods ? listedSandboxes(deps.runtime, STATS_LISTING_MAX_AGE_MS, "ready") : listing.sandboxes,
      host.rlimit().catch(() => undefined),
      host.interfaces().catch(() => [] as InterfaceSample[]),
    ]);
    let containers = listed;
    // A new pod or container is measured at the next collection, not a whole fs period later.
    const unseen =
      pods.some((p) => !fs.volumes.has(p.metadata.uid)) ||
      containers.some((c) => c.state === "CONTAINER_RUNNING" && !fs.rootfs.has(c.id));
    if (unseen || clock.now() - fs.at >= options.fsPeriodMs) {
      containers = await walkFilesystems(pods);
    }
    listing = { containers, sandboxes, podResources: resourcesByPod(pods) };
    const sample =
      withPods &&
      sampler &&
      (await measured("the cgroups of the pods on", options.nodeName, () =>
        read(INCLUDES[detail].includes("summary") ? detail : "summary", network),
      ));
    // Failures are reported once while they last: forget those of containers and pods that went.
    const present = new Set([
      options.nodeName,
      ...containers.map((c) => c.id),
      ...sandboxes.map((s) => s.id),
      ...pods.map((p) => p.metadata.uid),
    ]);
    for (const [key, id] of reported) if (!present.has(id)) reported.delete(key);
    // A pod's network is its sandbox's: sampled like a running container (the Docker shim's pause answers stats).
    const stats =
      sampler || !withPods
        ? new Map<string, ContainerStats | undefined>()
        : await runtimeStats([...containers.filter((c) => c.state === "CONTAINER_RUNNING"), ...sandboxes]);
    const kubelet = process.cpuUsage();
    last = buildSummary(
      {
        nodeName: options.nodeName,
        startTime: started,
        now: clock.now(),
        node,
        nodeCpuNs: cpu,
        nodeInterfaces,
        ...(rlimit ? { rlimit } : {}),
        kubelet: { cpuNs: (kubelet.user + kubelet.system) * 1000, rssBytes: process.memoryUsage().rss },
        pods,
        listing,
        cgroupsPerQOS: sampler !== undefined,
        ...(sample ? { cgroups: sample } : {}),
        runtimeStats: stats,
        fs,
        ...(last ? { previous: last } : {}),
      },
      rates,
    );
    // Without pods read, their CPU counters keep their last samples: the next read's usageNanoCores is over the gap.
    // (A summary without them has no container figures: the next current() reads them.)
    podsRead = withPods ? { at: clock.now(), network } : { at: -Infinity, network: false };
    if (withPods) rates.forgetUnseen();
  };
  /** The collection under way: one at a time, a later caller wanting more than it reads waiting for it to end. */
  let collecting: (Wanted & { done: Promise<void> }) | undefined;
  const covers = (made: Wanted, want: Wanted) =>
    (made.withPods || !want.withPods) && INCLUDES[made.detail].includes(want.detail) && (made.network || !want.network);
  const collectOnce = async (want: Wanted): Promise<void> => {
    while (collecting) {
      if (covers(collecting, want)) return collecting.done;
      await collecting.done.catch(() => {});
    }
    const done = collect(want).finally(() => (collecting = undefined));
    collecting = { ...want, done };
    return done;
  };
  const fresh = (at: number) => clock.now() - at < SAMPLE_MAX_AGE_MS;

  return {
    async refresh() {
      // The walk (eviction's local storage) on its period, or for a pod it has not seen; pods are read on demand.
      const due = clock.now() - fs.at >= options.fsPeriodMs || deps.pods().some((p) => !fs.volumes.has(p.metadata.uid));
      if (due || !last) return collectOnce({ withPods: false, detail: "summary", network: false });
    },
    async current(network) {
      if (!fresh(podsRead.at) || (network && !podsRead.network))
        await collectOnce({ withPods: true, detail: "summary", network });
      return last;
    },
    summary: () => last,
    async sample(detail = "all") {
      if (!sampler) return undefined;
      if (recent && INCLUDES[recent.detail].includes(detail) && fresh(recent.at)) return recent.reading;
      // The collection reads at this detail (networks with every file: /metrics/cadvisor shows them), and the
      // endpoints after this one within 15 s are served its read.
      await collectOnce({ withPods: true, detail, network: detail === "all" });
      return lastReading;
    },
  };
}

/**
 * Each pod's resources as the cgroup read keys its limits by: the containers' declared ones and those the runtime
 * reports (status), which an in-place resize changes once it is applied.
 */
function resourcesByPod(pods: Pod[]): Map<string, string> {
  return new Map(
    pods.map((p) => [
      p.metadata.uid,
      JSON.stringify([p.spec.containers.map((c) => c.resources), p.status?.containerStatuses?.map((s) => s.resources)]),
    ]),
  );
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
