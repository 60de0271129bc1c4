// A small Prometheus registry (counters, gauges, histograms, text format 0.0.4) and the kubelet's
// metrics on it, named as the real kubelet names them.
import { readdirSync, readFileSync } from "node:fs";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";

type Labels = Record<string, string>;

const escape = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const labelText = (labels: Labels) => {
  const keys = Object.keys(labels);
  return keys.length ? `{${keys.map((k) => `${k}="${escape(labels[k]!)}"`).join(",")}}` : "";
};
const keyOf = (labels: Labels) => JSON.stringify(Object.entries(labels).sort());

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge" | "histogram",
  ) {}
  abstract lines(): string[];
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, ...this.lines()].join("\n");
  }
}

class Counter extends Metric {
  readonly values = new Map<string, { labels: Labels; value: number }>();
  constructor(name: string, help: string, type: "counter" | "gauge" = "counter") {
    super(name, help, type);
  }
  inc(labels: Labels = {}, by = 1): void {
    const key = keyOf(labels);
    const entry = this.values.get(key) ?? this.values.set(key, { labels, value: 0 }).get(key)!;
    entry.value += by;
  }
  set(labels: Labels, value: number): void {
    this.values.set(keyOf(labels), { labels, value });
  }
  lines(): string[] {
    return [...this.values.values()].map(({ labels, value }) => `${this.name}${labelText(labels)} ${value}`);
  }
}

class Histogram extends Metric {
  readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    name: string,
    help: string,
    readonly buckets: number[],
  ) {
    super(name, help, "histogram");
  }
  observe(value: number, labels: Labels = {}): void {
    const key = keyOf(labels);
    const s =
      this.series.get(key) ??
      this.series.set(key, { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }).get(key)!;
    this.buckets.forEach((le, i) => value <= le && s.counts[i]!++);
    s.sum += value;
    s.count++;
  }
  lines(): string[] {
    return [...this.series.values()].flatMap(({ labels, counts, sum, count }) => [
      ...this.buckets.map((le, i) => `${this.name}_bucket${labelText({ ...labels, le: String(le) })} ${counts[i]}`),
      `${this.name}_bucket${labelText({ ...labels, le: "+Inf" })} ${count}`,
      `${this.name}_sum${labelText(labels)} ${sum}`,
      `${this.name}_count${labelText(labels)} ${count}`,
    ]);
  }
}

const exponential = (start: number, factor: number, count: number) =>
  Array.from({ length: count }, (_, i) => Number((start * factor ** i).toPrecision(6)));
const POD_START_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
];

/** The kubelet's metrics and their text exposition (/metrics and /metrics/probes). */
export function createPrometheusMetrics(
  options: { log?: Logger } = {},
): KubeletMetrics & { render(): string; renderProbes(): string } {
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
  const processStart = Date.now() / 1000 - process.uptime();
  const registry: Metric[] = [
    runningPods,
    workingPods,
    runningContainers,
    podStart,
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
    const fds = collect("/proc/self/fd for process_open_fds", 0, () => readdirSync("/proc/self/fd").length);
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
    runtimeOperation(operation, seconds, failed, runtimeType) {
      const labels = { operation_type: operation, ...(runtimeType ? { runtime_type: runtimeType } : {}) };
      operations.inc(labels);
      if (failed) operationErrors.inc(labels);
      operationDuration.observe(seconds, labels);
    },
    podStart: (seconds) => podStart.observe(seconds),
    podWorker: (operation, seconds) => podWorker.observe(seconds, { operation_type: operation }),
    imagePull: (seconds) => imagePull.observe(seconds),
    probe: (probeType, result, labels) => probes.inc({ probe_type: probeType, result, ...labels }),
    containerStarted(containerType, failed) {
      started.inc({ container_type: containerType });
      if (failed) startErrors.inc({ container_type: containerType });
    },
    containerRestarted: () => restarts.inc(),
    setRunning(pods, byState) {
      runningPods.set({}, pods);
      runningContainers.values.clear();
      for (const [state, count] of Object.entries(byState)) runningContainers.set({ container_state: state }, count);
    },
    setWorkingPods(counts) {
      workingPods.values.clear();
      for (const c of counts)
        workingPods.set({ lifecycle: c.lifecycle, config: c.config, static: String(c.static) }, c.count);
    },
    sourceError: (source) => sourceErrors.inc({ source }),
    runtimeStream: (streamType, delta) => openStreams.inc({ stream_type: streamType }, delta),
    render: () => registry.map((m) => m.render()).join("\n") + "\n" + processMetrics() + "\n",
    renderProbes: () => probes.render() + "\n",
  };
}
