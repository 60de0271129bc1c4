// /metrics/resource: the Go kubelet's resource metrics collector (what metrics-server scrapes) —
// node, pod and container CPU seconds and working set with the sample's millisecond timestamp,
// container start times, scrape_error and resource_scrape_error — from a fresh read of the pod
// cgroups (the resource analyzer's last collection without them, and for the node).
import type { StatsSummary } from "../node/stats/stats-analyzer.ts";
import type { UsageSample } from "../node/stats/usage-sampler.ts";
import type { CgroupDetail } from "../node/stats/cgroup-stats.ts";
import { renderFamily, renderedOnce, type Sample } from "./exposition.ts";

export interface ResourceMetricsDeps {
  /** The collection (node figures; pods' without pod cgroups), read first when older than 15 s where it can be. */
  summary(): StatsSummary | undefined | Promise<StatsSummary | undefined>;
  /** A fresh cgroup read (CPU and working set are all it needs: "usage"); undefined without pod cgroups. */
  sample(detail: CgroupDetail): Promise<UsageSample | undefined>;
}

interface Usage {
  time: number;
  cpuNanoseconds?: number;
  workingSetBytes?: number;
}
interface PodUsage extends Usage {
  name: string;
  namespace: string;
  containers: Array<Usage & { name: string; startTime: number }>;
}

const fromSample = (sample: UsageSample): PodUsage[] =>
  sample.pods.map((p) => ({
    name: p.name,
    namespace: p.namespace,
    time: sample.time,
    cpuNanoseconds: p.stats.cpuUsageNanoseconds,
    workingSetBytes: p.stats.memoryWorkingSetBytes,
    containers: p.containers
      .filter((c) => !c.sandbox)
      .map((c) => ({
        name: c.name,
        startTime: c.createdAt,
        time: sample.time,
        cpuNanoseconds: c.stats.cpuUsageNanoseconds,
        workingSetBytes: c.stats.memoryWorkingSetBytes,
      })),
  }));

const fromSummary = (summary: StatsSummary): PodUsage[] =>
  summary.pods.map((p) => ({
    name: p.podRef.name,
    namespace: p.podRef.namespace,
    time: Date.parse(p.cpu?.time ?? p.memory?.time ?? ""),
    cpuNanoseconds: p.cpu?.usageCoreNanoSeconds,
    workingSetBytes: p.memory?.workingSetBytes,
    containers: p.containers.map((c) => ({
      name: c.name,
      startTime: Date.parse(c.startTime),
      time: Date.parse(c.cpu?.time ?? p.cpu?.time ?? ""),
      cpuNanoseconds: c.cpu?.usageCoreNanoSeconds,
      workingSetBytes: c.memory?.workingSetBytes,
    })),
  }));

/** Renders /metrics/resource; errors become resource_scrape_error 1, never a failed scrape. */
export function createResourceMetrics(deps: ResourceMetricsDeps): { render(): Promise<string> } {
  // Rendered again only when the collection, the cgroup read (served again within 10 s) or the error changed.
  const text = renderedOnce((summary: StatsSummary | undefined, sample: UsageSample | undefined, unread: boolean) => {
    const failed = unread || !summary;
    const pods = unread ? [] : sample ? fromSample(sample) : summary ? fromSummary(summary) : [];
    const node = summary?.node;
    const labelled = (p: PodUsage, c?: { name: string }): Record<string, string> =>
      c ? { container: c.name, pod: p.name, namespace: p.namespace } : { pod: p.name, namespace: p.namespace };
    const containers = pods.flatMap((p) => p.containers.map((c) => ({ p, c })));
    const families = [
      renderFamily(
        "container_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
        "counter",
        containers.flatMap(({ p, c }) =>
          c.cpuNanoseconds === undefined
            ? []
            : [{ labels: labelled(p, c), value: c.cpuNanoseconds / 1e9, timestamp: c.time }],
        ),
      ),
      renderFamily(
        "container_memory_working_set_bytes",
        "[STABLE] Current working set of the container in bytes",
        "gauge",
        containers.flatMap(({ p, c }) =>
          c.workingSetBytes === undefined
            ? []
            : [{ labels: labelled(p, c), value: c.workingSetBytes, timestamp: c.time }],
        ),
      ),
      renderFamily(
        "container_start_time_seconds",
        "[STABLE] Start time of the container since unix epoch in seconds",
        "gauge",
        containers.flatMap(({ p, c }) =>
          c.startTime > 0 ? [{ labels: labelled(p, c), value: c.startTime / 1000 }] : [],
        ),
      ),
      renderFamily(
        "node_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
        "counter",
        node
          ? [{ value: node.cpu.usageCoreNanoSeconds / 1e9, timestamp: Date.parse(node.cpu.time) }]
          : ([] as Sample[]),
      ),
      renderFamily(
        "node_memory_working_set_bytes",
        "[STABLE] Current working set of the node in bytes",
        "gauge",
        node ? [{ value: node.memory.workingSetBytes, timestamp: Date.parse(node.memory.time) }] : [],
      ),
      renderFamily(
        "pod_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
        "counter",
        pods.flatMap((p) =>
          p.cpuNanoseconds === undefined
            ? []
            : [{ labels: labelled(p), value: p.cpuNanoseconds / 1e9, timestamp: p.time }],
        ),
      ),
      renderFamily(
        "pod_memory_working_set_bytes",
        "[STABLE] Current working set of the pod in bytes",
        "gauge",
        pods.flatMap((p) =>
          p.workingSetBytes === undefined ? [] : [{ labels: labelled(p), value: p.workingSetBytes, timestamp: p.time }],
        ),
      ),
      renderFamily(
        "resource_scrape_error",
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
        "gauge",
        [{ value: failed ? 1 : 0 }],
      ),
      renderFamily(
        "scrape_error",
        "[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise",
        "gauge",
        [{ value: failed ? 1 : 0 }],
      ),
    ];
    return families.filter(Boolean).join("\n") + "\n";
  });
  return {
    async render() {
      const summary = await deps.summary();
      try {
        return text(summary, await deps.sample("usage"), false);
      } catch {
        return text(summary, undefined, true);
      }
    },
  };
}
