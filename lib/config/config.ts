// Layer config/: the flag table, the config file, precedence and print-config. Imports api/ only;
// the composition root (lib/kubelet.ts) maps the settings onto each part's own options.
//
// The kubelet's configuration: the flag table, Go-style value parsing, the YAML config file,
// precedence (defaults < config file < flags) and print-config.
import { readFileSync } from "node:fs";
import { DEFAULT_CONFIG, type KubeletConfig } from "./config-types.ts";
import { parseYaml, stringifyYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";
import {
  closestName,
  configurationField,
  fieldNamesUnder,
  isZeroValue,
  KUBELET_CONFIGURATION,
  typeMismatch,
} from "./kubelet-configuration.ts";

export { DEFAULT_CONFIG, type KubeletConfig };

export type ValueType =
  | "string"
  | "bool"
  | "uint"
  | "int"
  | "percent"
  | "float"
  | "duration"
  | "list"
  | "headers"
  | "map"
  | "thresholds"
  | "logformat"
  | "runtime";

/** One flag: its snake_case name (the 2014 spelling), its config key and how its value parses. */
export interface FlagSpec {
  flag: string;
  key: keyof KubeletConfig;
  type: ValueType;
  description: string;
  short?: string;
  /** The only values accepted (an enum such as cgroup_driver); "" among them = the default may be written out. */
  choices?: string[];
}

/** Every configuration flag, in the order `--help` lists them. */
export const FLAGS: FlagSpec[] = [
  {
    flag: "config",
    key: "config",
    type: "string",
    short: "c",
    description: "Path to the config file or directory of files (pod manifests)",
  },
  {
    flag: "sync_frequency",
    key: "syncFrequency",
    type: "duration",
    description: "Max period between synchronizing running containers and config",
  },
  {
    flag: "file_check_frequency",
    key: "fileCheckFrequency",
    type: "duration",
    description: "Duration between checking config files for new data",
  },
  {
    flag: "http_check_frequency",
    key: "httpCheckFrequency",
    type: "duration",
    description: "Duration between checking http for new data",
  },
  {
    flag: "manifest_url",
    key: "manifestUrl",
    type: "string",
    description: "URL for accessing the container manifest",
  },
  {
    flag: "manifest_url_header",
    key: "manifestUrlHeader",
    type: "headers",
    description: "'Key: Value' header sent with --manifest_url (repeatable)",
  },
  { flag: "enable_server", key: "enableServer", type: "bool", description: "Enable the info server" },
  {
    flag: "address",
    key: "address",
    type: "string",
    description: "The IP address for the info server to serve on",
  },
  {
    flag: "port",
    key: "port",
    type: "uint",
    description: "The port for the info server to serve on",
  },
  {
    flag: "read_only_port",
    key: "readOnlyPort",
    type: "uint",
    description: "A read-only port for the info server (0 = off)",
  },
  {
    flag: "hostname_override",
    key: "hostnameOverride",
    type: "string",
    description: "If non-empty, use this string as identification instead of the actual hostname",
  },
  {
    flag: "network_container_image",
    key: "networkContainerImage",
    type: "string",
    description: "The image that network containers in each pod will use",
  },
  {
    flag: "pod_network_mode",
    key: "podNetworkMode",
    type: "string",
    description: "Docker network of pod infra containers: bridge, none, or a network name",
  },
  {
    flag: "docker_endpoint",
    key: "dockerEndpoint",
    type: "string",
    description: "If non-empty, use this for the docker endpoint to communicate with",
  },
  {
    flag: "container_runtime",
    key: "containerRuntime",
    type: "runtime",
    description:
      "The container runtime to use: docker (built in) or remote (a CRI runtime at --container_runtime_endpoint)",
  },
  {
    flag: "container_runtime_endpoint",
    key: "containerRuntimeEndpoint",
    type: "string",
    description:
      "The endpoint of the remote runtime service (unix socket), e.g. unix:///run/containerd/containerd.sock",
  },
  {
    flag: "image_service_endpoint",
    key: "imageServiceEndpoint",
    type: "string",
    description: "The endpoint of the remote image service; defaults to --container_runtime_endpoint",
  },
  {
    flag: "runtime_request_timeout",
    key: "runtimeRequestTimeout",
    type: "duration",
    description: "Timeout of every runtime request except long-running ones (pull, logs, exec)",
  },
  {
    flag: "pod_logs_dir",
    key: "podLogsDir",
    type: "string",
    description: "Where a remote runtime writes container logs (<dir>/<namespace>_<pod>_<uid>/<container>/<n>.log)",
  },
  {
    flag: "etcd_servers",
    key: "etcdServers",
    type: "list",
    description: "List of etcd servers to watch (http://ip:port), comma separated or repeated",
  },
  {
    flag: "etcd_config",
    key: "etcdConfig",
    type: "string",
    description: "The config file for the etcd client. Mutually exclusive with --etcd_servers",
  },
  {
    flag: "root_dir",
    key: "rootDir",
    type: "string",
    description: "Directory path for managing kubelet files (volume mounts, etc)",
  },
  {
    flag: "allow_privileged",
    key: "allowPrivileged",
    type: "bool",
    description: "If true, allow containers to request privileged mode",
  },
  {
    flag: "allow_sensitive_host_paths",
    key: "allowSensitiveHostPaths",
    type: "bool",
    description: "If true, allow hostPath volumes at /, /etc, /proc, /sys, /dev or the Docker socket",
  },
  {
    flag: "max_manifest_bytes",
    key: "maxManifestBytes",
    type: "uint",
    description: "Largest manifest document read from a file, URL, etcd or an HTTP push, in bytes",
  },
  {
    flag: "registry_qps",
    key: "registryQps",
    type: "float",
    description: "If > 0, limit registry pull QPS to this value; 0 = unlimited",
  },
  {
    flag: "registry_burst",
    key: "registryBurst",
    type: "uint",
    description: "Maximum size of bursty pulls (only with --registry_qps > 0)",
  },
  {
    flag: "runonce",
    key: "runonce",
    type: "bool",
    description: "If true, exit after spawning pods from local manifests or remote urls",
  },
  {
    flag: "runonce_timeout",
    key: "runonceTimeout",
    type: "duration",
    description: "How long runonce waits for every pod to run",
  },
  {
    flag: "stop_timeout",
    key: "stopTimeout",
    type: "duration",
    description: "How long `run` may take to stop after SIGTERM/SIGINT; past it the kubelet exits anyway, with code 3",
  },
  {
    flag: "http_idle_timeout",
    key: "httpIdleTimeout",
    type: "duration",
    description:
      "How long the info, read-only and healthz servers keep open a connection with no request in flight (a kept-alive one, between requests); at most 255s, 0 = never close",
  },
  {
    flag: "enable_debugging_handlers",
    key: "enableDebuggingHandlers",
    type: "bool",
    description: "Enables server endpoints for log collection and local running of containers and commands",
  },
  {
    flag: "register_node",
    key: "registerNode",
    type: "bool",
    description: "With etcd: write the node record, its pods' statuses and events to etcd (fleet mode)",
  },
  {
    flag: "node_lease_duration",
    key: "nodeLeaseDuration",
    type: "duration",
    description: "TTL of the etcd lease the node's records live on; they vanish this long after the kubelet dies",
  },
  {
    flag: "node_status_update_frequency",
    key: "nodeStatusUpdateFrequency",
    type: "duration",
    description: "How often the node's lease is renewed and its status computed",
  },
  {
    flag: "node_status_report_frequency",
    key: "nodeStatusReportFrequency",
    type: "duration",
    description: "How often the node record is rewritten when nothing changed (its heartbeat times)",
  },
  {
    flag: "maximum_dead_containers_per_container",
    key: "maximumDeadContainersPerContainer",
    type: "uint",
    description: "Dead instances kept per container",
  },
  {
    flag: "auth_token_file",
    key: "authTokenFile",
    type: "string",
    description: "Bearer tokens (one per line) accepted by the info server",
  },
  {
    flag: "tls_cert_file",
    key: "tlsCertFile",
    type: "string",
    description: "TLS certificate of the info server",
  },
  {
    flag: "tls_private_key_file",
    key: "tlsPrivateKeyFile",
    type: "string",
    description: "TLS private key of the info server",
  },
  {
    flag: "client_ca_file",
    key: "clientCaFile",
    type: "string",
    description: "CA bundle for verifying client certificates",
  },
  {
    flag: "anonymous_auth",
    key: "anonymousAuth",
    type: "bool",
    description: "Allow anonymous requests to the protected routes (false: only a token or client certificate)",
  },
  {
    flag: "authorization_mode",
    key: "authorizationMode",
    type: "string",
    choices: ["AlwaysAllow", "Webhook"],
    description: "AlwaysAllow, or Webhook (needs an API server: every protected route then requires credentials)",
  },
  {
    flag: "healthz_port",
    key: "healthzPort",
    type: "uint",
    description: "Port of the plain /healthz listener (0 = off)",
  },
  {
    flag: "healthz_bind_address",
    key: "healthzBindAddress",
    type: "string",
    description: "Address of the /healthz listener",
  },
  {
    flag: "cluster_dns",
    key: "clusterDns",
    type: "list",
    description: "DNS server addresses for pods with dnsPolicy ClusterFirst (comma separated)",
  },
  {
    flag: "cluster_domain",
    key: "clusterDomain",
    type: "string",
    description: "Cluster DNS domain: pods search <ns>.svc.<domain>, svc.<domain>, <domain>",
  },
  {
    flag: "resolv_conf",
    key: "resolvConf",
    type: "string",
    description: 'Resolver configuration used as the basis of pods\' DNS ("" = none)',
  },
  {
    flag: "cgroups_per_qos",
    key: "cgroupsPerQos",
    type: "bool",
    description: "Run pods under kubepods/{burstable,besteffort}/pod<uid> cgroups",
  },
  {
    flag: "cgroup_root",
    key: "cgroupRoot",
    type: "string",
    description: "Root cgroup of the pods' hierarchy",
  },
  {
    flag: "cgroup_driver",
    key: "cgroupDriver",
    type: "string",
    choices: ["", "cgroupfs", "systemd"],
    description:
      "cgroupfs or systemd, as the container runtime's (\"\" = the runtime's; a different one refuses to start)",
  },
  {
    flag: "kube_reserved",
    key: "kubeReserved",
    type: "map",
    description: "Resources reserved for Kubernetes daemons (cpu=100m,memory=256Mi)",
  },
  {
    flag: "system_reserved",
    key: "systemReserved",
    type: "map",
    description: "Resources reserved for the operating system (cpu=100m,memory=256Mi)",
  },
  {
    flag: "eviction_hard",
    key: "evictionHard",
    type: "thresholds",
    description:
      "Hard eviction thresholds (memory.available<100Mi,nodefs.available<10%); memory.available also bounds node allocatable",
  },
  {
    flag: "eviction_soft",
    key: "evictionSoft",
    type: "thresholds",
    description: "Soft eviction thresholds (need --eviction_soft_grace_period), e.g. memory.available<300Mi",
  },
  {
    flag: "eviction_soft_grace_period",
    key: "evictionSoftGracePeriod",
    type: "map",
    description: "How long a soft threshold must hold before eviction, e.g. memory.available=1m30s",
  },
  {
    flag: "eviction_pressure_transition_period",
    key: "evictionPressureTransitionPeriod",
    type: "duration",
    description: "How long a pressure condition stays set after its threshold was last met",
  },
  {
    flag: "maximum_dead_containers",
    key: "maximumDeadContainers",
    type: "int",
    description: "Dead containers kept on the node in all (-1 = no limit; the oldest go first)",
  },
  {
    flag: "minimum_container_ttl_duration",
    key: "minimumContainerTtlDuration",
    type: "duration",
    description: "Minimum age of a dead container before it may be garbage collected",
  },
  {
    flag: "volume_stats_agg_period",
    key: "volumeStatsAggPeriod",
    type: "duration",
    description: "How often /stats/summary measures disk usage (volumes, container layers, logs)",
  },
  {
    flag: "image_gc_high_threshold",
    key: "imageGcHighThreshold",
    type: "percent",
    description: "Disk usage (percent) of the image filesystem above which image garbage collection runs",
  },
  {
    flag: "image_gc_low_threshold",
    key: "imageGcLowThreshold",
    type: "percent",
    description: "Disk usage (percent) image garbage collection frees down to",
  },
  {
    flag: "minimum_image_ttl_duration",
    key: "minimumImageTtlDuration",
    type: "duration",
    description: "Minimum age of an unused image before it may be garbage collected",
  },
  {
    flag: "enforce_node_allocatable",
    key: "enforceNodeAllocatable",
    type: "list",
    description: "pods (bound the kubepods cgroup by node allocatable) or none",
  },
  {
    flag: "pod_pids_limit",
    key: "podPidsLimit",
    type: "int",
    description: "Maximum number of processes in any pod (-1 = unlimited)",
  },
  {
    flag: "cpu_cfs_quota",
    key: "cpuCfsQuota",
    type: "bool",
    description: "Enforce CPU limits with CFS quota",
  },
  {
    flag: "cpu_cfs_quota_period",
    key: "cpuCfsQuotaPeriod",
    type: "duration",
    description: "CFS quota period (1ms to 1s)",
  },
  {
    flag: "max_pods",
    key: "maxPods",
    type: "uint",
    description: "Pods beyond this number are rejected (the newest first)",
  },
  {
    flag: "serialize_image_pulls",
    key: "serializeImagePulls",
    type: "bool",
    description: "Pull one image at a time",
  },
  {
    flag: "max_parallel_image_pulls",
    key: "maxParallelImagePulls",
    type: "uint",
    description: "Most image pulls at once when not serialized (0 = no limit)",
  },
  {
    flag: "image_pull_progress_deadline",
    key: "imagePullProgressDeadline",
    type: "duration",
    description: "Cancel a pull that makes no progress for this long",
  },
  {
    flag: "lock_file",
    key: "lockFile",
    type: "string",
    description: "Lock file held while running: a second kubelet on it exits naming the holder",
  },
  {
    flag: "exit_on_lock_contention",
    key: "exitOnLockContention",
    type: "bool",
    description: "Release --lock_file and exit when another kubelet asks for it",
  },
  {
    flag: "host_network_sources",
    key: "hostNetworkSources",
    type: "list",
    description: "Sources allowed to run pods with hostNetwork (file, url, etcd, http; * = all)",
  },
  {
    flag: "host_pid_sources",
    key: "hostPidSources",
    type: "list",
    description: "Sources allowed to run pods with hostPID (* = all)",
  },
  {
    flag: "host_ipc_sources",
    key: "hostIpcSources",
    type: "list",
    description: "Sources allowed to run pods with hostIPC (* = all)",
  },
  {
    flag: "container_log_max_size",
    key: "containerLogMaxSize",
    type: "string",
    description: "Size (a quantity such as 10Mi) at which a container's log file is rotated",
  },
  {
    flag: "container_log_max_files",
    key: "containerLogMaxFiles",
    type: "uint",
    description: "Log files kept per container, the current one included (at least 2)",
  },
  {
    flag: "container_log_max_workers",
    key: "containerLogMaxWorkers",
    type: "uint",
    description: "Containers whose logs are checked and rotated at once (CRI runtimes)",
  },
  {
    flag: "container_log_monitor_interval",
    key: "containerLogMonitorInterval",
    type: "duration",
    description: "How often container log sizes are checked (CRI runtimes; at least 3s)",
  },
  {
    flag: "fail_swap_on",
    key: "failSwapOn",
    type: "bool",
    description: "Refuse to start while swap is on (/proc/swaps lists a device)",
  },
  {
    flag: "eviction_minimum_reclaim",
    key: "evictionMinimumReclaim",
    type: "map",
    description: "What eviction frees beyond a threshold before it stops, e.g. nodefs.available=500Mi",
  },
  {
    flag: "eviction_max_pod_grace_period",
    key: "evictionMaxPodGracePeriod",
    type: "uint",
    description: "Most seconds a pod evicted by a soft threshold gets to stop (0 = its own grace period)",
  },
  {
    flag: "pods_per_core",
    key: "podsPerCore",
    type: "uint",
    description: "Pods per CPU core at most, within --max_pods (0 = no such bound)",
  },
  {
    flag: "shutdown_grace_period",
    key: "shutdownGracePeriod",
    type: "duration",
    description: "Time the pods get to stop when the node shuts down (systemd-logind delay lock; 0 = not watched)",
  },
  {
    flag: "shutdown_grace_period_critical_pods",
    key: "shutdownGracePeriodCriticalPods",
    type: "duration",
    description: "The part of --shutdown_grace_period kept for critical pods, stopped after the others",
  },
  {
    flag: "log_format",
    key: "logFormat",
    type: "logformat",
    description: "Log format: text or json (default: text on a TTY, else json)",
  },
  {
    flag: "verbosity",
    key: "verbosity",
    type: "uint",
    short: "v",
    description: "Log verbosity: 0 warnings, 1 info, 2 debug",
  },
];

export type Origin = "default" | "file" | "flag";

export interface ResolvedConfig {
  config: KubeletConfig;
  origins: Record<keyof KubeletConfig, Origin>;
  /** Config file fields accepted but not applicable here, reported at start-up and by print-config. */
  notApplicable: ConfigNote[];
  /** For values from the file: the field that set them (`staticPodPath`). */
  fileFields: Partial<Record<keyof KubeletConfig, string>>;
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration ("1m30s", "500ms", "0"), in milliseconds. */
export function parseDuration(text: string): number {
  const input = String(text).trim();
  if (input === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  const sign = input.startsWith("-") ? -1 : 1;
  const body = input.replace(/^[-+]/, "");
  for (let match = re.exec(body); match; match = re.exec(body)) {
    total += Number(match[1]) * UNITS[match[2]!]!;
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== body.length) {
    throw new KubeletError("InvalidValue", `invalid duration "${text}": use Go syntax such as 500ms, 10s, 1m30s or 1h`);
  }
  return sign * total;
}

/** Milliseconds as Go prints a duration: 10s, 1m30s, 500ms, 0s. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  let rest = ms / 1000;
  let out = "";
  const hours = Math.floor(rest / 3600);
  if (hours) out += `${hours}h`;
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  if (minutes || (hours && rest)) out += `${minutes}m`;
  rest -= minutes * 60;
  if (rest || !out) out += `${Number(rest.toFixed(3))}s`;
  return out;
}

/** Parses one raw value (from the command line or the config file) for a flag. */
export function parseValue(spec: FlagSpec, raw: unknown): KubeletConfig[keyof KubeletConfig] {
  const bad = (why: string) =>
    new KubeletError("InvalidValue", `invalid value ${JSON.stringify(raw)} for --${spec.flag}: ${why}`);
  const values = Array.isArray(raw) ? raw : [raw];
  const last = values[values.length - 1];
  switch (spec.type) {
    case "string": {
      if (typeof last === "object") throw bad("expected a string");
      const text = String(last ?? "");
      if (spec.choices && !spec.choices.includes(text))
        throw bad(
          `expected one of ${spec.choices.filter(Boolean).join(", ")}${spec.choices.includes("") ? ' (or "" for the default)' : ""}`,
        );
      return text;
    }
    case "bool": {
      if (typeof last === "boolean") return last;
      const text = String(last);
      if (["1", "t", "T", "true", "TRUE", "True"].includes(text)) return true;
      if (["0", "f", "F", "false", "FALSE", "False"].includes(text)) return false;
      throw bad("expected true or false");
    }
    case "uint": {
      const n = typeof last === "number" ? last : /^\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n) || n < 0) throw bad("expected a non-negative integer");
      if (spec.key.toLowerCase().endsWith("port") && n > 65535) throw bad("a port is at most 65535");
      return n;
    }
    case "int": {
      const n = typeof last === "number" ? last : /^-?\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n)) throw bad("expected an integer");
      return n;
    }
    case "percent": {
      const n = typeof last === "number" ? last : /^\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n) || n < 0 || n > 100) throw bad("expected a percentage from 0 to 100");
      return n;
    }
    case "float": {
      const n = typeof last === "number" ? last : Number(String(last).trim() || NaN);
      if (!Number.isFinite(n) || n < 0) throw bad("expected a non-negative number");
      return n;
    }
    case "duration": {
      if (typeof last === "number" && last !== 0) throw bad("durations need a unit, e.g. 10s or 500ms");
      try {
        const ms = parseDuration(String(last));
        if (ms < 0) throw bad("must not be negative");
        return ms;
      } catch (error) {
        if ((error as KubeletError).code === "InvalidValue" && !(error as Error).message.startsWith("invalid value"))
          throw bad((error as Error).message);
        throw error;
      }
    }
    case "list":
      return values
        .flatMap((v) => String(v).split(","))
        .map((s) => s.trim())
        .filter(Boolean);
    case "headers": {
      if (values.length === 1 && typeof last === "object" && last !== null) {
        return Object.fromEntries(
          Object.entries(last as Record<string, unknown>).map(([k, v]) => [
            k,
            (Array.isArray(v) ? v : [v]).map(String),
          ]),
        );
      }
      const headers: Record<string, string[]> = {};
      for (const value of values) {
        const text = String(value);
        const colon = text.indexOf(":");
        if (colon <= 0) throw bad('expected "Key: Value"');
        (headers[text.slice(0, colon).trim()] ??= []).push(text.slice(colon + 1).trim());
      }
      return headers;
    }
    case "map":
    case "thresholds": {
      // The file gives a mapping; the command line "k=v,k2=v2" (thresholds: "memory.available<100Mi").
      if (values.length === 1 && typeof last === "object" && last !== null) {
        const entries = Object.entries(last as Record<string, unknown>);
        for (const [k, v] of entries) if (typeof v !== "string") throw bad(`${k}: expected a string such as "100Mi"`);
        return Object.fromEntries(entries) as Record<string, string>;
      }
      const separator = spec.type === "map" ? "=" : "<";
      const out: Record<string, string> = {};
      // The command-line parser hands an empty argument (`--eviction_hard ""`: none) over as 0.
      if (last === 0) return out;
      for (const pair of values
        .flatMap((v) => String(v).split(","))
        .map((p) => p.trim())
        .filter(Boolean)) {
        const at = pair.indexOf(separator);
        if (at <= 0)
          throw bad(spec.type === "map" ? 'expected "name=quantity" pairs' : 'expected "signal<quantity" pairs');
        out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
      }
      return out;
    }
    case "logformat":
      // "" is the default a written-out config file shows: text on a TTY, else json
      if (last !== "text" && last !== "json" && last !== "") throw bad("expected text or json");
      return last;
    case "runtime":
      if (last !== "docker" && last !== "remote") throw bad("expected docker or remote");
      return last;
  }
}

/** A field of the config file that is accepted but has no effect here, and why. */
export interface ConfigNote {
  field: string;
  why: string;
}

export interface ConfigFileValues {
  values: Partial<Record<keyof KubeletConfig, unknown>>;
  /** The file's name for each value, for error messages. */
  fields: Partial<Record<keyof KubeletConfig, string>>;
  notApplicable: ConfigNote[];
}

/**
 * Reads a config file: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) field names, or this
 * kubelet's flag names. Unknown fields (with the closest real name), wrong types and values that
 * cannot be honoured safely are errors naming the file and the field.
 */
export function readConfigFile(path: string): ConfigFileValues {
  const fail = (message: string) => new KubeletError("InvalidConfigFile", `--config_file "${path}": ${message}`);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new KubeletError("InvalidConfigFile", `cannot read --config_file "${path}": ${(error as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new KubeletError("InvalidConfigFile", `cannot parse --config_file "${path}": ${(error as Error).message}`);
  }
  const out: ConfigFileValues = { values: {}, fields: {}, notApplicable: [] };
  if (doc === null || doc === undefined) return out;
  if (typeof doc !== "object" || Array.isArray(doc)) throw fail("expected a mapping of settings");
  const { kind, apiVersion, ...fields } = doc as Record<string, unknown>;
  if (kind !== undefined && kind !== "KubeletConfiguration")
    throw fail(`kind: Unsupported value: "${kind}": supported values: "KubeletConfiguration"`);
  if (apiVersion !== undefined && !/^kubelet\.config\.k8s\.io\/v1(beta1)?$/.test(String(apiVersion)))
    throw fail(`apiVersion: Unsupported value: "${apiVersion}": supported values: "kubelet.config.k8s.io/v1beta1"`);
  const walk = (mapping: Record<string, unknown>, parent: string) => {
    for (const [name, value] of Object.entries(mapping)) {
      const fieldPath = parent ? `${parent}.${name}` : name;
      const row = configurationField(fieldPath);
      if (!row) {
        const spec = parent ? undefined : findFlag(name);
        if (spec) {
          out.values[spec.key] = value;
          out.fields[spec.key] = name;
          continue;
        }
        const guess = closestName(name, [...fieldNamesUnder(parent), ...(parent ? [] : FLAGS.map((f) => f.flag))]);
        throw fail(
          `unknown field "${fieldPath}"${guess ? ` (did you mean ${parent ? `${parent}.` : ""}${guess}?)` : ""}: settings are KubeletConfiguration fields (kubelet.config.k8s.io/v1beta1) or flag names such as sync_frequency`,
        );
      }
      const expected = typeMismatch(row.type, value);
      if (expected) throw fail(`${fieldPath}: expected ${expected}, got ${JSON.stringify(value)}`);
      if (value === null || value === undefined) continue;
      const refusal = row.refuse?.(value);
      if (refusal) throw fail(`${fieldPath}: ${refusal}`);
      if (row.type === "object") walk(value as Record<string, unknown>, fieldPath);
      else if (row.key) {
        if (!row.pointer && isZeroValue(value)) continue;
        out.values[row.key] = row.convert ? row.convert(value) : value;
        out.fields[row.key] = fieldPath;
      } else if (row.notApplicable && (row.pointer || !isZeroValue(value)))
        out.notApplicable.push({ field: fieldPath, why: row.notApplicable });
    }
  };
  walk(fields, "");
  return out;
}

/** The flag spec for a flag name in any spelling (`etcd_servers`, `etcd-servers`, `etcdServers`). */
export function findFlag(name: string): FlagSpec | undefined {
  const snake = name.replace(/-/g, "_");
  return FLAGS.find((f) => f.flag === snake || f.key === name);
}

/** defaults < config file < flags; `flags` holds raw command-line values by config key. */
export function resolveConfig(
  flags: Partial<Record<keyof KubeletConfig, unknown>>,
  configFile?: string,
): ResolvedConfig {
  const config = structuredClone(DEFAULT_CONFIG);
  const origins = Object.fromEntries(Object.keys(DEFAULT_CONFIG).map((k) => [k, "default"])) as Record<
    keyof KubeletConfig,
    Origin
  >;
  const apply = (
    values: Partial<Record<keyof KubeletConfig, unknown>>,
    origin: Origin,
    where: string,
    fields: Partial<Record<keyof KubeletConfig, string>> = {},
  ) => {
    for (const [key, raw] of Object.entries(values) as Array<[keyof KubeletConfig, unknown]>) {
      const spec = FLAGS.find((f) => f.key === key);
      if (!spec || raw === undefined) continue;
      try {
        (config as unknown as Record<string, unknown>)[key] = parseValue(spec, raw);
      } catch (error) {
        const message = (error as Error).message;
        const field = fields[key];
        throw new KubeletError(
          "InvalidValue",
          `${where}${field ? message.replace(`for --${spec.flag}:`, `for ${field}:`) : message}`,
        );
      }
      origins[key] = origin;
    }
  };
  let notApplicable: ConfigNote[] = [];
  let fileFields: ResolvedConfig["fileFields"] = {};
  if (configFile) {
    const file = readConfigFile(configFile);
    ({ notApplicable, fields: fileFields } = file);
    apply(file.values, "file", `--config_file "${configFile}": `, file.fields);
    config.configFile = configFile;
    origins.configFile = "flag";
  }
  apply(flags, "flag", "");
  if (config.etcdServers.length > 0 && config.etcdConfig) {
    throw new KubeletError(
      "ExclusiveFlags",
      "--etcd_servers and --etcd_config are mutually exclusive: give one of them",
    );
  }
  checkConfig(config);
  return { config, origins, notApplicable, fileFields };
}

/** Cross-field checks, with the kubelet's own limits. */
function checkConfig(config: KubeletConfig): void {
  const invalid = (message: string) => new KubeletError("InvalidValue", message);
  if (config.nodeLeaseDuration < 1000 || config.nodeLeaseDuration % 1000 !== 0)
    throw invalid(
      `--node_lease_duration "${formatDuration(config.nodeLeaseDuration)}": etcd leases are whole seconds, at least 1s`,
    );
  if (config.nodeStatusUpdateFrequency <= 0 || config.nodeStatusUpdateFrequency >= config.nodeLeaseDuration)
    throw invalid(
      `--node_status_update_frequency "${formatDuration(config.nodeStatusUpdateFrequency)}" must be above 0 and below --node_lease_duration (${formatDuration(config.nodeLeaseDuration)}), or the lease expires between renewals`,
    );
  if (config.imageGcLowThreshold > config.imageGcHighThreshold)
    throw invalid(
      `--image_gc_low_threshold (${config.imageGcLowThreshold}) must not be above --image_gc_high_threshold (${config.imageGcHighThreshold})`,
    );
  if (config.cpuCfsQuotaPeriod < 1 || config.cpuCfsQuotaPeriod > 1000)
    throw invalid(
      `--cpu_cfs_quota_period: must be between 1ms and 1s, got ${formatDuration(config.cpuCfsQuotaPeriod)}`,
    );
  if (config.enforceNodeAllocatable.includes("none") && config.enforceNodeAllocatable.length > 1)
    throw invalid('--enforce_node_allocatable: "none" cannot be combined with other values');
  if (config.enforceNodeAllocatable.includes("pods") && !config.cgroupsPerQos)
    throw invalid(
      "--enforce_node_allocatable=pods needs --cgroups_per_qos=true (the kubepods cgroup is what it bounds): set enforceNodeAllocatable to none or enable cgroupsPerQOS",
    );
  if (config.imagePullProgressDeadline <= 0)
    throw invalid(
      `--image_pull_progress_deadline: must be positive, got ${formatDuration(config.imagePullProgressDeadline)} (a pull with no progress for this long is cancelled)`,
    );
  if (config.serializeImagePulls && config.maxParallelImagePulls > 1)
    throw invalid("--max_parallel_image_pulls needs --serialize_image_pulls=false");
  // Bun.serve counts its idle timeout in whole seconds, at most 255.
  if (config.httpIdleTimeout % 1000 !== 0 || config.httpIdleTimeout > 255_000)
    throw invalid(
      `--http_idle_timeout "${formatDuration(config.httpIdleTimeout)}": must be whole seconds, at most 255s (0 = never close)`,
    );
  if (config.podPidsLimit < -1 || config.podPidsLimit === 0)
    throw invalid(`--pod_pids_limit: must be -1 (unlimited) or positive, got ${config.podPidsLimit}`);
  for (const [name, list] of [
    ["host_network_sources", config.hostNetworkSources],
    ["host_pid_sources", config.hostPidSources],
    ["host_ipc_sources", config.hostIpcSources],
  ] as const) {
    const unknown = list.filter((s) => !["*", "file", "url", "etcd", "http"].includes(s));
    if (unknown.length)
      throw invalid(`--${name}: unknown source ${unknown.join(", ")}: use file, url, etcd, http or *`);
  }
}

/** The effective configuration as snake_case YAML (or JSON), optionally marking each value's origin. */
export function printConfig(
  resolved: ResolvedConfig,
  options: { format: "yaml" | "json"; showOrigin: boolean },
): string {
  const origin = (key: keyof KubeletConfig) =>
    resolved.origins[key] === "file" && resolved.fileFields[key]
      ? `file (${resolved.fileFields[key]})`
      : resolved.origins[key];
  const entries = FLAGS.map((spec) => {
    const value = resolved.config[spec.key];
    return [spec.flag, spec.type === "duration" ? formatDuration(value as number) : value, origin(spec.key)] as const;
  });
  const values = Object.fromEntries(entries.map(([flag, value]) => [flag, value]));
  if (resolved.config.configFile) values.config_file = resolved.config.configFile;
  if (options.format === "json") {
    const body = options.showOrigin
      ? {
          config: values,
          origins: Object.fromEntries(entries.map(([flag, , from]) => [flag, from])),
          notApplicable: resolved.notApplicable,
        }
      : values;
    return JSON.stringify(body, null, 2) + "\n";
  }
  const notes = resolved.notApplicable.length
    ? [
        "# accepted from the config file but not applicable here:",
        ...resolved.notApplicable.map((n) => `#   ${n.field}: ${n.why}`),
      ].join("\n") + "\n"
    : "";
  if (!options.showOrigin) return stringifyYaml(values) + notes;
  return (
    entries
      .map(([flag, value, from]) => `${flag}: ${stringifyYaml(value, { flow: true }).trimEnd()}  # ${from}`)
      .join("\n") +
    "\n" +
    notes
  );
}

/**
 * The config file an installer writes (`print-config --commented`): every key with what it does,
 * its flag and KubeletConfiguration names, commented out at its default; keys set by a flag or
 * the config file are written out, so the file starts from the installer's choices.
 */
export function commentedConfigFile(resolved: ResolvedConfig): string {
  const lines = [
    "# kubelet configuration, read by `kubelet run --config_file <this file>`.",
    "# Keys are flag names (sync_frequency) or KubeletConfiguration names (syncFrequency); a flag given",
    "# on the command line wins over this file. Each commented line shows a setting at its default:",
    "# uncomment it to change it. `kubelet print-config --config_file <this file> --show-origin` checks it.",
  ];
  for (const spec of FLAGS) {
    const value = resolved.config[spec.key];
    const text = stringifyYaml(spec.type === "duration" ? formatDuration(value as number) : value, {
      flow: true,
    }).trimEnd();
    const fields = KUBELET_CONFIGURATION.filter((row) => row.key === spec.key).map((row) => row.path);
    const names = [`--${spec.flag}`, ...(spec.short ? [`-${spec.short}`] : []), ...fields];
    lines.push("", `# ${spec.description}. [${names.join(", ")}]`);
    lines.push(`${resolved.origins[spec.key] === "default" ? "# " : ""}${spec.flag}: ${text}`);
  }
  return lines.join("\n") + "\n";
}
