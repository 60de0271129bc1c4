// The flag table: every flag's snake_case name, its config key, its value type and its help text.
import type { KubeletConfig } from "./config-types.ts";

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
  | "priorities"
  | "reservedmemory"
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
    flag: "node_labels",
    key: "nodeLabels",
    type: "map",
    description:
      "Labels of this node (key=value pairs separated by ','), besides kubernetes.io/hostname, os and arch: on the Node record, matched by nodeSelector and node affinity, and by `kubelet fleet apply --selector`",
  },
  {
    flag: "network_container_image",
    key: "networkContainerImage",
    type: "string",
    description:
      "Pod sandbox image of the Docker shim; on a CRI runtime only kept from image GC (the runtime's own sandbox image is used)",
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
      "The container runtime to use: docker (built in), remote (a CRI runtime at --container_runtime_endpoint) or fake (in memory, runs nothing: a hollow node for fleet benchmarks)",
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
    flag: "trusted_sources",
    key: "trustedSources",
    type: "list",
    description:
      "Sources whose pods may mount host paths beneath /etc, /usr, /root, /boot, /proc, /sys, /dev, the root dir or the runtime's state and socket dirs (file, url, etcd, http; * = all); other sources' pods are refused them",
  },
  {
    flag: "max_manifest_bytes",
    key: "maxManifestBytes",
    type: "uint",
    description: "Largest manifest document read from a file, URL, etcd or an HTTP push, in bytes",
  },
  {
    flag: "strict_manifests",
    key: "strictManifests",
    type: "bool",
    description:
      "If true, a manifest with an unknown field (a typo such as comand:) is rejected and the pod's last good version keeps running; false: the field is ignored with a warning, as upstream",
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
    flag: "cert_dir",
    key: "certDir",
    type: "string",
    description:
      "Where kubelet.crt and kubelet.key are generated (self-signed) when --client_ca_file is given without --tls_cert_file/--tls_private_key_file (default <root_dir>/pki)",
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
    choices: ["AlwaysAllow", "Webhook", "RBAC"],
    description:
      "AlwaysAllow, Webhook (needs an API server: every protected route then requires credentials), or RBAC (this kubelet's own: the roles of --authorization_policy_file)",
  },
  {
    flag: "authorization_policy_file",
    key: "authorizationPolicyFile",
    type: "string",
    description:
      "With authorization_mode RBAC: a YAML file of ClusterRoles and ClusterRoleBindings (rbac.authorization.k8s.io/v1), re-read when it changes; this kubelet's own setting, upstream has none",
  },
  {
    flag: "kubeconfig",
    key: "kubeconfig",
    type: "string",
    description:
      "A kubeconfig naming the server that answers TokenReview and SubjectAccessReview (authentication_token_webhook, authorization_mode Webhook); used for nothing else",
  },
  {
    flag: "authentication_token_webhook",
    key: "authenticationTokenWebhook",
    type: "bool",
    description: "Send bearer tokens the token file does not hold to the --kubeconfig server as TokenReviews",
  },
  {
    flag: "authentication_token_webhook_cache_ttl",
    key: "authenticationTokenWebhookCacheTtl",
    type: "duration",
    description: "How long TokenReview answers are cached",
  },
  {
    flag: "authorization_webhook_cache_authorized_ttl",
    key: "authorizationWebhookCacheAuthorizedTtl",
    type: "duration",
    description:
      "How long an allowed SubjectAccessReview is cached (keeps scrapes working through a short webhook outage)",
  },
  {
    flag: "authorization_webhook_cache_unauthorized_ttl",
    key: "authorizationWebhookCacheUnauthorizedTtl",
    type: "duration",
    description: "How long a SubjectAccessReview that did not allow is cached",
  },
  {
    flag: "admin_token_file",
    key: "adminTokenFile",
    type: "string",
    description:
      "The admin token (user kubelet-admin, group system:masters), generated 0600 at start when absent; the only way to exec, run, read logs or push without --auth_token_file or a client certificate (default <root_dir>/admin-token)",
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
    flag: "audit_log_path",
    key: "auditLogPath",
    type: "string",
    description:
      "Audit log of exec, attach, port-forward, run, log reads and pod pushes, as audit.k8s.io/v1 Events (- = stdout, empty = off)",
  },
  {
    flag: "audit_log_maxsize",
    key: "auditLogMaxsize",
    type: "uint",
    description: "Megabytes the audit log reaches before it is rotated (0 = 100)",
  },
  {
    flag: "audit_log_maxbackup",
    key: "auditLogMaxbackup",
    type: "uint",
    description: "Rotated audit log files kept (0 = all)",
  },
  {
    flag: "audit_log_maxage",
    key: "auditLogMaxage",
    type: "uint",
    description: "Days a rotated audit log file is kept, by the time in its name (0 = no limit)",
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
    description: "Cancel a pull with no progress for this long (Docker; a CRI runtime reports none)",
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
    flag: "seccomp_default",
    key: "seccompDefault",
    type: "bool",
    description: "Use the runtime's default seccomp profile (RuntimeDefault) for pods that name none",
  },
  {
    flag: "allowed_unsafe_sysctls",
    key: "allowedUnsafeSysctls",
    type: "list",
    description: "Namespaced sysctls (or prefix* patterns) pods may set beyond the safe set, comma separated",
  },
  {
    flag: "runtime_handlers",
    key: "runtimeHandlers",
    type: "map",
    description: "runtimeClassName → CRI runtime handler (class=handler,…); a class not listed is its own handler",
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
    flag: "shutdown_grace_period_by_pod_priority",
    key: "shutdownGracePeriodByPodPriority",
    type: "priorities",
    description:
      "Node shutdown by pod priority instead of the two periods above: priority=seconds pairs (0=60,10000=30): pods from a priority up to the next get its seconds, lowest first",
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
  // Issue 37, TLS and kernel defaults (kept together to ease merging).
  {
    flag: "cpu_manager_policy",
    key: "cpuManagerPolicy",
    type: "string",
    choices: ["", "none", "static"],
    description:
      "CPU manager policy: none, or static (Guaranteed containers with integer CPU requests get CPUs of their own)",
  },
  {
    flag: "cpu_manager_policy_options",
    key: "cpuManagerPolicyOptions",
    type: "map",
    description:
      "Static CPU manager options: full-pcpus-only=true, distribute-cpus-across-numa=true, align-by-socket=true",
  },
  {
    flag: "cpu_manager_reconcile_period",
    key: "cpuManagerReconcilePeriod",
    type: "duration",
    description: "How often the CPU manager writes the shared CPU pool into running containers",
  },
  {
    flag: "reserved_cpus",
    key: "reservedCpus",
    type: "string",
    description: "CPUs kept for the system and kubelet (0,1 or 0-1); overrides kube_reserved/system_reserved cpu",
  },
  {
    flag: "memory_manager_policy",
    key: "memoryManagerPolicy",
    type: "string",
    choices: ["", "None", "Static"],
    description: "Memory manager policy: None, or Static (Guaranteed pods get memory from NUMA nodes of their own)",
  },
  {
    flag: "reserved_memory",
    key: "reservedMemory",
    type: "reservedmemory",
    description: "Memory reserved per NUMA node for the Static memory manager: 0:memory=1Gi;1:memory=1Gi (repeatable)",
  },
  {
    flag: "topology_manager_policy",
    key: "topologyManagerPolicy",
    type: "string",
    choices: ["", "none", "best-effort", "restricted", "single-numa-node"],
    description:
      "Topology manager policy: none, best-effort, restricted or single-numa-node (NUMA alignment at admission)",
  },
  {
    flag: "topology_manager_scope",
    key: "topologyManagerScope",
    type: "string",
    choices: ["", "container", "pod"],
    description: "Topology manager scope: container (each container aligned) or pod (the whole pod on the same nodes)",
  },
  {
    flag: "topology_manager_policy_options",
    key: "topologyManagerPolicyOptions",
    type: "map",
    description: "Topology manager options: prefer-closest-numa-nodes=true, max-allowable-numa-nodes=N",
  },
  {
    flag: "tls_cipher_suites",
    key: "tlsCipherSuites",
    type: "list",
    description:
      "TLS 1.2 cipher suites the server allows, Go crypto/tls names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,…; TLS 1.3 suites are not configurable)",
  },
  {
    flag: "tls_min_version",
    key: "tlsMinVersion",
    type: "string",
    description: "Lowest TLS version the server accepts: VersionTLS12 (default) or VersionTLS13",
  },
  {
    flag: "tls_curve_preferences",
    key: "tlsCurvePreferences",
    type: "list",
    description:
      "Key exchange groups the server allows: CurveP256, CurveP384, CurveP521, X25519, X25519MLKEM768 (or CurveIDs)",
  },
  {
    flag: "protect_kernel_defaults",
    key: "protectKernelDefaults",
    type: "bool",
    description:
      "Refuse to start when vm.overcommit_memory, vm.panic_on_oom, kernel.panic, kernel.panic_on_oops or kernel.keys.root_max* differ from the kubelet's values, instead of setting them",
  },
  {
    flag: "local_storage_capacity_isolation",
    key: "localStorageCapacityIsolation",
    type: "bool",
    description:
      "Count ephemeral-storage requests at admission and evict pods over their ephemeral-storage limits or emptyDir sizeLimit",
  },
  {
    flag: "image_maximum_gc_age",
    key: "imageMaximumGcAge",
    type: "duration",
    description: "Remove images unused for longer than this whatever the disk usage (0 = never)",
  },
  {
    flag: "max_container_restart_period",
    key: "maxContainerRestartPeriod",
    type: "duration",
    description: "Longest crash-loop back-off between restarts of a container, 1s to 300s",
  },
  {
    flag: "single_process_oom_kill",
    key: "singleProcessOomKill",
    type: "bool",
    description:
      "On cgroup v2, let an OOM kill take one process instead of the whole container (memory.oom.group unset)",
  },
  {
    flag: "memory_throttling_factor",
    key: "memoryThrottlingFactor",
    type: "float",
    description:
      "With the MemoryQoS feature gate on cgroup v2: memory.high = request + factor × (limit − request), above 0 and at most 1",
  },
  {
    flag: "feature_gates",
    key: "featureGates",
    type: "map",
    description: "Feature gates (Name=true,Other=false); MemoryQoS is the one that changes anything here",
  },
  {
    flag: "kernel_memcg_notification",
    key: "kernelMemcgNotification",
    type: "bool",
    description:
      "Have the kernel signal when memory.available crosses its eviction threshold (cgroup v1), so eviction runs at once instead of at its next 10 s pass",
  },
];

/** The flag spec for a flag name in any spelling (`etcd_servers`, `etcd-servers`, `etcdServers`). */
export function findFlag(name: string): FlagSpec | undefined {
  const snake = name.replace(/-/g, "_");
  return FLAGS.find((f) => f.flag === snake || f.key === name);
}
