// Which flags of the flag table each subcommand uses, and the group (sources, runtime, server, node) --help
// lists each flag under. Every command accepts every flag of `run` (one command line serves them all);
// --help lists only the ones that change what the command does.
import { FLAGS, type FlagSpec } from "../config/flags.ts";

export type FlagGroup = "sources" | "runtime" | "server" | "node";

/** The groups in the order --help prints them, with their headings. */
export const FLAG_GROUPS: Array<{ group: FlagGroup; title: string }> = [
  { group: "sources", title: "Sources (where pods come from, and what a manifest may ask for)" },
  { group: "runtime", title: "Runtime (the container runtime, images, pod sandboxes, container logs)" },
  { group: "server", title: "Server (the info server, its authentication and the healthz endpoint)" },
  { group: "node", title: "Node (identity, state, resources, garbage collection, eviction, shutdown, logging)" },
];

const SOURCES = [
  "config",
  "file_check_frequency",
  "http_check_frequency",
  "manifest_url",
  "manifest_url_header",
  "etcd_servers",
  "etcd_config",
  "max_manifest_bytes",
  "strict_manifests",
  "allow_privileged",
  "allow_sensitive_host_paths",
  "host_network_sources",
  "host_pid_sources",
  "host_ipc_sources",
];

const RUNTIME = [
  "container_runtime",
  "container_runtime_endpoint",
  "image_service_endpoint",
  "docker_endpoint",
  "runtime_request_timeout",
  "runtime_handlers",
  "network_container_image",
  "pod_network_mode",
  "pod_logs_dir",
  "registry_qps",
  "registry_burst",
  "serialize_image_pulls",
  "max_parallel_image_pulls",
  "image_pull_progress_deadline",
  "seccomp_default",
  "allowed_unsafe_sysctls",
  "cluster_dns",
  "cluster_domain",
  "resolv_conf",
  "container_log_max_size",
  "container_log_max_files",
  "container_log_max_workers",
  "container_log_monitor_interval",
];

const SERVER = [
  "enable_server",
  "address",
  "port",
  "read_only_port",
  "http_idle_timeout",
  "enable_debugging_handlers",
  "auth_token_file",
  "tls_cert_file",
  "tls_private_key_file",
  "client_ca_file",
  "cert_dir",
  "anonymous_auth",
  "authorization_mode",
  "authorization_policy_file",
  "kubeconfig",
  "authentication_token_webhook",
  "authentication_token_webhook_cache_ttl",
  "authorization_webhook_cache_authorized_ttl",
  "authorization_webhook_cache_unauthorized_ttl",
  "admin_token_file",
  "healthz_port",
  "healthz_bind_address",
];

/** The flags of each group but node, which holds every other flag. */
export const GROUPED: Record<Exclude<FlagGroup, "node">, string[]> = {
  sources: SOURCES,
  runtime: RUNTIME,
  server: SERVER,
};

/** The group of a flag: listed above, or node. */
export function flagGroup(flag: string): FlagGroup {
  if (SOURCES.includes(flag)) return "sources";
  if (RUNTIME.includes(flag)) return "runtime";
  if (SERVER.includes(flag)) return "server";
  return "node";
}

/**
 * What only the long-running `run` does: poll the sources, sync periodically, report the node's status,
 * collect garbage, evict, rotate logs, hold the lock file, shut down gracefully.
 */
const RUN_LOOP = [
  "sync_frequency",
  "file_check_frequency",
  "http_check_frequency",
  "stop_timeout",
  "register_node",
  "node_lease_duration",
  "node_status_update_frequency",
  "node_status_report_frequency",
  "maximum_dead_containers_per_container",
  "maximum_dead_containers",
  "minimum_container_ttl_duration",
  "eviction_soft",
  "eviction_soft_grace_period",
  "eviction_pressure_transition_period",
  "eviction_minimum_reclaim",
  "eviction_max_pod_grace_period",
  "volume_stats_agg_period",
  "image_gc_high_threshold",
  "image_gc_low_threshold",
  "minimum_image_ttl_duration",
  "lock_file",
  "exit_on_lock_contention",
  "shutdown_grace_period",
  "shutdown_grace_period_critical_pods",
  "shutdown_grace_period_by_pod_priority",
  "container_log_max_size",
  "container_log_max_workers",
  "container_log_monitor_interval",
];

/** What opening the runtime reads (the Docker shim's sandbox image and network, the CRI endpoints). */
const RUNTIME_ACCESS = [
  "container_runtime",
  "container_runtime_endpoint",
  "image_service_endpoint",
  "docker_endpoint",
  "runtime_request_timeout",
  "network_container_image",
  "pod_network_mode",
  "container_log_max_files",
];

/** What reaching this node's own API reads: the server, its certificate and the admin token. */
const API_ACCESS = [
  "enable_server",
  "enable_debugging_handlers",
  "address",
  "port",
  "tls_cert_file",
  "client_ca_file",
  "cert_dir",
  "root_dir",
  "admin_token_file",
  "hostname_override",
];

const all = () => true;
const allBut =
  (...lists: string[][]) =>
  (spec: FlagSpec) =>
    !lists.some((list) => list.includes(spec.flag)) && flagGroup(spec.flag) !== "server";
const only =
  (...lists: string[][]) =>
  (spec: FlagSpec) =>
    lists.some((list) => list.includes(spec.flag));

/** For each subcommand, whether it uses a flag of the table. */
export const COMMAND_FLAGS: Record<string, (spec: FlagSpec) => boolean> = {
  run: all,
  "print-config": all,
  // Reads --config and --manifest_url once, starts the pods, waits: no server, no etcd, no run loop.
  runonce: allBut(RUN_LOOP, ["etcd_servers", "etcd_config", "runonce"]),
  // Reads every source once and the runtime's state; changes nothing, so no swap check and no waiting.
  plan: allBut(RUN_LOOP, ["runonce", "runonce_timeout", "fail_swap_on"]),
  // The runtime, the node's name (its pods only), the state on disk, the lock, the pod cgroups.
  reset: only(RUNTIME_ACCESS, [
    "hostname_override",
    "root_dir",
    "pod_logs_dir",
    "lock_file",
    "cgroup_root",
    "log_format",
    "verbosity",
  ]),
  validate: only(["allow_privileged", "allow_sensitive_host_paths", "max_manifest_bytes"]),
  fleet: only(["etcd_servers", "etcd_config"]),
  // Where this node's API listens, the certificate it serves and the admin token: what a client needs of it.
  kubeconfig: only(API_ACCESS),
  get: only(API_ACCESS),
  describe: only(API_ACCESS),
};

/** The flags of the table `command` uses, in table order. */
export function commandFlags(command: string): FlagSpec[] {
  const uses = COMMAND_FLAGS[command];
  return uses ? FLAGS.filter(uses) : [];
}
