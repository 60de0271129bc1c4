// A small Prometheus registry (counters, gauges, histograms, text format 0.0.4) and the kubelet's
// metrics on it, named and labelled as the real kubelet's (pkg/kubelet/metrics/metrics.go).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { arch, platform } from "node:os";
import type { Pod } from "../api/types.ts";
import { ANNOTATION } from "../api/types.ts";
import { buildInfo } from "../build-info.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { formatValue, helpText, labelText } from "./exposition.ts";

type Labels = Record<string, string>;
const keyOf = (labels: Labels) => JSON.stringify(Object.entries(labels).sort());

/**
 * A family: its text kept until a value changes (most of /metrics does not change between two scrapes), and each
 * series' `name{labels} ` written once, when the series is made.
 */
abstract class Metric {
  private text: string | undefined;
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge" | "histogram",
  ) {}
  abstract lines(): string[];
  /** A value changed: the next render writes the family again. */
  protected changed(): void {
    this.text = undefined;
  }
  render(): string {
    this.text ??= [
      `# HELP ${this.name} ${helpText(this.help)}`,
      `# TYPE ${this.name} ${this.type}`,
      ...this.lines(),
    ].join("\n");
    return this.text;
  }
}

/** A counter or gauge: one value per label set. */
export class Counter extends Metric {
  private readonly values = new Map<string, { labels: Labels; value: number; head: string }>();
  constructor(name: string, help: string, type: "counter" | "gauge" = "counter") {
    super(name, help, type);
  }
  /** The series of these labels, made (at `value`) when absent. */
  private entry(labels: Labels, value: number) {
    const key = keyOf(labels);
    let entry = this.values.get(key);
    if (!entry) {
      this.values.set(key, (entry = { labels, value, head: `${this.name}${labelText(labels)} ` }));
      this.changed();
    }
    return entry;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, 0).value += by;
    this.changed();
  }
  set(labels: Labels, value: number): void {
    const entry = this.entry(labels, value);
    if (Object.is(entry.value, value)) return;
    entry.value = value;
    this.changed();
  }
  /** Drops every series (a gauge recounted from scratch). */
  clear(): void {
    if (this.values.size === 0) return;
    this.values.clear();
    this.changed();
  }
  lines(): string[] {
    return [...this.values.values()].map(({ head, value }) => `${head}${formatValue(value)}`);
  }
}

/** A histogram with fixed buckets, per label set. */
export class Histogram extends Metric {
  private readonly series = new Map<
    string,
    { labels: Labels; counts: number[]; sum: number; count: number; heads: string[] }
  >();
  /** `unlabelled`: one series without labels, rendered from the start with its zero buckets, as client_golang does. */
  constructor(
    name: string,
    help: string,
    readonly buckets: number[],
    options: { unlabelled?: boolean } = {},
  ) {
    super(name, help, "histogram");
    if (options.unlabelled) this.seriesOf({});
  }
  /** A series by its labels, made with its lines' heads: each bucket's, +Inf's, _sum's and _count's. */
  private seriesOf(labels: Labels) {
    const key = keyOf(labels);
    let s = this.series.get(key);
    if (!s) {
      const heads = [
        ...this.buckets.map((le) => `${this.name}_bucket${labelText({ ...labels, le: formatValue(le) })} `),
        `${this.name}_bucket${labelText({ ...labels, le: "+Inf" })} `,
        `${this.name}_sum${labelText(labels)} `,
        `${this.name}_count${labelText(labels)} `,
      ];
      this.series.set(key, (s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0, heads }));
    }
    return s;
  }
  observe(value: number, labels: Labels = {}): void {
    const s = this.seriesOf(labels);
    this.buckets.forEach((le, i) => value <= le && s.counts[i]!++);
    s.sum += value;
    s.count++;
    this.changed();
  }
  lines(): string[] {
    const n = this.buckets.length;
    return [...this.series.values()].flatMap(({ counts, sum, count, heads }) => [
      ...counts.map((c, i) => `${heads[i]}${c}`),
      `${heads[n]}${count}`,
      `${heads[n + 1]}${formatValue(sum)}`,
      `${heads[n + 2]}${count}`,
    ]);
  }
}

const exponential = (start: number, factor: number, count: number) =>
  Array.from({ length: count }, (_, i) => Number((start * factor ** i).toPrecision(6)));
const POD_START_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
];

/** Pods whose image pulls are remembered until they start (kubelet_pod_start_sli_duration_seconds). */
const MAX_PULL_WINDOWS = 1000;

/** The Go client's DefBuckets. */
const DEF_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The process's open descriptors: the size Linux 6.2 and later gives /proc/self/fd, or its entries counted where it
 * gives 0. The stats collection keeps thousands of cgroup files open at 110 pods (open-files.ts), and listing them
 * was most of a /metrics scrape's CPU (4.8 ms of 3,800 entries); the listing counts its own descriptor too.
 */
export function openFds(dir = "/proc/self/fd"): number {
  return statSync(dir).size || readdirSync(dir).length - 1;
}

/** The pods kubelet_desired_pods and kubelet_active_pods count at scrape time. */
export interface PodCounts {
  desired(): Pod[];
  active(): Pod[];
}

/** The kubelet's metrics and their text exposition (/metrics and /metrics/probes). */
export function createPrometheusMetrics(options: { log?: Logger; nodeName?: string } = {}): KubeletMetrics & {
  render(): string;
  renderProbes(): string;
  /** Binds the pod counts (the sync loop is made after the metrics). */
  countPods(pods: PodCounts): void;
  /** Binds kubelet_pleg_last_seen_seconds to the PLEG's health (ms since the epoch; undefined: not yet). */
  plegLastSeen(read: () => number | undefined): void;
} {
  const runningPods = new Counter("kubelet_running_pods", "Number of pods that have a running pod sandbox", "gauge");
  const workingPods = new Counter(
    "kubelet_working_pods",
    "Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static.",
    "gauge",
  );
  const runningContainers = new Counter(
    "kubelet_running_containers",
    "Number of containers currently running",
    "gauge",
  );
  const podStart = new Histogram(
    "kubelet_pod_start_duration_seconds",
    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
    POD_START_BUCKETS,
  );
  const podStartSli = new Histogram(
    "kubelet_pod_start_sli_duration_seconds",
    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
    POD_START_BUCKETS,
  );
  /** Per pod not yet started: its first pull begun and last pull finished (ms); at most MAX_PULL_WINDOWS kept. */
  const pullWindows = new Map<string, { first: number; last: number }>();
  const podWorker = new Histogram(
    "kubelet_pod_worker_duration_seconds",
    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
    exponential(0.005, 2, 12),
  );
  const operations = new Counter(
    "kubelet_runtime_operations_total",
    "Cumulative number of runtime operations by operation type.",
  );
  const operationErrors = new Counter(
    "kubelet_runtime_operations_errors_total",
    "Cumulative number of runtime operation errors by operation type.",
  );
  const operationDuration = new Histogram(
    "kubelet_runtime_operations_duration_seconds",
    "Duration in seconds of runtime operations. Broken down by operation type.",
    exponential(0.005, 2.5, 14),
  );
  const imagePull = new Histogram(
    "kubelet_image_pull_duration_seconds",
    "Duration in seconds to pull an image.",
    [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
  );
  const started = new Counter("kubelet_started_containers_total", "Cumulative number of containers started");
  const startErrors = new Counter(
    "kubelet_started_containers_errors_total",
    "Cumulative number of errors when starting containers",
  );
  const restarts = new Counter(
    "kubelet_container_restarts_total",
    "Cumulative number of container restarts by the kubelet (crash, failed probe or completed under restartPolicy)",
  );
  const sourceErrors = new Counter(
    "kubelet_config_source_errors_total",
    "Invalid manifests and failed reads, by pod source",
  );
  const probes = new Counter(
    "prober_probe_total",
    "Cumulative number of a liveness, readiness or startup probe for a container by result.",
  );
  const openStreams = new Counter(
    "kubelet_runtime_open_streams",
    "Number of container runtime streams (followed logs, events, exec and attach sessions) the kubelet holds open",
    "gauge",
  );
  const startedPods = new Counter("kubelet_started_pods_total", "Cumulative number of pods started");
  const startedPodErrors = new Counter(
    "kubelet_started_pods_errors_total",
    "Cumulative number of errors when starting pods",
  );
  const cgroupManager = new Histogram(
    "kubelet_cgroup_manager_duration_seconds",
    "Duration in seconds for cgroup manager operations. Broken down by method.",
    DEF_BUCKETS,
  );
  const probeDuration = new Histogram(
    "prober_probe_duration_seconds",
    "Duration in seconds for a probe response.",
    DEF_BUCKETS,
  );
  // The PLEG's series exist on every runtime, as the Go kubelet's unlabelled ones do: Docker's events relist
  // nothing, and kube-prometheus' PLEG panels read zeros rather than nothing.
  const plegDuration = new Histogram(
    "kubelet_pleg_relist_duration_seconds",
    "Duration in seconds for relisting pods in PLEG.",
    DEF_BUCKETS,
    { unlabelled: true },
  );
  const plegInterval = new Histogram(
    "kubelet_pleg_relist_interval_seconds",
    "Interval in seconds between relisting in PLEG.",
    DEF_BUCKETS,
    { unlabelled: true },
  );
  const plegLastSeen = new Counter(
    "kubelet_pleg_last_seen_seconds",
    "Timestamp in seconds when PLEG was last seen active.",
    "gauge",
  );
  plegLastSeen.set({}, 0);
  let plegSeen: (() => number | undefined) | undefined;
  const eventedPlegErrors = new Counter(
    "kubelet_evented_pleg_connection_error_count",
    "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
  );
  const eventedPlegSuccesses = new Counter(
    "kubelet_evented_pleg_connection_success_count",
    "The number of times a streaming client was obtained to receive CRI Events.",
  );
  for (const counter of [eventedPlegErrors, eventedPlegSuccesses]) counter.set({}, 0);
  const eventedPlegLatency = new Histogram(
    "kubelet_evented_pleg_connection_latency_seconds",
    "The latency of streaming connection with the CRI runtime, measured in seconds.",
    DEF_BUCKETS,
    { unlabelled: true },
  );
  const nodeName = new Counter("kubelet_node_name", "The node's name. The count is always 1.", "gauge");
  if (options.nodeName) nodeName.set({ node: options.nodeName }, 1);
  const build = buildInfo();
  const [major = "0", minor = "0"] = build.version.split(".");
  const buildInfoGauge = new Counter(
    "kubernetes_build_info",
    "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
    "gauge",
  );
  buildInfoGauge.set(
    {
      build_date: "",
      compiler: "bun",
      git_commit: build.commit,
      git_tree_state: "",
      git_version: `v${build.version}`,
      go_version: "",
      major,
      minor,
      platform: `${platform()}/${arch() === "x64" ? "amd64" : arch()}`,
    },
    1,
  );
  // Both helps are the Go kubelet's, "start" in the end time's included.
  const shutdownStart = new Counter(
    "kubelet_graceful_shutdown_start_time_seconds",
    "Last graceful shutdown start time since unix epoch in seconds",
    "gauge",
  );
  const shutdownEnd = new Counter(
    "kubelet_graceful_shutdown_end_time_seconds",
    "Last graceful shutdown start time since unix epoch in seconds",
    "gauge",
  );
  shutdownStart.set({}, 0);
  shutdownEnd.set({}, 0);
  const staticHelp = "static is true if the pod is not from the apiserver.";
  const desiredPods = new Counter(
    "kubelet_desired_pods",
    `The number of pods the kubelet is being instructed to run. ${staticHelp}`,
    "gauge",
  );
  const activePods = new Counter(
    "kubelet_active_pods",
    `The number of pods the kubelet considers active and which are being considered when admitting new pods. ${staticHelp}`,
    "gauge",
  );
  let podCounts: PodCounts | undefined;
  const countStatic = (gauge: Counter, pods: Pod[]) => {
    const fromApi = pods.filter((p) => p.metadata.annotations?.[ANNOTATION.source] === "api").length;
    gauge.set({ static: "" }, fromApi);
    gauge.set({ static: "true" }, pods.length - fromApi);
  };
  const processStart = Date.now() / 1000 - process.uptime();
  const registry: Metric[] = [
    runningPods,
    workingPods,
    runningContainers,
    podStart,
    podStartSli,
    podWorker,
    operations,
    operationErrors,
    operationDuration,
    imagePull,
    started,
    startErrors,
    restarts,
    sourceErrors,
    openStreams,
    startedPods,
    startedPodErrors,
    cgroupManager,
    plegDuration,
    plegInterval,
    plegLastSeen,
    eventedPlegErrors,
    eventedPlegSuccesses,
    eventedPlegLatency,
    desiredPods,
    activePods,
    nodeName,
    buildInfoGauge,
    shutdownStart,
    shutdownEnd,
  ];

  // A collector that cannot read /proc says so once, not at every scrape, and reports its fallback.
  const failed = new Set<string>();
  const collect = <T>(what: string, fallback: T, read: () => T): T => {
    try {
      return read();
    } catch (error) {
      if (!failed.has(what))
        options.log?.warn(`metrics: cannot read ${what}: ${(error as Error).message}; reporting ${fallback}`);
      failed.add(what);
      return fallback;
    }
  };

  const processMetrics = () => {
    const usage = process.cpuUsage();
    const fds = collect("/proc/self/fd for process_open_fds", 0, () => openFds());
    const heapRss = process.memoryUsage().rss;
    const rss = collect(
      "/proc/self/status for process_resident_memory_bytes",
      heapRss,
      () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024 || heapRss,
    );
    return [
      "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
      "# TYPE process_cpu_seconds_total counter",
      `process_cpu_seconds_total ${(usage.user + usage.system) / 1e6}`,
      "# HELP process_resident_memory_bytes Resident memory size in bytes.",
      "# TYPE process_resident_memory_bytes gauge",
      `process_resident_memory_bytes ${rss}`,
      "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
      "# TYPE process_start_time_seconds gauge",
      `process_start_time_seconds ${processStart.toFixed(3)}`,
      "# HELP process_open_fds Number of open file descriptors.",
      "# TYPE process_open_fds gauge",
      `process_open_fds ${fds}`,
    ].join("\n");
  };

  return {
    runtimeOperation(operation, seconds, failed) {
      const labels = { operation_type: operation };
      operations.inc(labels);
      if (failed) operationErrors.inc(labels);
      operationDuration.observe(seconds, labels);
    },
    podStart(seconds, podUid) {
      podStart.observe(seconds);
      const pulls = podUid === undefined ? undefined : pullWindows.get(podUid);
      if (podUid !== undefined) pullWindows.delete(podUid);
      podStartSli.observe(Math.max(0, seconds - (pulls ? (pulls.last - pulls.first) / 1000 : 0)));
    },
    podImagePulled(podUid, startedMs, finishedMs) {
      const known = pullWindows.get(podUid);
      pullWindows.set(podUid, { first: Math.min(known?.first ?? startedMs, startedMs), last: finishedMs });
      // A pod that never starts leaves its window: the oldest go first.
      if (pullWindows.size > MAX_PULL_WINDOWS) pullWindows.delete(pullWindows.keys().next().value!);
    },
    podWorker: (operation, seconds) => podWorker.observe(seconds, { operation_type: operation }),
    imagePull: (seconds) => imagePull.observe(seconds),
    probe(probeType, result, { pod_uid, ...labels }, seconds) {
      probes.inc({ probe_type: probeType, result, ...labels, pod_uid });
      probeDuration.observe(seconds, { probe_type: probeType, ...labels });
    },
    containerStarted(containerType, failed) {
      // As the Go kubelet: a sandbox started is a pod started, not a container.
      if (containerType === "podsandbox") {
        startedPods.inc();
        if (failed) startedPodErrors.inc();
        return;
      }
      started.inc({ container_type: containerType });
      if (failed) startErrors.inc({ container_type: containerType });
    },
    containerRestarted: () => restarts.inc(),
    setRunning(pods, byState) {
      runningPods.set({}, pods);
      runningContainers.clear();
      for (const [state, count] of Object.entries(byState)) runningContainers.set({ container_state: state }, count);
    },
    setWorkingPods(counts) {
      workingPods.clear();
      for (const c of counts)
        workingPods.set({ lifecycle: c.lifecycle, config: c.config, static: String(c.static) }, c.count);
    },
    sourceError: (source) => sourceErrors.inc({ source }),
    runtimeStream: (streamType, delta) => openStreams.inc({ stream_type: streamType }, delta),
    cgroupManager: (operation, seconds) => cgroupManager.observe(seconds, { operation_type: operation }),
    plegRelist(duration, interval) {
      plegDuration.observe(duration);
      if (interval !== undefined) plegInterval.observe(interval);
    },
    eventedPlegConnection: (outcome) => (outcome === "success" ? eventedPlegSuccesses : eventedPlegErrors).inc(),
    eventedPlegLatency: (seconds) => eventedPlegLatency.observe(seconds),
    gracefulShutdown({ startSeconds, endSeconds }) {
      if (startSeconds !== undefined) shutdownStart.set({}, startSeconds);
      if (endSeconds !== undefined) shutdownEnd.set({}, endSeconds);
    },
    countPods(pods) {
      podCounts = pods;
    },
    plegLastSeen(read) {
      plegSeen = read;
    },
    render() {
      const seen = plegSeen?.();
      if (seen !== undefined) plegLastSeen.set({}, Math.floor(seen / 1000));
      if (podCounts) {
        countStatic(desiredPods, podCounts.desired());
        countStatic(activePods, podCounts.active());
      }
      return registry.map((m) => m.render()).join("\n") + "\n" + processMetrics() + "\n";
    },
    renderProbes: () => probes.render() + "\n" + probeDuration.render() + "\n",
  };
}
