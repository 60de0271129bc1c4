// /metrics/cadvisor: the container_* series cAdvisor exposes through the kubelet (google/cadvisor
// metrics/prometheus.go) — CPU, memory, limits from the cgroup, writable-layer usage, each pod's
// network namespace, last seen — for the machine's root cgroup, every pod cgroup and every container
// below it, labelled container, id, image, name, namespace, pod as the kubelet labels them, with
// machine_cpu_cores and machine_memory_bytes. A scrape reads files only (usage-sampler.ts).
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import type { CgroupStats } from "../node/stats/cgroup-stats.ts";
import type { InterfaceSample, UsageSample } from "../node/stats/usage-sampler.ts";
import { formatValue, helpText, labelText, renderFamily, renderedOnce, type Sample } from "./exposition.ts";

export interface CadvisorMetricsDeps {
  /** A fresh cgroup read; undefined without pod cgroups (only the machine series are written then). */
  sample(): Promise<UsageSample | undefined>;
  /** Capacity of the filesystem writable layers live on (container_fs_limit_bytes). */
  imageFsCapacity(): number | undefined;
}

/** One cgroup as cAdvisor labels it. */
interface Cgroup {
  labels: Record<string, string>;
  stats: CgroupStats;
  startTime?: number;
  rootfsBytes?: number;
  interfaces?: InterfaceSample[];
}

type Family = [name: string, help: string, type: "counter" | "gauge", value: (c: Cgroup) => Sample[]];

const one = (value: number | undefined, extra: Record<string, string> = {}): Sample[] =>
  value === undefined ? [] : [{ labels: extra, value }];

/** cAdvisor's container families, in its order of definition. */
const FAMILIES: Family[] = [
  [
    "container_cpu_user_seconds_total",
    "Cumulative user cpu time consumed in seconds.",
    "counter",
    (c) => one(c.stats.cpuUserNanoseconds / 1e9),
  ],
  [
    "container_cpu_system_seconds_total",
    "Cumulative system cpu time consumed in seconds.",
    "counter",
    (c) => one(c.stats.cpuSystemNanoseconds / 1e9),
  ],
  [
    "container_cpu_usage_seconds_total",
    "Cumulative cpu time consumed in seconds.",
    "counter",
    (c) => one(c.stats.cpuUsageNanoseconds / 1e9, { cpu: "total" }),
  ],
  ["container_memory_cache", "Number of bytes of page cache memory.", "gauge", (c) => one(c.stats.memoryCacheBytes)],
  ["container_memory_rss", "Size of RSS in bytes.", "gauge", (c) => one(c.stats.memoryRssBytes)],
  [
    "container_memory_mapped_file",
    "Size of memory mapped files in bytes.",
    "gauge",
    (c) => one(c.stats.memoryMappedFileBytes),
  ],
  ["container_memory_swap", "Container swap usage in bytes.", "gauge", (c) => one(c.stats.memorySwapBytes)],
  // cAdvisor types this one a counter without the _total suffix, which `promtool check metrics` rejects: a gauge
  // here, the samples are the same.
  ["container_memory_failcnt", "Number of memory usage hits limits", "gauge", (c) => one(c.stats.memoryFailcnt)],
  [
    "container_memory_usage_bytes",
    "Current memory usage in bytes, including all memory regardless of when it was accessed",
    "gauge",
    (c) => one(c.stats.memoryUsageBytes),
  ],
  [
    "container_memory_max_usage_bytes",
    "Maximum memory usage recorded in bytes",
    "gauge",
    (c) => one(c.stats.memoryMaxUsageBytes),
  ],
  [
    "container_memory_working_set_bytes",
    "Current working set in bytes.",
    "gauge",
    (c) => one(c.stats.memoryWorkingSetBytes),
  ],
  [
    "container_memory_failures_total",
    "Cumulative count of memory allocation failures.",
    "counter",
    (c) =>
      (["container", "hierarchy"] as const).flatMap((scope) => [
        ...one(c.stats.pageFaults, { failure_type: "pgfault", scope }),
        ...one(c.stats.majorPageFaults, { failure_type: "pgmajfault", scope }),
      ]),
  ],
  [
    "container_fs_usage_bytes",
    "Number of bytes that are consumed by the container on this filesystem.",
    "gauge",
    (c) => one(c.rootfsBytes, { device: "" }),
  ],
  ...networkFamilies(),
  [
    "container_spec_cpu_period",
    "CPU period of the container.",
    "gauge",
    (c) => (c.stats.cpuQuota !== undefined ? one(c.stats.cpuPeriod) : []),
  ],
  ["container_spec_cpu_quota", "CPU quota of the container.", "gauge", (c) => one(c.stats.cpuQuota)],
  ["container_spec_cpu_shares", "CPU share of the container.", "gauge", (c) => one(c.stats.cpuShares)],
  [
    "container_spec_memory_limit_bytes",
    "Memory limit for the container.",
    "gauge",
    (c) => one(c.stats.memoryLimitBytes ?? 0),
  ],
  [
    "container_start_time_seconds",
    "Start time of the container since unix epoch in seconds.",
    "gauge",
    (c) => one(c.startTime === undefined ? undefined : c.startTime / 1000),
  ],
];

function networkFamilies(): Family[] {
  const counters: Array<[string, string, keyof InterfaceSample]> = [
    ["receive_bytes_total", "Cumulative count of bytes received", "rxBytes"],
    ["receive_errors_total", "Cumulative count of errors encountered while receiving", "rxErrors"],
    ["receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", "rxDropped"],
    ["receive_packets_total", "Cumulative count of packets received", "rxPackets"],
    ["transmit_bytes_total", "Cumulative count of bytes transmitted", "txBytes"],
    ["transmit_errors_total", "Cumulative count of errors encountered while transmitting", "txErrors"],
    ["transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", "txDropped"],
    ["transmit_packets_total", "Cumulative count of packets transmitted", "txPackets"],
  ];
  return counters.map(([suffix, help, field]) => [
    `container_network_${suffix}`,
    help,
    "counter",
    (c) => (c.interfaces ?? []).map((i) => ({ labels: { interface: i.name }, value: Number(i[field]) })),
  ]);
}

/** The machine's identity labels on machine_* series (cAdvisor's boot_id, machine_id, system_uuid). */
function machineLabels(): Record<string, string> {
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8").trim();
    } catch {
      return "";
    }
  };
  return {
    boot_id: read("/proc/sys/kernel/random/boot_id"),
    machine_id: read("/etc/machine-id"),
    system_uuid: read("/sys/class/dmi/id/product_uuid"),
  };
}

/** The cgroups of a sample as cAdvisor names them: the root, each pod, each container (its sandbox's as "POD"). */
function cgroupsOf(sample: UsageSample): Cgroup[] {
  const none = { container: "", image: "", name: "", namespace: "", pod: "" };
  return [
    ...(sample.root ? [{ labels: { ...none, id: "/" }, stats: sample.root }] : []),
    ...sample.pods.flatMap((p) => [
      { labels: { ...none, id: p.cgroup, namespace: p.namespace, pod: p.name }, stats: p.stats },
      ...p.containers.map((c) => ({
        labels: {
          container: c.name,
          id: c.cgroup,
          image: c.image,
          name: c.runtimeName,
          namespace: p.namespace,
          pod: p.name,
        },
        stats: c.stats,
        startTime: c.createdAt,
        ...(c.rootfsBytes !== undefined ? { rootfsBytes: c.rootfsBytes } : {}),
        // A pod's network namespace is its sandbox's: cAdvisor reports it on the pause container only.
        ...(c.sandbox ? { interfaces: p.interfaces } : {}),
      })),
    ]),
  ];
}

export function createCadvisorMetrics(deps: CadvisorMetricsDeps): { render(): Promise<string> } {
  const machine = machineLabels();
  // The families of one read: rendered again only when the read (served again within 15 s), the error or the capacity changed.
  const labels = labelTexts();
  const text = renderedOnce((sample: UsageSample | undefined, failed: boolean, capacity: number | undefined) => {
    const cgroups = sample ? cgroupsOf(sample) : [];
    const stamp = ` ${Math.round(sample?.time ?? 0)}`;
    // Each sample's line written straight from the cgroup's label text, kept between scrapes: a scrape of 110 pods
    // writes ~20,000 lines, where building, merging and sorting a label object per line was most of its CPU.
    const family = (name: string, help: string, type: "counter" | "gauge", value: (c: Cgroup) => Sample[]) => {
      const lines: string[] = [];
      for (const c of cgroups)
        for (const s of value(c)) lines.push(`${name}${labels.of(c, s.labels)} ${formatValue(s.value)}${stamp}`);
      return lines.length ? `# HELP ${name} ${helpText(help)}\n# TYPE ${name} ${type}\n${lines.join("\n")}` : "";
    };
    const families = [
      ...FAMILIES.map(([name, help, type, value]) => family(name, help, type, value)),
      family(
        "container_fs_limit_bytes",
        "Number of bytes that can be consumed by the container on this filesystem.",
        "gauge",
        (c) => (capacity === undefined || c.rootfsBytes === undefined ? [] : one(capacity, { device: "" })),
      ),
      family("container_last_seen", "Last time a container was seen by the exporter", "gauge", () =>
        one(Math.floor((sample?.time ?? 0) / 1000)),
      ),
      renderFamily(
        "container_scrape_error",
        "1 if there was an error while getting container metrics, 0 otherwise",
        "gauge",
        [{ value: failed ? 1 : 0 }],
      ),
      renderFamily("machine_cpu_cores", "Number of logical CPU cores.", "gauge", [
        { labels: machine, value: cpus().length },
      ]),
      renderFamily("machine_memory_bytes", "Amount of memory installed on the machine.", "gauge", [
        { labels: machine, value: totalmem() },
      ]),
    ];
    labels.sweep();
    return families.filter(Boolean).join("\n") + "\n";
  });
  return {
    async render() {
      let failed = false;
      const sample = await deps.sample().catch(() => {
        failed = true;
        return undefined;
      });
      return text(sample, failed, deps.imageFsCapacity());
    },
  };
}

/**
 * `{…}` label texts of cgroups, merged with a sample's extra labels (cpu, device, failure_type, interface…), kept
 * while the cgroup is in the scrapes: a text is built once per cgroup and extra labels, not once per line.
 */
function labelTexts() {
  let texts = new Map<string, string>();
  let used = new Map<string, string>();
  const keys = new WeakMap<Cgroup, string>();
  const keyOf = (c: Cgroup) => {
    let key = keys.get(c);
    if (key === undefined) keys.set(c, (key = Object.entries(c.labels).join("\0")));
    return key;
  };
  return {
    of(c: Cgroup, extra: Record<string, string> | undefined): string {
      const key = extra ? `${keyOf(c)}\u0001${Object.entries(extra).join("\0")}` : keyOf(c);
      let text = used.get(key) ?? texts.get(key);
      if (text === undefined) text = labelText(extra ? { ...c.labels, ...extra } : c.labels);
      used.set(key, text);
      return text;
    },
    /** Ends a scrape: texts of cgroups it did not write go. */
    sweep() {
      texts = used;
      used = new Map();
    },
  };
}
