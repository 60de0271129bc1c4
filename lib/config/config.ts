// The kubelet's effective configuration: defaults < config file < flags, then the whole of it
// checked at once (values, cross-field limits, eviction thresholds, the etcd client file), before
// anything starts.
// The composition root (lib/assembly.ts) maps the settings onto each part's own options type.
// Folder config/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import { parseCPUSet } from "../node/cm/cpuset.ts";
import { DEFAULT_CONFIG, type KubeletConfig } from "./config-types.ts";
import { KubeletError } from "../api/types.ts";
import { readConfigFile, type ConfigNote } from "./config-file.ts";
import { readEtcdConfig } from "./etcd-config.ts";
import { FLAGS } from "./flags.ts";
import { formatDuration, parseDuration } from "../api/duration.ts";
import { parseValue } from "./values.ts";
// The thresholds' parser is pure (api/ only) and lives with eviction; checking them here is what makes
// a bad --eviction_hard an error of the config, not of a half-started kubelet.
import { parseThresholds } from "../node/eviction/eviction-thresholds.ts";

export type Origin = "default" | "file" | "flag";

export interface ResolvedConfig {
  config: KubeletConfig;
  origins: Record<keyof KubeletConfig, Origin>;
  /** Config file fields accepted but not applicable here, reported at start-up and by print-config. */
  notApplicable: ConfigNote[];
  /** For values from the file: the field that set them (`staticPodPath`). */
  fileFields: Partial<Record<keyof KubeletConfig, string>>;
}

/** A config with errors: every one of them, one line each, in `message` and `problems`. */
export class ConfigError extends KubeletError {
  constructor(
    code: string,
    readonly problems: string[],
  ) {
    super(code, problems.join("\n"));
  }
}

/**
 * defaults < config file < flags; `flags` holds raw command-line values by config key. The whole config
 * is checked: a ConfigError lists every problem (the file's fields, values, cross-field limits) at once.
 */
export function resolveConfig(
  flags: Partial<Record<keyof KubeletConfig, unknown>>,
  configFile?: string,
): ResolvedConfig {
  const config = structuredClone(DEFAULT_CONFIG);
  const origins = Object.fromEntries(Object.keys(DEFAULT_CONFIG).map((k) => [k, "default"])) as Record<
    keyof KubeletConfig,
    Origin
  >;
  const problems: Array<{ code: string; message: string }> = [];
  const problem = (code: string, message: string) => void problems.push({ code, message });
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
        origins[key] = origin;
      } catch (error) {
        const message = (error as Error).message;
        const field = fields[key];
        problem(
          (error as KubeletError).code ?? "InvalidValue",
          `${where}${field ? message.replace(`for --${spec.flag}:`, `for ${field}:`) : message}`,
        );
      }
    }
  };
  let notApplicable: ConfigNote[] = [];
  let fileFields: ResolvedConfig["fileFields"] = {};
  if (configFile) {
    const file = readConfigFile(configFile);
    ({ notApplicable, fields: fileFields } = file);
    for (const message of file.errors) problem("InvalidConfigFile", message);
    apply(file.values, "file", `--config_file "${configFile}": `, file.fields);
    config.configFile = configFile;
    origins.configFile = "flag";
  }
  apply(flags, "flag", "");
  if (config.etcdServers.length > 0 && config.etcdConfig)
    problem("ExclusiveFlags", "--etcd_servers and --etcd_config are mutually exclusive: give one of them");
  for (const message of checkConfig(config)) problem("InvalidValue", message);
  if (problems.length)
    throw new ConfigError(
      problems.length === 1 ? problems[0]!.code : "InvalidConfig",
      problems.map((p) => p.message),
    );
  return { config, origins, notApplicable, fileFields };
}

/** Cross-field checks, with the kubelet's own limits: one message per problem. */
function checkConfig(config: KubeletConfig): string[] {
  const problems: string[] = [];
  const invalid = (message: string) => void problems.push(message);
  if (config.nodeLeaseDuration < 1000 || config.nodeLeaseDuration % 1000 !== 0)
    invalid(
      `--node_lease_duration "${formatDuration(config.nodeLeaseDuration)}": etcd leases are whole seconds, at least 1s`,
    );
  if (config.nodeStatusUpdateFrequency <= 0 || config.nodeStatusUpdateFrequency >= config.nodeLeaseDuration)
    invalid(
      `--node_status_update_frequency "${formatDuration(config.nodeStatusUpdateFrequency)}" must be above 0 and below --node_lease_duration (${formatDuration(config.nodeLeaseDuration)}), or the lease expires between renewals`,
    );
  try {
    parseCPUSet(config.reservedCpus);
  } catch (error) {
    invalid(
      `--reserved_cpus "${config.reservedCpus}" (reservedSystemCPUs): ${(error as Error).message}; give CPUs as 0,1 or 0-1`,
    );
  }
  if (config.imageGcLowThreshold > config.imageGcHighThreshold)
    invalid(
      `--image_gc_low_threshold (${config.imageGcLowThreshold}) must not be above --image_gc_high_threshold (${config.imageGcHighThreshold})`,
    );
  if (config.cpuCfsQuotaPeriod < 1 || config.cpuCfsQuotaPeriod > 1000)
    invalid(`--cpu_cfs_quota_period: must be between 1ms and 1s, got ${formatDuration(config.cpuCfsQuotaPeriod)}`);
  if (config.enforceNodeAllocatable.includes("none") && config.enforceNodeAllocatable.length > 1)
    invalid('--enforce_node_allocatable: "none" cannot be combined with other values');
  if (config.enforceNodeAllocatable.includes("pods") && !config.cgroupsPerQos)
    invalid(
      "--enforce_node_allocatable=pods needs --cgroups_per_qos=true (the kubepods cgroup is what it bounds): set enforceNodeAllocatable to none or enable cgroupsPerQOS",
    );
  if (config.imagePullProgressDeadline <= 0)
    invalid(
      `--image_pull_progress_deadline: must be positive, got ${formatDuration(config.imagePullProgressDeadline)} (a pull with no progress for this long is cancelled)`,
    );
  if (config.serializeImagePulls && config.maxParallelImagePulls > 1)
    invalid("--max_parallel_image_pulls needs --serialize_image_pulls=false");
  // Bun.serve counts its idle timeout in whole seconds, at most 255.
  if (config.httpIdleTimeout % 1000 !== 0 || config.httpIdleTimeout > 255_000)
    invalid(
      `--http_idle_timeout "${formatDuration(config.httpIdleTimeout)}": must be whole seconds, at most 255s (0 = never close)`,
    );
  if (!config.tlsCertFile !== !config.tlsPrivateKeyFile)
    invalid(
      `--tls_cert_file and --tls_private_key_file go together: give both${config.clientCaFile ? ", or neither for a self-signed certificate under --cert_dir" : ""}`,
    );
  if (config.podPidsLimit < -1 || config.podPidsLimit === 0)
    invalid(`--pod_pids_limit: must be -1 (unlimited) or positive, got ${config.podPidsLimit}`);
  for (const [name, list] of [
    ["host_network_sources", config.hostNetworkSources],
    ["host_pid_sources", config.hostPidSources],
    ["host_ipc_sources", config.hostIpcSources],
    ["trusted_sources", config.trustedSources],
  ] as const) {
    const unknown = list.filter((s) => !["*", "file", "url", "etcd", "http"].includes(s));
    if (unknown.length) invalid(`--${name}: unknown source ${unknown.join(", ")}: use file, url, etcd, http or *`);
  }
  // The Go kubelet's validation: one way of configuring node shutdown at a time.
  if (
    config.shutdownGracePeriodByPodPriority.length > 0 &&
    (config.shutdownGracePeriod > 0 || config.shutdownGracePeriodCriticalPods > 0)
  )
    invalid(
      "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time",
    );
  if (config.shutdownGracePeriodCriticalPods > config.shutdownGracePeriod)
    invalid(
      `--shutdown_grace_period_critical_pods (shutdownGracePeriodCriticalPods, ${formatDuration(config.shutdownGracePeriodCriticalPods)}) must be <= --shutdown_grace_period (shutdownGracePeriod, ${formatDuration(config.shutdownGracePeriod)})`,
    );
  problems.push(...checkNodeResourceSettings(config));
  if (config.etcdConfig && config.etcdServers.length === 0)
    try {
      readEtcdConfig(config.etcdConfig);
    } catch (error) {
      invalid((error as Error).message);
    }
  try {
    parseThresholds(
      { hard: config.evictionHard, soft: config.evictionSoft, softGracePeriod: config.evictionSoftGracePeriod },
      parseDuration,
    );
  } catch (error) {
    invalid((error as Error).message);
  }
  return problems;
}

/** The Go kubelet's checks of the local storage, image age, back-off and memory QoS settings (issue 38). */
function checkNodeResourceSettings(config: KubeletConfig): string[] {
  const problems: string[] = [];
  const restart = config.maxContainerRestartPeriod;
  if (restart < 1000 || restart > 300_000)
    problems.push(
      `invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: ${restart / 1000} seconds) must be set between 1s and 300s (--max_container_restart_period)`,
    );
  if (config.imageMaximumGcAge > 0 && config.imageMaximumGcAge <= config.minimumImageTtlDuration)
    problems.push(
      `invalid configuration: imageMaximumGCAge ${formatDuration(config.imageMaximumGcAge)} must be greater than imageMinimumGCAge ${formatDuration(config.minimumImageTtlDuration)} (--image_maximum_gc_age, --minimum_image_ttl_duration)`,
    );
  if (!(config.memoryThrottlingFactor > 0 && config.memoryThrottlingFactor <= 1))
    problems.push(
      `invalid configuration: memoryThrottlingFactor ${config.memoryThrottlingFactor} must be greater than 0 and less than or equal to 1.0 (--memory_throttling_factor)`,
    );
  for (const [gate, value] of Object.entries(config.featureGates))
    if (value !== "true" && value !== "false")
      problems.push(`--feature_gates: ${gate}=${value}: a feature gate is true or false, as in MemoryQoS=true`);
  return problems;
}
