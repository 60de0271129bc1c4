// /metrics/cadvisor: the container_* series cAdvisor exposes through the kubelet (google/cadvisor
// metrics/prometheus.go) — CPU, memory, limits from the cgroup, writable-layer usage, each pod's
// network namespace, last seen — for the machine's root cgroup, every pod cgroup and every container
// below it, labelled container, id, image, name, namespace, pod as the kubelet labels them, with
// machine_cpu_cores and machine_memory_bytes, from the resource analyzer's cgroup read (stats-analyzer.ts sample).
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import type { CgroupStats } from "../node/stats/cgroup-stats.ts";
import type { InterfaceSample, UsageSample } from "../node/stats/usage-sampler.ts";
import { formatValue, helpText, labelText, renderFamily, renderedOnce } from "./exposition.ts";

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

/**
 * Writes one sample of a cgroup: its value and extra labels. Extra labels are constant objects (or interned, as
 * interfaces' are): the renderer keeps each cgroup's label text per extra labels object, by identity.
 */
type Emit = (value: number, extra?: Record<string, string>) => void;
type Family = [name: string, help: string, type: "counter" | "gauge", value: (c: Cgroup, emit: Emit) => void];

const one = (emit: Emit, value: number | undefined, extra?: Record<string, string>) => {
  if (value !== undefined) emit(value, extra);
};
const CPU_TOTAL = { cpu: "total" };
const NO_DEVICE = { device: "" };
const FAILURES = (["container", "hierarchy"] as const).map((scope) => ({
  pgfault: { failure_type: "pgfault", scope },
  pgmajfault: { failure_type: "pgmajfault", scope },
}));
/** `{interface: name}` objects, one per name, so their label texts are kept as the constant ones are. */
const interfaceLabels = new Map<string, Record<string, string>>();
const interfaceLabel = (name: string) => {
  let labels = interfaceLabels.get(name);
  if (!labels) interfaceLabels.set(name, (labels = { interface: name }));
  return labels;
};

/** cAdvisor's container families, in its order of definition. */
const FAMILIES: Family[] = [
  [
    "container_cpu_user_seconds_total",
    "Cumulative user cpu time consumed in seconds.",
    "counter",
    (c, emit) => one(emit, c.stats.cpuUserNanoseconds / 1e9),
  ],
  [
    "container_cpu_system_seconds_total",
    "Cumulative system cpu time consumed in seconds.",
    "counter",
    (c, emit) => one(emit, c.stats.cpuSystemNanoseconds / 1e9),
  ],
  [
    "container_cpu_usage_seconds_total",
    "Cumulative cpu time consumed in seconds.",
    "counter",
    (c, emit) => one(emit, c.stats.cpuUsageNanoseconds / 1e9, CPU_TOTAL),
  ],
  [
    "container_memory_cache",
    "Number of bytes of page cache memory.",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryCacheBytes),
  ],
  ["container_memory_rss", "Size of RSS in bytes.", "gauge", (c, emit) => one(emit, c.stats.memoryRssBytes)],
  [
    "container_memory_mapped_file",
    "Size of memory mapped files in bytes.",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryMappedFileBytes),
  ],
  ["container_memory_swap", "Container swap usage in bytes.", "gauge", (c, emit) => one(emit, c.stats.memorySwapBytes)],
  // cAdvisor types this one a counter without the _total suffix, which `promtool check metrics` rejects: a gauge
  // here, the samples are the same.
  [
    "container_memory_failcnt",
    "Number of memory usage hits limits",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryFailcnt),
  ],
  [
    "container_memory_usage_bytes",
    "Current memory usage in bytes, including all memory regardless of when it was accessed",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryUsageBytes),
  ],
  [
    "container_memory_max_usage_bytes",
    "Maximum memory usage recorded in bytes",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryMaxUsageBytes),
  ],
  [
    "container_memory_working_set_bytes",
    "Current working set in bytes.",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryWorkingSetBytes),
  ],
  [
    "container_memory_failures_total",
    "Cumulative count of memory allocation failures.",
    "counter",
    (c, emit) => {
      for (const scope of FAILURES) {
        one(emit, c.stats.pageFaults, scope.pgfault);
        one(emit, c.stats.majorPageFaults, scope.pgmajfault);
      }
    },
  ],
  [
    "container_fs_usage_bytes",
    "Number of bytes that are consumed by the container on this filesystem.",
    "gauge",
    (c, emit) => one(emit, c.rootfsBytes, NO_DEVICE),
  ],
  ...networkFamilies(),
  [
    "container_spec_cpu_period",
    "CPU period of the container.",
    "gauge",
    (c, emit) => c.stats.cpuQuota !== undefined && one(emit, c.stats.cpuPeriod),
  ],
  ["container_spec_cpu_quota", "CPU quota of the container.", "gauge", (c, emit) => one(emit, c.stats.cpuQuota)],
  ["container_spec_cpu_shares", "CPU share of the container.", "gauge", (c, emit) => one(emit, c.stats.cpuShares)],
  [
    "container_spec_memory_limit_bytes",
    "Memory limit for the container.",
    "gauge",
    (c, emit) => one(emit, c.stats.memoryLimitBytes ?? 0),
  ],
  [
    "container_start_time_seconds",
    "Start time of the container since unix epoch in seconds.",
    "gauge",
    (c, emit) => one(emit, c.startTime === undefined ? undefined : c.startTime / 1000),
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
    (c, emit) => {
      for (const i of c.interfaces ?? []) emit(Number(i[field]), interfaceLabel(i.name));
    },
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

export function createCadvisorMetrics(deps: CadvisorMetricsDeps): { render(): Promise<Uint8Array<ArrayBuffer>> } {
  const machine = machineLabels();
  // The text of one read, as the bytes sent: rendered again only when the read (served again within 15 s), the error
  // or the capacity changed, so a scrape served an earlier read encodes nothing.
  const lines = keptLines();
  const text = renderedOnce((sample: UsageSample | undefined, failed: boolean, capacity: number | undefined) => {
    const cgroups = sample ? cgroupsOf(sample) : [];
    const out = lines.start(cgroups, ` ${Math.round(sample?.time ?? 0)}`);
    const family = (name: string, help: string, type: "counter" | "gauge", value: (c: Cgroup, emit: Emit) => void) => {
      const written = lines.family(name, cgroups, value);
      if (!written.length) return;
      out.text(`# HELP ${name} ${helpText(help)}\n# TYPE ${name} ${type}\n`);
      for (const line of written) out.line(line);
    };
    const lastSeen = Math.floor((sample?.time ?? 0) / 1000);
    for (const [name, help, type, value] of FAMILIES) family(name, help, type, value);
    family(
      "container_fs_limit_bytes",
      "Number of bytes that can be consumed by the container on this filesystem.",
      "gauge",
      (c, emit) => capacity !== undefined && c.rootfsBytes !== undefined && emit(capacity, NO_DEVICE),
    );
    family("container_last_seen", "Last time a container was seen by the exporter", "gauge", (_, emit) =>
      emit(lastSeen),
    );
    out.text(
      `${[
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
      ].join("\n")}\n`,
    );
    return lines.end();
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

/** One written line without its timestamp (`name{labels} value`), and where the last render wrote it. */
interface Line {
  name: string;
  extra: Record<string, string> | undefined;
  value: number;
  head: string;
  /** The render that last wrote it, the offset of its head in that render's text and the head's length in bytes. */
  render: number;
  at: number;
  bytes: number;
}

/** A cgroup's kept lines: its label texts by extra labels object, and its last lines in the order written. */
interface Kept {
  labels: Map<Record<string, string> | undefined, string>;
  lines: Line[];
  /** The next line's index in `lines` during a render. */
  next: number;
}

/**
 * Each cgroup's lines without their timestamp, kept while the cgroup is in the scrapes (a line is built again only
 * when its value changed, its label text only when the cgroup is new), and the last render's text: a run of lines
 * written one after the other last time, unchanged, is copied from it in one piece and only their timestamps
 * written, so a read of 110 pods whose counters mostly stood still builds and encodes little of its 2 MB.
 */
function keptLines() {
  let kept = new Map<string, Kept>();
  let used = new Map<string, Kept>();
  let current: Kept[] = [];
  let render = 0;
  let last = Buffer.alloc(0);
  let lastStamp = "";
  let out = Buffer.alloc(0);
  let size = 0;
  let stamp = Buffer.alloc(0);
  /** Lines copied from the last text, pending: the range [from, to) of it and the lines in it. */
  let from = 0;
  let to = 0;
  let run: Line[] = [];
  const room = (bytes: number) => {
    if (size + bytes <= out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, size + bytes));
    out.copy(bigger, 0, 0, size);
    out = bigger;
  };
  const flush = () => {
    if (!run.length) return;
    room(to - from);
    last.copy(out, size, from, to);
    const shift = size - from;
    for (const line of run) {
      line.at += shift;
      // The timestamp follows the head: the same width as the last render's (checked in start), written in place.
      for (let i = 0, at = line.at + line.bytes; i < stamp.length; i++) out[at + i] = stamp[i]!;
    }
    size += to - from;
    run = [];
  };
  const writer = {
    /** Text that is not a kept line (a family's HELP and TYPE, the machine's families). */
    text(text: string) {
      flush();
      room(Buffer.byteLength(text));
      size += out.write(text, size);
    },
    /** One kept line with the render's timestamp. */
    line(line: Line) {
      const end = line.at + line.bytes + stamp.length + 1;
      const written = line.render === render - 1;
      line.render = render;
      if (written) {
        if (run.length && line.at === to) {
          run.push(line);
          to = end;
          return;
        }
        flush();
        [from, to, run] = [line.at, end, [line]];
        return;
      }
      flush();
      room(line.head.length * 3 + stamp.length + 1);
      line.at = size;
      line.bytes = out.write(line.head, size);
      size += line.bytes;
      size += stamp.copy(out, size);
      out[size++] = 10;
    },
  };
  return {
    /** Begins a render of these cgroups (each found by its labels, or new) with this timestamp; returns its writer. */
    start(cgroups: Cgroup[], timestamp: string) {
      current = cgroups.map((c) => {
        const key = Object.values(c.labels).join("\0");
        let entry = used.get(key) ?? kept.get(key);
        if (!entry) entry = { labels: new Map(), lines: [], next: 0 };
        entry.next = 0;
        used.set(key, entry);
        return entry;
      });
      // A timestamp of another width shifts every line: the last text is not copied from (render - 1 matches none).
      if (timestamp.length !== lastStamp.length) render++;
      render++;
      stamp = Buffer.from(timestamp, "latin1");
      lastStamp = timestamp;
      out = Buffer.allocUnsafe(Math.max(last.length + 65_536, 65_536));
      size = 0;
      return writer;
    },
    /** One family's lines over the cgroups, in their order, each marked as written by this render. */
    family(name: string, cgroups: Cgroup[], value: (c: Cgroup, emit: Emit) => void): Line[] {
      const lines: Line[] = [];
      for (let i = 0; i < cgroups.length; i++) {
        const c = cgroups[i]!;
        const entry = current[i]!;
        value(c, (v, extra) => {
          const at = entry.next++;
          const line = entry.lines[at];
          if (line && line.name === name && line.extra === extra && Object.is(line.value, v)) {
            lines.push(line);
            return;
          }
          let labels = entry.labels.get(extra);
          if (labels === undefined)
            entry.labels.set(extra, (labels = labelText(extra ? { ...c.labels, ...extra } : c.labels)));
          const fresh = {
            name,
            extra,
            value: v,
            head: `${name}${labels} ${formatValue(v)}`,
            render: -1,
            at: 0,
            bytes: 0,
          };
          entry.lines[at] = fresh;
          lines.push(fresh);
        });
      }
      return lines;
    },
    /** Ends a render: cgroups it did not write go; returns its text. */
    end(): Uint8Array<ArrayBuffer> {
      flush();
      kept = used;
      used = new Map();
      current = [];
      last = out.subarray(0, size);
      return last;
    },
  };
}
