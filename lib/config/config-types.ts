// The kubelet's effective configuration: one typed object after defaults < config file < flags.
// Parsing, precedence and printing live in config.ts; this file is only the shape.

/** Durations are milliseconds; flag names are the snake_case forms in comments. */
/** One entry of shutdownGracePeriodByPodPriority (KubeletConfiguration's ShutdownGracePeriodByPodPriority). */
export interface ShutdownGracePeriodByPodPriority {
  priority: number;
  shutdownGracePeriodSeconds: number;
}

/** One entry of reservedMemory (KubeletConfiguration's MemoryReservation): a NUMA node's reserved memory. */
export interface MemoryReservation {
  numaNode: number;
  /** Resource (memory, hugepages-2Mi, …) → quantity. */
  limits: Record<string, string>;
}

export interface KubeletConfig {
  /** config: manifest file or directory ("" = none). */
  config: string;
  /** sync_frequency */
  syncFrequency: number;
  /** file_check_frequency */
  fileCheckFrequency: number;
  /** http_check_frequency */
  httpCheckFrequency: number;
  /** manifest_url */
  manifestUrl: string;
  /** manifest_url_header: "Key: Value" pairs, repeatable; parsed to header name → values. */
  manifestUrlHeader: Record<string, string[]>;
  /** enable_server */
  enableServer: boolean;
  /** address */
  address: string;
  /** port */
  port: number;
  /** read_only_port (0 = off) */
  readOnlyPort: number;
  /** hostname_override */
  hostnameOverride: string;
  /** node_labels: the node's labels besides the well-known ones (kubernetes.io/hostname, os, arch): on the Node
   *  record, for nodeSelector and node affinity, and for `kubelet fleet apply --selector`. */
  nodeLabels: Record<string, string>;
  /** network_container_image */
  networkContainerImage: string;
  /** pod_network_mode: "bridge", "none", or a Docker network name. */
  podNetworkMode: string;
  /** docker_endpoint ("" = $DOCKER_HOST, then unix:///var/run/docker.sock) */
  dockerEndpoint: string;
  /** container_runtime: "docker" (the built-in shim), "remote" (a CRI runtime) or "fake" (in memory: a hollow node). */
  containerRuntime: "docker" | "remote" | "fake";
  /** container_runtime_endpoint (containerRuntimeEndpoint) */
  containerRuntimeEndpoint: string;
  /** image_service_endpoint ("" = the runtime endpoint) */
  imageServiceEndpoint: string;
  /** runtime_request_timeout, ms */
  runtimeRequestTimeout: number;
  /** pod_logs_dir (podLogsDir) */
  podLogsDir: string;
  /** etcd_servers */
  etcdServers: string[];
  /** etcd_config */
  etcdConfig: string;
  /** root_dir */
  rootDir: string;
  /** allow_privileged */
  allowPrivileged: boolean;
  /** allow_sensitive_host_paths */
  allowSensitiveHostPaths: boolean;
  /** trusted_sources: sources whose pods may mount beneath the node's system directories ("*" = all). */
  trustedSources: string[];
  /** max_manifest_bytes: the size limit of a manifest document from any source */
  maxManifestBytes: number;
  /** strict_manifests: an unknown field in a manifest rejects it (false: warned about and ignored) */
  strictManifests: boolean;
  /** registry_qps (0 = unlimited) */
  registryQps: number;
  /** registry_burst */
  registryBurst: number;
  /** runonce */
  runonce: boolean;
  /** runonce_timeout */
  runonceTimeout: number;
  /** stop_timeout: the hard deadline of a stop after SIGTERM/SIGINT. */
  stopTimeout: number;
  /** http_idle_timeout: how long the servers keep a connection with no request in flight, ms (0 = forever). */
  httpIdleTimeout: number;
  /** enable_debugging_handlers */
  enableDebuggingHandlers: boolean;
  /** register_node: fleet mode's writes to etcd. */
  registerNode: boolean;
  /** node_lease_duration */
  nodeLeaseDuration: number;
  /** node_status_update_frequency */
  nodeStatusUpdateFrequency: number;
  /** node_status_report_frequency */
  nodeStatusReportFrequency: number;
  /** maximum_dead_containers_per_container */
  maximumDeadContainersPerContainer: number;
  /** maximum_dead_containers (-1 = no limit) */
  maximumDeadContainers: number;
  /** minimum_container_ttl_duration */
  minimumContainerTtlDuration: number;
  /** image_gc_high_threshold / image_gc_low_threshold, percent of the image filesystem */
  imageGcHighThreshold: number;
  imageGcLowThreshold: number;
  /** minimum_image_ttl_duration */
  minimumImageTtlDuration: number;
  /** volume_stats_agg_period: period of the stats analyzer's disk walks */
  volumeStatsAggPeriod: number;
  /** eviction_soft: signal → threshold ("100Mi", "10%"); eviction_soft_grace_period: signal → duration */
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  /** eviction_pressure_transition_period */
  evictionPressureTransitionPeriod: number;
  /** auth_token_file: bearer tokens, one per line. */
  authTokenFile: string;
  /** tls_cert_file / tls_private_key_file / client_ca_file */
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  clientCaFile: string;
  /** cert_dir: where the self-signed serving certificate goes ("" = <root_dir>/pki). */
  certDir: string;
  /** log_format */
  logFormat: "text" | "json" | "";
  /** verbosity (-v) */
  verbosity: number;
  /** config_file: the YAML file the values above may come from. */
  configFile: string;
  /** anonymous_auth (authentication.anonymous.enabled): false closes every protected route to anonymous callers. */
  anonymousAuth: boolean;
  /** authorization_mode (authorization.mode): AlwaysAllow, Webhook (no API server here: fails closed), or RBAC (ours: a policy file). */
  authorizationMode: "AlwaysAllow" | "Webhook" | "RBAC";
  /** authorization_policy_file (authorization.policyFile, ours): the RBAC objects RBAC mode reads ("" = none). */
  authorizationPolicyFile: string;
  /** kubeconfig: the webhook server of authentication.webhook and authorization.mode Webhook ("" = none). */
  kubeconfig: string;
  /** authentication_token_webhook (authentication.webhook.enabled): unknown bearer tokens sent as TokenReviews. */
  authenticationTokenWebhook: boolean;
  /** authentication_token_webhook_cache_ttl (authentication.webhook.cacheTTL), ms. */
  authenticationTokenWebhookCacheTtl: number;
  /** authorization_webhook_cache_authorized_ttl (authorization.webhook.cacheAuthorizedTTL), ms. */
  authorizationWebhookCacheAuthorizedTtl: number;
  /** authorization_webhook_cache_unauthorized_ttl (authorization.webhook.cacheUnauthorizedTTL), ms. */
  authorizationWebhookCacheUnauthorizedTtl: number;
  /** admin_token_file: the generated admin token ("" = <root_dir>/admin-token). */
  adminTokenFile: string;
  /** healthz_port (0 = off) and healthz_bind_address: the plain health listener. */
  healthzPort: number;
  healthzBindAddress: string;
  /**
   * audit_log_path ("" = no audit log, "-" = stdout), audit_log_maxsize (MB before rotation, 0 = 100),
   * audit_log_maxbackup (rotated files kept, 0 = all), audit_log_maxage (days, 0 = no limit): kube-apiserver's flags.
   */
  auditLogPath: string;
  auditLogMaxsize: number;
  auditLogMaxbackup: number;
  auditLogMaxage: number;
  /** cluster_dns, cluster_domain, resolv_conf ("" = no host resolver). */
  clusterDns: string[];
  clusterDomain: string;
  resolvConf: string;
  /** cgroups_per_qos, cgroup_root, cgroup_driver ("" = the container runtime's). */
  cgroupsPerQos: boolean;
  cgroupRoot: string;
  cgroupDriver: "" | "cgroupfs" | "systemd";
  /** kube_reserved / system_reserved: resource name → quantity. */
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  /** eviction_hard: signal → threshold ("100Mi" or "10%"). */
  evictionHard: Record<string, string>;
  /** enforce_node_allocatable: "pods" or "none". */
  enforceNodeAllocatable: string[];
  /** pod_pids_limit (-1 = unlimited) */
  podPidsLimit: number;
  /** cpu_cfs_quota, cpu_cfs_quota_period */
  cpuCfsQuota: boolean;
  cpuCfsQuotaPeriod: number;
  /** max_pods */
  maxPods: number;
  /** serialize_image_pulls, max_parallel_image_pulls (0 = no limit), image_pull_progress_deadline */
  serializeImagePulls: boolean;
  maxParallelImagePulls: number;
  imagePullProgressDeadline: number;
  /** lock_file, exit_on_lock_contention */
  lockFile: string;
  exitOnLockContention: boolean;
  /** host_network_sources, host_pid_sources, host_ipc_sources: sources allowed host namespaces ("*" = all). */
  hostNetworkSources: string[];
  hostPidSources: string[];
  hostIpcSources: string[];
  /** Node upkeep over months (issue 29), the KubeletConfiguration names: container log rotation, swap. */
  /** container_log_max_size: a quantity ("10Mi"); container_log_max_files (at least 2). */
  containerLogMaxSize: string;
  containerLogMaxFiles: number;
  /** container_log_max_workers, container_log_monitor_interval (CRI runtimes: the log manager's pool and period). */
  containerLogMaxWorkers: number;
  containerLogMonitorInterval: number;
  /** fail_swap_on: refuse to start while swap is on. */
  failSwapOn: boolean;
  /** eviction_minimum_reclaim: signal → what eviction frees beyond the threshold ("500Mi", "5%"). */
  evictionMinimumReclaim: Record<string, string>;
  /** pods_per_core (0 = off): max pods is at most this times the CPU cores. */
  podsPerCore: number;
  /** eviction_max_pod_grace_period, seconds (0 = the pod's own): the most a pod evicted by a soft threshold gets. */
  evictionMaxPodGracePeriod: number;
  /** shutdown_grace_period, shutdown_grace_period_critical_pods (0 = node shutdown not watched). */
  shutdownGracePeriod: number;
  shutdownGracePeriodCriticalPods: number;
  /** shutdown_grace_period_by_pod_priority: the period of each priority group (instead of the two above). */
  shutdownGracePeriodByPodPriority: ShutdownGracePeriodByPodPriority[];
  /** seccomp_default (seccompDefault): RuntimeDefault for pods that name no seccomp profile. */
  seccompDefault: boolean;
  /** allowed_unsafe_sysctls (allowedUnsafeSysctls): sysctls or `prefix*` patterns allowed beyond the safe set. */
  allowedUnsafeSysctls: string[];
  /** runtime_handlers: runtimeClassName → CRI runtime handler (a class not listed is its own handler). */
  runtimeHandlers: Record<string, string>;
  // Issue 37, TLS and kernel defaults (kept together to ease merging).
  // Issue 38, the resource managers (kept together to ease merging).
  /** cpu_manager_policy (cpuManagerPolicy): none or static. */
  cpuManagerPolicy: string;
  /** cpu_manager_policy_options: full-pcpus-only, distribute-cpus-across-numa, align-by-socket → "true". */
  cpuManagerPolicyOptions: Record<string, string>;
  /** cpu_manager_reconcile_period: how often the shared pool is written into running containers. */
  cpuManagerReconcilePeriod: number;
  /** reserved_cpus (reservedSystemCPUs): CPUs kept from pods ("0,1"; "" = kube/system reserved cpu decides). */
  reservedCpus: string;
  /** memory_manager_policy (memoryManagerPolicy): None or Static. */
  memoryManagerPolicy: string;
  /** reserved_memory (reservedMemory): memory reserved per NUMA node (Static memory manager). */
  reservedMemory: MemoryReservation[];
  /** topology_manager_policy, topology_manager_scope, topology_manager_policy_options. */
  topologyManagerPolicy: string;
  topologyManagerScope: string;
  topologyManagerPolicyOptions: Record<string, string>;
  /** tls_cipher_suites (tlsCipherSuites): Go crypto/tls names of the TLS 1.2 suites the server allows ([] = the runtime's). */
  tlsCipherSuites: string[];
  /** tls_min_version (tlsMinVersion): VersionTLS12 or VersionTLS13 ("" = TLS 1.2). */
  tlsMinVersion: string;
  /** tls_curve_preferences (tlsCurvePreferences): key exchange groups, Go names or CurveIDs ([] = the runtime's). */
  tlsCurvePreferences: string[];
  /** protect_kernel_defaults (protectKernelDefaults): refuse to start when the kernel settings differ, instead of setting them. */
  protectKernelDefaults: boolean;
  // Issue 38, local storage and node resource settings (kept together to ease merging).
  /** local_storage_capacity_isolation: ephemeral-storage requests admitted and limits enforced by eviction. */
  localStorageCapacityIsolation: boolean;
  /** image_maximum_gc_age, ms (0 = none): images unused for longer are removed whatever the disk usage. */
  imageMaximumGcAge: number;
  /** max_container_restart_period, ms: the crash-loop back-off's cap (crashLoopBackOff.maxContainerRestartPeriod). */
  maxContainerRestartPeriod: number;
  /** single_process_oom_kill: on cgroup v2, an OOM kill takes one process, not the container's whole cgroup. */
  singleProcessOomKill: boolean;
  /** memory_throttling_factor: memory.high between request and limit (MemoryQoS, cgroup v2). */
  memoryThrottlingFactor: number;
  /** feature_gates: gate name → on/off; only MemoryQoS changes anything here. */
  featureGates: Record<string, string>;
  /** kernel_memcg_notification: the kernel signals a memory.available threshold crossing (cgroup v1, eventfd). */
  kernelMemcgNotification: boolean;
}

/** Built-in defaults, the original kubelet's where it had the flag. */
export const DEFAULT_CONFIG: KubeletConfig = {
  config: "",
  syncFrequency: 10_000,
  fileCheckFrequency: 20_000,
  httpCheckFrequency: 20_000,
  manifestUrl: "",
  manifestUrlHeader: {},
  enableServer: true,
  address: "127.0.0.1",
  port: 10250,
  readOnlyPort: 0,
  hostnameOverride: "",
  nodeLabels: {},
  networkContainerImage: "registry.k8s.io/pause:3.9",
  podNetworkMode: "bridge",
  dockerEndpoint: "",
  containerRuntime: "docker",
  containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
  imageServiceEndpoint: "",
  runtimeRequestTimeout: 120_000,
  podLogsDir: "/var/log/pods",
  etcdServers: [],
  etcdConfig: "",
  rootDir: "/var/lib/kubelet",
  allowPrivileged: false,
  allowSensitiveHostPaths: false,
  trustedSources: ["file"],
  maxManifestBytes: 10 * 2 ** 20,
  strictManifests: true,
  registryQps: 0,
  registryBurst: 10,
  runonce: false,
  runonceTimeout: 300_000,
  stopTimeout: 30_000,
  httpIdleTimeout: 90_000,
  enableDebuggingHandlers: true,
  registerNode: true,
  nodeLeaseDuration: 40_000,
  nodeStatusUpdateFrequency: 10_000,
  nodeStatusReportFrequency: 300_000,
  maximumDeadContainersPerContainer: 1,
  maximumDeadContainers: -1,
  minimumContainerTtlDuration: 0,
  imageGcHighThreshold: 85,
  imageGcLowThreshold: 80,
  minimumImageTtlDuration: 120_000,
  volumeStatsAggPeriod: 60_000,
  evictionSoft: {},
  evictionSoftGracePeriod: {},
  evictionPressureTransitionPeriod: 300_000,
  authTokenFile: "",
  tlsCertFile: "",
  tlsPrivateKeyFile: "",
  clientCaFile: "",
  certDir: "",
  logFormat: "",
  verbosity: 1,
  configFile: "",
  anonymousAuth: true,
  authorizationMode: "AlwaysAllow",
  authorizationPolicyFile: "",
  kubeconfig: "",
  authenticationTokenWebhook: false,
  authenticationTokenWebhookCacheTtl: 120_000,
  authorizationWebhookCacheAuthorizedTtl: 300_000,
  authorizationWebhookCacheUnauthorizedTtl: 30_000,
  adminTokenFile: "",
  healthzPort: 10248,
  healthzBindAddress: "127.0.0.1",
  auditLogPath: "",
  auditLogMaxsize: 0,
  auditLogMaxbackup: 0,
  auditLogMaxage: 0,
  clusterDns: [],
  clusterDomain: "",
  resolvConf: "/etc/resolv.conf",
  cgroupsPerQos: true,
  cgroupRoot: "/",
  cgroupDriver: "",
  kubeReserved: {},
  systemReserved: {},
  evictionHard: {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
  },
  enforceNodeAllocatable: ["pods"],
  podPidsLimit: -1,
  cpuCfsQuota: true,
  cpuCfsQuotaPeriod: 100,
  maxPods: 110,
  serializeImagePulls: true,
  maxParallelImagePulls: 0,
  imagePullProgressDeadline: 60_000,
  lockFile: "",
  exitOnLockContention: false,
  hostNetworkSources: ["*"],
  hostPidSources: ["*"],
  hostIpcSources: ["*"],
  containerLogMaxSize: "10Mi",
  containerLogMaxFiles: 5,
  containerLogMaxWorkers: 1,
  containerLogMonitorInterval: 10_000,
  failSwapOn: true,
  evictionMinimumReclaim: {},
  podsPerCore: 0,
  evictionMaxPodGracePeriod: 0,
  shutdownGracePeriod: 0,
  shutdownGracePeriodCriticalPods: 0,
  shutdownGracePeriodByPodPriority: [],
  seccompDefault: false,
  allowedUnsafeSysctls: [],
  runtimeHandlers: {},
  cpuManagerPolicy: "none",
  cpuManagerPolicyOptions: {},
  cpuManagerReconcilePeriod: 10_000,
  reservedCpus: "",
  memoryManagerPolicy: "None",
  reservedMemory: [],
  topologyManagerPolicy: "none",
  topologyManagerScope: "container",
  topologyManagerPolicyOptions: {},
  tlsCipherSuites: [],
  tlsMinVersion: "",
  tlsCurvePreferences: [],
  protectKernelDefaults: false,
  localStorageCapacityIsolation: true,
  imageMaximumGcAge: 0,
  maxContainerRestartPeriod: 300_000,
  singleProcessOomKill: false,
  memoryThrottlingFactor: 0.9,
  featureGates: {},
  kernelMemcgNotification: false,
};
