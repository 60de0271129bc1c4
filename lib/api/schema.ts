// The fields of a Pod the kubelet knows, with their types: the first pass of validation. Wrong
// types ("80" for a port, a map where a list belongs) are reported here with the fix, so the
// semantic checks after it only ever see the shapes they expect.
import { closestName } from "../spelling.ts";
import type { FieldIssue } from "./types.ts";

/**
 * Known fields by object type, with the type of each value: a scalar ("string", "int", "bool",
 * "quantity", "intstr"), "strings"/"ints" (lists of them), "labels" (a map of strings),
 * "quantities" (a map of quantities), "any", a type name (a nested object) or "[Type]" (a list of
 * them). "!…" marks a field known but ignored by a standalone kubelet (a warning), "x…" one known
 * but impossible here (an error, with the reason).
 */
export const SCHEMA: Record<string, Record<string, string>> = {
  Pod: { apiVersion: "string", kind: "string", metadata: "Meta", spec: "PodSpec", status: "any" },
  Meta: {
    name: "string",
    namespace: "string",
    uid: "string",
    labels: "labels",
    annotations: "labels",
    generateName: "!generateName is not applied to static pods",
    ownerReferences: "!owners and their garbage collection live in an API server",
    finalizers: "!finalizers are run by controllers of an API server; a pod removed from its source stops at once",
    creationTimestamp: "any",
    resourceVersion: "any",
    generation: "any",
    managedFields: "any",
    selfLink: "any",
    deletionGracePeriodSeconds: "any",
    deletionTimestamp: "any",
  },
  PodSpec: {
    containers: "[Container]",
    initContainers: "[Container]",
    volumes: "[Volume]",
    restartPolicy: "string",
    terminationGracePeriodSeconds: "int",
    hostNetwork: "bool",
    hostPID: "bool",
    hostIPC: "bool",
    hostname: "string",
    dnsPolicy: "string",
    nodeName: "string",
    securityContext: "PodSecurityContext",
    subdomain: "string",
    affinity: "Affinity",
    tolerations: "!tolerations let a scheduler place pods on tainted nodes; this node has no taints to tolerate",
    nodeSelector: "labels",
    schedulerName: "!there is no scheduler: a pod from this kubelet's sources runs on this node",
    priorityClassName: "string",
    priority: "int",
    preemptionPolicy: "!preemption is a scheduler's decision",
    serviceAccountName: "!service account tokens are issued by an API server",
    serviceAccount: "!service account tokens are issued by an API server",
    automountServiceAccountToken: "!service account tokens are issued by an API server",
    topologySpreadConstraints: "!spreading pods across nodes is a scheduler's decision",
    runtimeClassName: "string",
    overhead: "quantities",
    enableServiceLinks: "!there are no Services (no API server) to make environment variables of",
    readinessGates: "!their conditions are set by controllers through an API server",
    imagePullSecrets: "[LocalRef]",
    dnsConfig: "DnsConfig",
    hostAliases: "[HostAlias]",
    shareProcessNamespace: "bool",
    activeDeadlineSeconds: "int",
    os: "PodOS",
    setHostnameAsFQDN: "bool",
    hostUsers: "bool",
    schedulingGates: "!gates hold a pod back from a scheduler",
    resourceClaims: "!dynamic resource allocation needs an API server and a DRA driver",
    resources: "!pod-level resources are not applied: set each container's resources",
    ephemeralContainers: "xephemeral containers are not supported by this kubelet",
  },
  PodSecurityContext: {
    runAsUser: "int",
    runAsGroup: "int",
    supplementalGroups: "ints",
    runAsNonRoot: "bool",
    fsGroup: "int",
    fsGroupChangePolicy: "string",
    seLinuxOptions: "any",
    seccompProfile: "Profile",
    appArmorProfile: "Profile",
    sysctls: "[Sysctl]",
    windowsOptions: "!Windows only: this kubelet runs Linux pods",
    supplementalGroupsPolicy: "string",
    seLinuxChangePolicy: "!SELinux labels are not applied by this kubelet",
  },
  Container: {
    name: "string",
    image: "string",
    command: "strings",
    args: "strings",
    workingDir: "string",
    ports: "[Port]",
    env: "[Env]",
    resources: "Resources",
    volumeMounts: "[Mount]",
    livenessProbe: "Probe",
    readinessProbe: "Probe",
    startupProbe: "Probe",
    lifecycle: "Lifecycle",
    terminationMessagePath: "string",
    terminationMessagePolicy: "string",
    imagePullPolicy: "string",
    securityContext: "SecurityContext",
    stdin: "bool",
    stdinOnce: "bool",
    tty: "bool",
    envFrom: "[EnvFrom]",
    volumeDevices: "xvolumeDevices are not supported by this kubelet",
    resizePolicy: "[ResizePolicy]",
    restartPolicy: "string",
  },
  ResizePolicy: { resourceName: "string", restartPolicy: "string" },
  Port: { name: "string", containerPort: "int", hostPort: "int", hostIP: "string", protocol: "string" },
  Env: { name: "string", value: "string", valueFrom: "EnvSource" },
  EnvSource: {
    fieldRef: "FieldRef",
    resourceFieldRef: "ResourceFieldRef",
    configMapKeyRef: "KeyRef",
    secretKeyRef: "KeyRef",
  },
  EnvFrom: { prefix: "string", configMapRef: "OptionalRef", secretRef: "OptionalRef" },
  OptionalRef: { name: "string", optional: "bool" },
  KeyRef: { name: "string", key: "string", optional: "bool" },
  LocalRef: { name: "string" },
  FieldRef: { fieldPath: "string", apiVersion: "string" },
  ResourceFieldRef: { resource: "string", containerName: "string", divisor: "quantity" },
  Resources: {
    limits: "quantities",
    requests: "quantities",
    claims: "!dynamic resource allocation needs an API server and a DRA driver",
  },
  Mount: {
    name: "string",
    mountPath: "string",
    readOnly: "bool",
    subPath: "string",
    subPathExpr: "string",
    mountPropagation: "string",
    recursiveReadOnly: "string",
  },
  Probe: {
    exec: "Exec",
    httpGet: "HttpGet",
    tcpSocket: "TcpSocket",
    grpc: "Grpc",
    initialDelaySeconds: "int",
    periodSeconds: "int",
    timeoutSeconds: "int",
    successThreshold: "int",
    failureThreshold: "int",
    terminationGracePeriodSeconds: "int",
  },
  Lifecycle: {
    postStart: "Handler",
    preStop: "Handler",
    stopSignal: "!containers stop with their image's STOPSIGNAL",
  },
  Handler: { exec: "Exec", httpGet: "HttpGet", tcpSocket: "TcpSocket", sleep: "Sleep" },
  Exec: { command: "strings" },
  HttpGet: { path: "string", port: "intstr", host: "string", scheme: "string", httpHeaders: "[Header]" },
  Header: { name: "string", value: "string" },
  TcpSocket: { port: "intstr", host: "string" },
  Grpc: { port: "intstr", service: "string" },
  Sleep: { seconds: "int" },
  SecurityContext: {
    privileged: "bool",
    runAsUser: "int",
    runAsGroup: "int",
    readOnlyRootFilesystem: "bool",
    capabilities: "Capabilities",
    runAsNonRoot: "bool",
    allowPrivilegeEscalation: "bool",
    seLinuxOptions: "any",
    seccompProfile: "Profile",
    appArmorProfile: "Profile",
    procMount: "string",
    windowsOptions: "!Windows only: this kubelet runs Linux pods",
  },
  Capabilities: { add: "strings", drop: "strings" },
  Profile: { type: "string", localhostProfile: "string" },
  DnsConfig: { nameservers: "strings", searches: "strings", options: "[DnsOption]" },
  DnsOption: { name: "string", value: "string" },
  HostAlias: { ip: "string", hostnames: "strings" },
  PodOS: { name: "string" },
  Affinity: {
    nodeAffinity: "NodeAffinity",
    podAffinity: "!pod affinity places pods beside others across nodes: a scheduler's decision",
    podAntiAffinity: "!pod anti-affinity places pods apart across nodes: a scheduler's decision",
  },
  NodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: "any",
    preferredDuringSchedulingIgnoredDuringExecution:
      "!preferred terms rank nodes for a scheduler; required terms are checked",
  },
  Sysctl: { name: "string", value: "string" },
  Volume: {
    name: "string",
    emptyDir: "EmptyDir",
    hostPath: "HostPath",
    configMap: "ConfigMapVolume",
    secret: "SecretVolume",
    projected: "Projected",
    downwardAPI: "DownwardAPIVolume",
    ...Object.fromEntries(
      [
        "persistentVolumeClaim",
        "nfs",
        "iscsi",
        "csi",
        "ephemeral",
        "gitRepo",
        "image",
        "awsElasticBlockStore",
        "gcePersistentDisk",
        "azureDisk",
        "azureFile",
        "cephfs",
        "cinder",
        "fc",
        "flexVolume",
        "flocker",
        "glusterfs",
        "photonPersistentDisk",
        "portworxVolume",
        "quobyte",
        "rbd",
        "scaleIO",
        "storageos",
        "vsphereVolume",
      ].map((k) => [
        k,
        `x${k} volumes are not supported by a standalone kubelet; use hostPath, emptyDir, configMap, secret, projected or downwardAPI`,
      ]),
    ),
  },
  ConfigMapVolume: { name: "string", items: "[KeyToPath]", defaultMode: "int", optional: "bool" },
  SecretVolume: { secretName: "string", items: "[KeyToPath]", defaultMode: "int", optional: "bool" },
  KeyToPath: { key: "string", path: "string", mode: "int" },
  Projected: { sources: "[ProjectedSource]", defaultMode: "int" },
  ProjectedSource: {
    configMap: "ProjectedRef",
    secret: "ProjectedRef",
    downwardAPI: "DownwardAPIProjection",
    serviceAccountToken:
      "xservice account tokens are issued by an API server, which a standalone kubelet does not have",
    clusterTrustBundle: "xcluster trust bundles live in an API server, which a standalone kubelet does not have",
  },
  ProjectedRef: { name: "string", items: "[KeyToPath]", optional: "bool" },
  DownwardAPIVolume: { items: "[DownwardItem]", defaultMode: "int" },
  DownwardAPIProjection: { items: "[DownwardItem]" },
  DownwardItem: { path: "string", fieldRef: "FieldRef", resourceFieldRef: "ResourceFieldRef", mode: "int" },
  EmptyDir: { medium: "string", sizeLimit: "quantity" },
  HostPath: { path: "string", type: "string" },
};

type Json = Record<string, unknown>;

/**
 * Reports unknown fields (typos: warnings, or errors with `unknown` "error" as under validate --strict), ignored fields (warnings), impossible ones (errors)
 * and values of the wrong type (errors). Iterative, so no input depth can exhaust the stack.
 */
export function checkFields(
  value: unknown,
  type: string,
  path: string,
  issues: FieldIssue[],
  unknown: FieldIssue["severity"] = "warning",
): void {
  const stack: Array<{ value: unknown; type: string; path: string }> = [{ value, type, path }];
  while (stack.length) {
    const next = stack.pop()!;
    const fields = SCHEMA[next.type];
    if (!fields || !isObject(next.value)) continue;
    for (const [key, item] of Object.entries(next.value)) {
      const name = key === "" ? '""' : key;
      const at = next.path ? `${next.path}.${name}` : name;
      const kind = Object.hasOwn(fields, key) ? fields[key] : undefined;
      if (item === undefined || item === null) continue;
      if (kind === undefined) {
        const guess = closestName(key, Object.keys(fields));
        const hint = guess ? `did you mean ${guess}?` : "check the spelling";
        issues.push({
          path: at,
          type: "Unknown field",
          detail:
            unknown === "warning"
              ? `unknown field "${at}" is ignored (${hint})`
              : `unknown field "${at}" (${hint}): fix or remove it, or give --strict=false to ignore it (run: --strict_manifests=false)`,
          severity: unknown,
        });
      } else if (kind.startsWith("!")) {
        issues.push({
          path: at,
          type: "Ignored field",
          detail: kind.slice(1) || "has no effect on a standalone kubelet",
          severity: "warning",
        });
      } else if (kind.startsWith("x")) {
        issues.push({ path: at, type: "Unsupported value", detail: kind.slice(1), severity: "error" });
      } else if (kind.startsWith("[")) {
        if (!Array.isArray(item)) issues.push(wrongType(at, item, "a list"));
        else
          item.forEach((element, i) => {
            if (!isObject(element)) issues.push(wrongType(`${at}[${i}]`, element, "an object"));
            else stack.push({ value: element, type: kind.slice(1, -1), path: `${at}[${i}]` });
          });
      } else if (SCHEMA[kind]) {
        if (!isObject(item)) issues.push(wrongType(at, item, "an object"));
        else stack.push({ value: item, type: kind, path: at });
      } else checkScalar(item, kind, at, issues);
    }
  }
}

const SCALARS: Record<string, { test: (v: unknown) => boolean; expected: string }> = {
  string: { test: (v) => typeof v === "string", expected: "a string" },
  int: { test: (v) => Number.isSafeInteger(v), expected: "an integer" },
  bool: { test: (v) => typeof v === "boolean", expected: "a boolean (true or false)" },
  quantity: { test: (v) => typeof v === "string" || Number.isFinite(v), expected: "a quantity such as 100m or 64Mi" },
  intstr: { test: (v) => typeof v === "string" || Number.isSafeInteger(v), expected: "a port number or name" },
  any: { test: () => true, expected: "" },
};

function checkScalar(value: unknown, kind: string, path: string, issues: FieldIssue[]): void {
  const collection = { strings: "string", ints: "int", labels: "string", quantities: "quantity" }[kind];
  if (collection) {
    const isList = kind === "strings" || kind === "ints";
    if (isList ? !Array.isArray(value) : !isObject(value))
      return void issues.push(wrongType(path, value, isList ? `a list of ${collection}s` : "a map"));
    for (const [key, item] of Object.entries(value as Json)) checkScalar(item, collection, `${path}[${key}]`, issues);
    return;
  }
  const scalar = SCALARS[kind]!;
  if (!scalar.test(value)) issues.push(wrongType(path, value, scalar.expected));
}

/** `spec.containers[0].ports[0].containerPort: Invalid value: "80": must be an integer, not a string`. */
function wrongType(path: string, value: unknown, expected: string): FieldIssue {
  const actual = Array.isArray(value)
    ? "a list"
    : isObject(value)
      ? "a map"
      : typeof value === "number"
        ? String(value)
        : `a ${typeof value}`;
  const hint =
    typeof value === "string" && expected === "an integer" && /^-?\d+$/.test(value)
      ? ` (write ${value} without quotes)`
      : typeof value !== "string" && expected === "a string" && !isObject(value) && !Array.isArray(value)
        ? ` (quote it: "${String(value)}")`
        : "";
  return {
    path,
    type: "Invalid value",
    ...(isObject(value) || Array.isArray(value) || typeof value === "number" ? {} : { value }),
    detail: `must be ${expected}, not ${actual}${hint}`,
    severity: "error",
  };
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
