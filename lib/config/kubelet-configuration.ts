// Every field of KubeletConfiguration (kubelet.config.k8s.io/v1beta1, as in kubernetes/kubernetes
// staging/src/k8s.io/kubelet/config/v1beta1/types.go), each with its type and exactly one verdict:
// honoured (the setting it sets), not applicable here (and why), or refused for values that could
// not run safely. The single source for the config file's checks, print-config and the README.
import type { KubeletConfig } from "./config-types.ts";
/** Config keys share the manifests' and flags' "did you mean". */
export { closestName } from "../spelling.ts";

export type FieldType =
  | "bool"
  | "string"
  | "int"
  | "float"
  | "duration"
  | "nanosOrDuration"
  | "strings"
  | "stringMap"
  | "headerMap"
  | "boolMap"
  | "object"
  | "objects"
  | "anyMap";

export interface FieldRow {
  /** Dotted path in the file: `authentication.x509.clientCAFile`. */
  path: string;
  type: FieldType;
  /** Honoured: the kubelet setting this field sets. */
  key?: keyof KubeletConfig;
  /** Accepted but not applicable on this kubelet: why (reported once at start-up). */
  notApplicable?: string;
  /** Values that would make this kubelet run less safely or differently than the file asks: why, or undefined. */
  refuse?: (value: unknown) => string | undefined;
  /**
   * A pointer field in Go (`*bool`, `*int32`): an explicit zero is a value. For the other fields the
   * kubelet's defaulting treats a zero value (`0s`, `0`, `""`) as unset, as kubeadm's files rely on.
   */
  pointer?: boolean;
  /** Turns the file's value into the setting's (units or scales that differ). */
  convert?: (value: unknown) => unknown;
  /** This kubelet's own field or value, which upstream's KubeletConfiguration does not have: what it adds. */
  ours?: string;
}

const NO_API_SERVER = "there is no API server: this kubelet runs pods from files, a URL, etcd and HTTP pushes";
const NO_NODE_OBJECT = "there is no Node object to register or update (no API server)";

/** Refuses every value except the ones a kubelet without that manager behaves like. */
const only =
  (allowed: unknown[], why: string) =>
  (value: unknown): string | undefined =>
    allowed.includes(value) ? undefined : `${JSON.stringify(value)} ${why}`;

const row = (path: string, type: FieldType, verdict: Omit<FieldRow, "path" | "type"> = {}): FieldRow => ({
  path,
  type,
  ...verdict,
});
const honoured = (
  path: string,
  type: FieldType,
  key: keyof KubeletConfig,
  options: Pick<FieldRow, "refuse" | "pointer" | "convert"> = {},
) => row(path, type, { key, ...options });
const POINTER = { pointer: true };
const notApplicable = (path: string, type: FieldType, why: string, refuse?: FieldRow["refuse"]) =>
  row(path, type, { notApplicable: why, ...(refuse ? { refuse } : {}) });

/** The whole KubeletConfiguration, in types.go order. Objects list their fields after them. */
export const KUBELET_CONFIGURATION: FieldRow[] = [
  honoured("enableServer", "bool", "enableServer", POINTER),
  honoured("staticPodPath", "string", "config"),
  honoured("podLogsDir", "string", "podLogsDir"),
  honoured("syncFrequency", "duration", "syncFrequency"),
  honoured("fileCheckFrequency", "duration", "fileCheckFrequency"),
  honoured("httpCheckFrequency", "duration", "httpCheckFrequency"),
  honoured("staticPodURL", "string", "manifestUrl"),
  honoured("staticPodURLHeader", "headerMap", "manifestUrlHeader"),
  honoured("address", "string", "address"),
  honoured("port", "int", "port"),
  honoured("readOnlyPort", "int", "readOnlyPort"),
  honoured("tlsCertFile", "string", "tlsCertFile"),
  honoured("tlsPrivateKeyFile", "string", "tlsPrivateKeyFile"),
  honoured("tlsCipherSuites", "strings", "tlsCipherSuites"),
  // CurveIDs as numbers (upstream's []int32) or names; the names are checked at start (lib/server/tls-settings.ts).
  honoured("tlsCurvePreferences", "objects", "tlsCurvePreferences", {
    convert: (value) => (value as unknown[]).map(String),
  }),
  honoured("tlsMinVersion", "string", "tlsMinVersion"),
  notApplicable("rotateCertificates", "bool", `${NO_API_SERVER} (certificates.k8s.io)`),
  notApplicable("serverTLSBootstrap", "bool", `${NO_API_SERVER} (certificates.k8s.io)`),
  row("authentication", "object"),
  row("authentication.x509", "object"),
  honoured("authentication.x509.clientCAFile", "string", "clientCaFile"),
  row("authentication.webhook", "object"),
  honoured("authentication.webhook.enabled", "bool", "authenticationTokenWebhook", POINTER),
  honoured("authentication.webhook.cacheTTL", "duration", "authenticationTokenWebhookCacheTtl"),
  row("authentication.anonymous", "object"),
  honoured("authentication.anonymous.enabled", "bool", "anonymousAuth", POINTER),
  row("authorization", "object"),
  row("authorization.mode", "string", { key: "authorizationMode", ours: "the value RBAC" }),
  row("authorization.policyFile", "string", { key: "authorizationPolicyFile", ours: "the whole field" }),
  row("authorization.webhook", "object"),
  honoured("authorization.webhook.cacheAuthorizedTTL", "duration", "authorizationWebhookCacheAuthorizedTtl"),
  honoured("authorization.webhook.cacheUnauthorizedTTL", "duration", "authorizationWebhookCacheUnauthorizedTtl"),
  honoured("registryPullQPS", "int", "registryQps", POINTER),
  honoured("registryBurst", "int", "registryBurst"),
  notApplicable("imagePullCredentialsVerificationPolicy", "string", `pull secrets need an API server`),
  notApplicable("preloadedImagesVerificationAllowlist", "strings", `pull secrets need an API server`),
  notApplicable("eventRecordQPS", "int", "events are kept in memory (GET /events), not posted"),
  notApplicable("eventBurst", "int", "events are kept in memory (GET /events), not posted"),
  honoured("enableDebuggingHandlers", "bool", "enableDebuggingHandlers", POINTER),
  notApplicable("enableContentionProfiling", "bool", "there is no pprof handler"),
  honoured("healthzPort", "int", "healthzPort", POINTER),
  honoured("healthzBindAddress", "string", "healthzBindAddress"),
  notApplicable("oomScoreAdj", "int", "the kubelet's own OOM score is left to its service manager (OOMScoreAdjust=)"),
  honoured("clusterDomain", "string", "clusterDomain"),
  honoured("clusterDNS", "strings", "clusterDns"),
  notApplicable("streamingConnectionIdleTimeout", "duration", "deprecated: no effect in the kubelet either"),
  honoured("nodeStatusUpdateFrequency", "duration", "nodeStatusUpdateFrequency"),
  honoured("nodeStatusReportFrequency", "duration", "nodeStatusReportFrequency"),
  honoured("nodeLeaseDurationSeconds", "int", "nodeLeaseDuration", { convert: (seconds) => `${seconds}s` }),
  honoured("imageMinimumGCAge", "duration", "minimumImageTtlDuration"),
  honoured("imageMaximumGCAge", "duration", "imageMaximumGcAge"),
  honoured("imageGCHighThresholdPercent", "int", "imageGcHighThreshold"),
  honoured("imageGCLowThresholdPercent", "int", "imageGcLowThreshold"),
  honoured("volumeStatsAggPeriod", "duration", "volumeStatsAggPeriod"),
  notApplicable("kubeletCgroups", "string", "the kubelet's own cgroup is left to its service manager"),
  notApplicable("systemCgroups", "string", "system processes are not moved into a cgroup"),
  honoured("cgroupRoot", "string", "cgroupRoot"),
  honoured("cgroupsPerQOS", "bool", "cgroupsPerQos", POINTER),
  honoured("cgroupDriver", "string", "cgroupDriver"),
  honoured("cpuManagerPolicy", "string", "cpuManagerPolicy"),
  honoured("singleProcessOOMKill", "bool", "singleProcessOomKill", POINTER),
  honoured("cpuManagerPolicyOptions", "stringMap", "cpuManagerPolicyOptions"),
  honoured("cpuManagerReconcilePeriod", "duration", "cpuManagerReconcilePeriod"),
  notApplicable("draManagerReconcilePeriod", "duration", "dynamic resource allocation needs an API server"),
  honoured("memoryManagerPolicy", "string", "memoryManagerPolicy"),
  honoured("topologyManagerPolicy", "string", "topologyManagerPolicy"),
  honoured("topologyManagerScope", "string", "topologyManagerScope"),
  honoured("topologyManagerPolicyOptions", "stringMap", "topologyManagerPolicyOptions"),
  notApplicable("qosReserved", "stringMap", "memory is not reserved per QoS tier"),
  honoured("runtimeRequestTimeout", "duration", "runtimeRequestTimeout"),
  notApplicable("hairpinMode", "string", "pods use Docker's network or none; there is no CNI bridge"),
  honoured("maxPods", "int", "maxPods"),
  notApplicable("podCIDR", "string", "pod addresses come from the Docker network (--pod_network_mode)"),
  honoured("podPidsLimit", "int", "podPidsLimit", POINTER),
  honoured("resolvConf", "string", "resolvConf", POINTER),
  honoured("runOnce", "bool", "runonce"),
  honoured("cpuCFSQuota", "bool", "cpuCfsQuota", POINTER),
  honoured("cpuCFSQuotaPeriod", "duration", "cpuCfsQuotaPeriod", POINTER),
  notApplicable("nodeStatusMaxImages", "int", NO_NODE_OBJECT),
  notApplicable("maxOpenFiles", "int", "the kubelet's file limit is left to its service manager (LimitNOFILE=)"),
  notApplicable("contentType", "string", NO_API_SERVER),
  notApplicable("kubeAPIQPS", "int", NO_API_SERVER),
  notApplicable("kubeAPIBurst", "int", NO_API_SERVER),
  honoured("serializeImagePulls", "bool", "serializeImagePulls", POINTER),
  honoured("maxParallelImagePulls", "int", "maxParallelImagePulls", POINTER),
  honoured("evictionHard", "stringMap", "evictionHard"),
  honoured("evictionSoft", "stringMap", "evictionSoft"),
  honoured("evictionSoftGracePeriod", "stringMap", "evictionSoftGracePeriod"),
  honoured("evictionPressureTransitionPeriod", "duration", "evictionPressureTransitionPeriod"),
  honoured("evictionMaxPodGracePeriod", "int", "evictionMaxPodGracePeriod"),
  honoured("evictionMinimumReclaim", "stringMap", "evictionMinimumReclaim"),
  notApplicable("mergeDefaultEvictionSettings", "bool", "given evictionHard thresholds replace the defaults"),
  honoured("podsPerCore", "int", "podsPerCore"),
  notApplicable("enableControllerAttachDetach", "bool", "there are no attachable volumes (no API server)"),
  honoured("protectKernelDefaults", "bool", "protectKernelDefaults"),
  notApplicable("makeIPTablesUtilChains", "bool", "iptables is never touched"),
  notApplicable("iptablesMasqueradeBit", "int", "deprecated: no effect in the kubelet either"),
  notApplicable("iptablesDropBit", "int", "deprecated: no effect in the kubelet either"),
  // Only MemoryQoS changes anything: every other feature here is always on or absent, whatever its gate says.
  honoured("featureGates", "boolMap", "featureGates", {
    convert: (gates) =>
      Object.fromEntries(Object.entries(gates as Record<string, boolean>).map(([k, v]) => [k, String(v)])),
  }),
  honoured("failSwapOn", "bool", "failSwapOn", POINTER),
  row("memorySwap", "object"),
  notApplicable(
    "memorySwap.swapBehavior",
    "string",
    "containers with a memory limit get no swap",
    only(["", "NoSwap"], "is not implemented: containers with a memory limit get no swap; remove it or set NoSwap"),
  ),
  honoured("containerLogMaxSize", "string", "containerLogMaxSize"),
  honoured("containerLogMaxFiles", "int", "containerLogMaxFiles", POINTER),
  honoured("containerLogMaxWorkers", "int", "containerLogMaxWorkers", POINTER),
  honoured("containerLogMonitorInterval", "duration", "containerLogMonitorInterval"),
  notApplicable(
    "configMapAndSecretChangeDetectionStrategy",
    "string",
    "ConfigMaps and Secrets come from the pod sources, which push every change (as the Watch strategy does)",
  ),
  honoured("systemReserved", "stringMap", "systemReserved"),
  honoured("kubeReserved", "stringMap", "kubeReserved"),
  // "0" names CPU 0: not a zero value (isZeroValue treats "0" as unset for quantities).
  honoured("reservedSystemCPUs", "string", "reservedCpus", POINTER),
  notApplicable("showHiddenMetricsForVersion", "string", "no metric is hidden"),
  notApplicable("systemReservedCgroup", "string", "only the pods' share is enforced (enforceNodeAllocatable: pods)"),
  notApplicable("kubeReservedCgroup", "string", "only the pods' share is enforced (enforceNodeAllocatable: pods)"),
  honoured("enforceNodeAllocatable", "strings", "enforceNodeAllocatable", {
    refuse: (value) => {
      const wrong = (value as string[]).filter((v) => v !== "pods" && v !== "none");
      return wrong.length
        ? `${wrong.join(", ")}: only pods and none are enforced here; limiting ${wrong.join(", ")} cgroups is not implemented`
        : undefined;
    },
  }),
  honoured("allowedUnsafeSysctls", "strings", "allowedUnsafeSysctls"),
  notApplicable("volumePluginDir", "string", "no volume plugins (emptyDir and hostPath only)"),
  notApplicable("providerID", "string", NO_NODE_OBJECT),
  honoured("kernelMemcgNotification", "bool", "kernelMemcgNotification"),
  row("logging", "object"),
  honoured("logging.format", "string", "logFormat"),
  notApplicable("logging.flushFrequency", "nanosOrDuration", "log lines are written at once"),
  // klog's V(0) is this kubelet's info level (1), V(2) and above its debug level (2).
  honoured("logging.verbosity", "int", "verbosity", { convert: (v) => Math.min(2, (v as number) + 1) }),
  notApplicable("logging.vmodule", "objects", "verbosity is global"),
  notApplicable("logging.options", "anyMap", "log output options are fixed: text on a terminal, else JSON"),
  notApplicable("enableSystemLogHandler", "bool", "/logs/ is a debugging handler (enableDebuggingHandlers)"),
  notApplicable("enableSystemLogQuery", "bool", "/logs/ serves files under /var/log only, with no query"),
  honoured("shutdownGracePeriod", "duration", "shutdownGracePeriod"),
  honoured("shutdownGracePeriodCriticalPods", "duration", "shutdownGracePeriodCriticalPods"),
  honoured("shutdownGracePeriodByPodPriority", "objects", "shutdownGracePeriodByPodPriority"),
  row("crashLoopBackOff", "object"),
  honoured("crashLoopBackOff.maxContainerRestartPeriod", "duration", "maxContainerRestartPeriod"),
  honoured("reservedMemory", "objects", "reservedMemory"),
  notApplicable("enableProfilingHandler", "bool", "there is no pprof handler"),
  notApplicable("enableDebugFlagsHandler", "bool", "there is no /debug/flags handler"),
  honoured("seccompDefault", "bool", "seccompDefault"),
  honoured("memoryThrottlingFactor", "float", "memoryThrottlingFactor", POINTER),
  notApplicable("memoryReservationPolicy", "string", "memory.min (MemoryQoS, cgroup v2) is not set"),
  notApplicable("registerWithTaints", "objects", NO_NODE_OBJECT),
  honoured("registerNode", "bool", "registerNode", POINTER),
  notApplicable("tracing", "anyMap", "there is no OpenTelemetry exporter"),
  honoured("localStorageCapacityIsolation", "bool", "localStorageCapacityIsolation", POINTER),
  honoured("containerRuntimeEndpoint", "string", "containerRuntimeEndpoint"),
  honoured("imageServiceEndpoint", "string", "imageServiceEndpoint"),
  notApplicable("failCgroupV1", "bool", "cgroup v1 and v2 are both supported"),
  row("userNamespaces", "object"),
  notApplicable("userNamespaces.idsPerPod", "int", "pods do not run in user namespaces"),
];

const BY_PATH = new Map(KUBELET_CONFIGURATION.map((r) => [r.path, r]));

/** The row for a dotted path, if the field exists. */
export function configurationField(path: string): FieldRow | undefined {
  return BY_PATH.get(path);
}

/** The names of the fields directly under `parent` ("" for the top level). */
export function fieldNamesUnder(parent: string): string[] {
  const prefix = parent ? `${parent}.` : "";
  return KUBELET_CONFIGURATION.filter(
    (r) => r.path.startsWith(prefix) && !r.path.slice(prefix.length).includes("."),
  ).map((r) => r.path.slice(prefix.length));
}

const TYPE_NAMES: Record<FieldType, string> = {
  bool: "a boolean (true or false)",
  string: "a string",
  int: "an integer",
  float: "a number",
  duration: 'a duration string such as "1m30s"',
  nanosOrDuration: 'nanoseconds or a duration string such as "5s"',
  strings: "a list of strings",
  stringMap: 'a mapping of strings such as {memory: "100Mi"}',
  headerMap: "a mapping of header names to lists of strings",
  boolMap: "a mapping of names to booleans",
  object: "a mapping",
  objects: "a list",
  anyMap: "a mapping",
};

/** Undefined when `value` has the field's type, else what was expected ("a boolean (true or false)"). */
export function typeMismatch(type: FieldType, value: unknown): string | undefined {
  const isMap = typeof value === "object" && value !== null && !Array.isArray(value);
  const ok = (() => {
    switch (type) {
      case "bool":
        return typeof value === "boolean";
      case "string":
        return typeof value === "string";
      case "int":
        return Number.isInteger(value);
      case "float":
        return typeof value === "number";
      case "duration":
        return typeof value === "string";
      case "nanosOrDuration":
        return typeof value === "string" || Number.isInteger(value);
      case "strings":
        return Array.isArray(value) && value.every((v) => typeof v === "string");
      case "stringMap":
        return isMap && Object.values(value).every((v) => typeof v === "string");
      case "headerMap":
        return isMap && Object.values(value).every((v) => Array.isArray(v) && v.every((s) => typeof s === "string"));
      case "boolMap":
        return isMap && Object.values(value).every((v) => typeof v === "boolean");
      case "object":
      case "anyMap":
        return isMap;
      case "objects":
        return Array.isArray(value);
    }
  })();
  return ok || value === null ? undefined : TYPE_NAMES[type];
}

/** Whether Go's defaulting would treat `value` as unset for a non-pointer field. */
export function isZeroValue(value: unknown): boolean {
  if (value === "" || value === 0 || value === false || value === "0s" || value === "0") return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && value !== null && Object.keys(value).length === 0;
}

/** The verdict of a row as one word, for print-config and the README. */
export function verdictOf(row: FieldRow): "honoured" | "not applicable" | "structure" {
  return row.key ? "honoured" : row.notApplicable ? "not applicable" : "structure";
}

/** The README section "Using your existing kubelet config": every field and its verdict, from this table. */
export function configurationMarkdown(flagOf: (key: keyof KubeletConfig) => string): string {
  const rows = KUBELET_CONFIGURATION.filter((r) => r.type !== "object");
  const refused = (r: FieldRow) => (r.refuse ? " (values it cannot honour safely are refused)" : "");
  const ours = (r: FieldRow) => (r.ours ? ` (this kubelet's own, not upstream's: ${r.ours})` : "");
  return [
    "| honoured field | setting |",
    "| --- | --- |",
    ...rows.filter((r) => r.key).map((r) => `| \`${r.path}\` | \`--${flagOf(r.key!)}\`${refused(r)}${ours(r)} |`),
    "",
    "| accepted, not applicable here | why |",
    "| --- | --- |",
    ...rows.filter((r) => r.notApplicable).map((r) => `| \`${r.path}\` | ${r.notApplicable}${refused(r)} |`),
  ].join("\n");
}
