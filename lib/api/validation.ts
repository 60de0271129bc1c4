// Pure checks of a defaulted pod, with Kubernetes' field paths and wording. Errors stop a pod;
// warnings (fields a standalone kubelet ignores, unknown fields) are reported and the pod runs.
import { configKeyErrors } from "./config-objects.ts";
import { parseQuantity } from "./quantity.ts";
import type { FieldIssue, Pod, V1Container } from "./types.ts";

export interface ValidationOptions {
  allowPrivileged: boolean;
}

// Raw manifest input arrives in any shape, whatever the types say, and these checks are what find
// out: `any` lets them read a field before they know its type (every use checks the type first).
type Json = Record<string, any>;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const FIELD_REFS = [
  "metadata.name",
  "metadata.namespace",
  "metadata.uid",
  "status.hostIP",
  "status.podIP",
  "status.podIPs",
  "spec.nodeName",
  "spec.serviceAccountName",
];

/**
 * Known fields by object type: "" = a scalar or free-form value, a type name = a nested object,
 * "[Type]" = a list of them, "!…" = known but ignored by a standalone kubelet (a warning),
 * "x…" = known but impossible here (an error, with the reason).
 */
const SCHEMA: Record<string, Record<string, string>> = {
  Pod: { apiVersion: "", kind: "", metadata: "Meta", spec: "PodSpec", status: "" },
  Meta: {
    name: "",
    namespace: "",
    uid: "",
    labels: "",
    annotations: "",
    generateName: "!generateName is not applied to static pods",
    ownerReferences: "!",
    finalizers: "!",
    creationTimestamp: "",
    resourceVersion: "",
    generation: "",
    managedFields: "",
    selfLink: "",
    deletionGracePeriodSeconds: "",
    deletionTimestamp: "",
  },
  PodSpec: {
    containers: "[Container]",
    initContainers: "[Container]",
    volumes: "[Volume]",
    restartPolicy: "",
    terminationGracePeriodSeconds: "",
    hostNetwork: "",
    hostPID: "",
    hostIPC: "",
    hostname: "",
    dnsPolicy: "",
    nodeName: "",
    securityContext: "PodSecurityContext",
    subdomain: "!",
    affinity: "!",
    tolerations: "!",
    nodeSelector: "!",
    schedulerName: "!",
    priorityClassName: "!",
    priority: "!",
    preemptionPolicy: "!",
    serviceAccountName: "!",
    serviceAccount: "!",
    automountServiceAccountToken: "!",
    topologySpreadConstraints: "!",
    runtimeClassName: "!",
    overhead: "!",
    enableServiceLinks: "!",
    readinessGates: "!",
    imagePullSecrets: "[LocalRef]",
    dnsConfig: "!",
    hostAliases: "!",
    shareProcessNamespace: "!",
    activeDeadlineSeconds: "!",
    os: "!",
    setHostnameAsFQDN: "!",
    hostUsers: "!",
    schedulingGates: "!",
    resourceClaims: "!",
    resources: "!",
    ephemeralContainers: "xephemeral containers are not supported by this kubelet",
  },
  PodSecurityContext: {
    runAsUser: "",
    runAsGroup: "",
    supplementalGroups: "",
    runAsNonRoot: "!",
    fsGroup: "!",
    fsGroupChangePolicy: "!",
    seLinuxOptions: "!",
    seccompProfile: "!",
    appArmorProfile: "!",
    sysctls: "!",
    windowsOptions: "!",
    supplementalGroupsPolicy: "!",
    seLinuxChangePolicy: "!",
  },
  Container: {
    name: "",
    image: "",
    command: "",
    args: "",
    workingDir: "",
    ports: "[Port]",
    env: "[Env]",
    resources: "Resources",
    volumeMounts: "[Mount]",
    livenessProbe: "Probe",
    readinessProbe: "Probe",
    startupProbe: "Probe",
    lifecycle: "Lifecycle",
    terminationMessagePath: "",
    terminationMessagePolicy: "",
    imagePullPolicy: "",
    securityContext: "SecurityContext",
    stdin: "",
    stdinOnce: "",
    tty: "",
    envFrom: "[EnvFrom]",
    volumeDevices: "xvolumeDevices are not supported by this kubelet",
    resizePolicy: "!",
    restartPolicy: "xsidecar containers (restartPolicy on a container) are not supported by this kubelet",
  },
  Port: { name: "", containerPort: "", hostPort: "", hostIP: "", protocol: "" },
  Env: { name: "", value: "", valueFrom: "EnvSource" },
  EnvSource: {
    fieldRef: "FieldRef",
    resourceFieldRef: "ResourceFieldRef",
    configMapKeyRef: "KeyRef",
    secretKeyRef: "KeyRef",
  },
  EnvFrom: { prefix: "", configMapRef: "OptionalRef", secretRef: "OptionalRef" },
  OptionalRef: { name: "", optional: "" },
  KeyRef: { name: "", key: "", optional: "" },
  LocalRef: { name: "" },
  FieldRef: { fieldPath: "", apiVersion: "" },
  ResourceFieldRef: { resource: "", containerName: "", divisor: "" },
  Resources: { limits: "", requests: "", claims: "!" },
  Mount: {
    name: "",
    mountPath: "",
    readOnly: "",
    subPath: "",
    subPathExpr: "!",
    mountPropagation: "!",
    recursiveReadOnly: "!",
  },
  Probe: {
    exec: "Exec",
    httpGet: "HttpGet",
    tcpSocket: "TcpSocket",
    grpc: "Grpc",
    initialDelaySeconds: "",
    periodSeconds: "",
    timeoutSeconds: "",
    successThreshold: "",
    failureThreshold: "",
    terminationGracePeriodSeconds: "",
  },
  Lifecycle: { postStart: "Handler", preStop: "Handler", stopSignal: "!" },
  Handler: { exec: "Exec", httpGet: "HttpGet", tcpSocket: "TcpSocket", sleep: "Sleep" },
  Exec: { command: "" },
  HttpGet: { path: "", port: "", host: "", scheme: "", httpHeaders: "" },
  TcpSocket: { port: "", host: "" },
  Grpc: { port: "", service: "" },
  Sleep: { seconds: "" },
  SecurityContext: {
    privileged: "",
    runAsUser: "",
    runAsGroup: "",
    readOnlyRootFilesystem: "",
    capabilities: "Capabilities",
    runAsNonRoot: "!",
    allowPrivilegeEscalation: "!",
    seLinuxOptions: "!",
    seccompProfile: "!",
    appArmorProfile: "!",
    procMount: "!",
    windowsOptions: "!",
  },
  Capabilities: { add: "", drop: "" },
  Volume: {
    name: "",
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
  ConfigMapVolume: { name: "", items: "[KeyToPath]", defaultMode: "", optional: "" },
  SecretVolume: { secretName: "", items: "[KeyToPath]", defaultMode: "", optional: "" },
  KeyToPath: { key: "", path: "", mode: "" },
  Projected: { sources: "[ProjectedSource]", defaultMode: "" },
  ProjectedSource: {
    configMap: "ProjectedRef",
    secret: "ProjectedRef",
    downwardAPI: "DownwardAPIProjection",
    serviceAccountToken:
      "xservice account tokens are issued by an API server, which a standalone kubelet does not have",
    clusterTrustBundle: "xcluster trust bundles live in an API server, which a standalone kubelet does not have",
  },
  ProjectedRef: { name: "", items: "[KeyToPath]", optional: "" },
  DownwardAPIVolume: { items: "[DownwardItem]", defaultMode: "" },
  DownwardAPIProjection: { items: "[DownwardItem]" },
  DownwardItem: { path: "", fieldRef: "FieldRef", resourceFieldRef: "ResourceFieldRef", mode: "" },
  EmptyDir: { medium: "", sizeLimit: "" },
  HostPath: { path: "", type: "" },
};
const VOLUME_SOURCES = Object.keys(SCHEMA.Volume!).filter((k) => k !== "name");
const HOST_PATH_TYPES = [
  "",
  "DirectoryOrCreate",
  "Directory",
  "FileOrCreate",
  "File",
  "Socket",
  "CharDevice",
  "BlockDevice",
];

/** Every problem with a pod: errors (the pod cannot run) and warnings (it runs, something is ignored). */
export function validatePod(pod: Pod, options: ValidationOptions): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const error = (path: string, type: string, value?: unknown, detail?: string) =>
    issues.push({
      path,
      type,
      ...(value !== undefined ? { value } : {}),
      ...(detail ? { detail } : {}),
      severity: "error",
    });

  checkFields(pod as unknown as Json, "Pod", "", issues);
  const { metadata, spec } = pod;
  if (!metadata.name) error("metadata.name", "Required value", undefined, "name or generateName is required");
  else if (metadata.name.length > 253) error("metadata.name", "Too long", undefined, "must have at most 253 bytes");
  else if (!DNS1123_SUBDOMAIN.test(metadata.name))
    error("metadata.name", "Invalid value", metadata.name, SUBDOMAIN_MSG);
  if (metadata.namespace.length > 63 || !DNS1123_LABEL.test(metadata.namespace))
    error("metadata.namespace", "Invalid value", metadata.namespace, LABEL_MSG);
  for (const [key, value] of Object.entries(metadata.labels ?? {})) {
    if (typeof value !== "string" || value.length > 63 || !LABEL_VALUE.test(value)) {
      error(
        `metadata.labels`,
        "Invalid value",
        value,
        `label "${key}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      );
    }
  }
  if (!["Always", "OnFailure", "Never"].includes(spec.restartPolicy ?? "")) {
    error(
      "spec.restartPolicy",
      "Unsupported value",
      spec.restartPolicy,
      'supported values: "Always", "OnFailure", "Never"',
    );
  }
  if (!["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"].includes(spec.dnsPolicy ?? "")) {
    error(
      "spec.dnsPolicy",
      "Unsupported value",
      spec.dnsPolicy,
      'supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"',
    );
  }
  if (typeof spec.terminationGracePeriodSeconds !== "number" || spec.terminationGracePeriodSeconds < 0) {
    error(
      "spec.terminationGracePeriodSeconds",
      "Invalid value",
      spec.terminationGracePeriodSeconds,
      "must be greater than or equal to 0",
    );
  }
  if (spec.hostname !== undefined && !DNS1123_LABEL.test(spec.hostname))
    error("spec.hostname", "Invalid value", spec.hostname, LABEL_MSG);

  const volumeNames = checkVolumes(spec.volumes ?? [], error);
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) error("spec.containers", "Required value");
  const names = new Set<string>();
  const hostPorts = new Set<string>();
  const groups: Array<[string, V1Container[]]> = [
    ["spec.initContainers", spec.initContainers ?? []],
    ["spec.containers", spec.containers ?? []],
  ];
  for (const [base, containers] of groups) {
    containers.forEach((container, i) => {
      const path = `${base}[${i}]`;
      if (!container.name) error(`${path}.name`, "Required value");
      else if (container.name.length > 63 || !DNS1123_LABEL.test(container.name))
        error(`${path}.name`, "Invalid value", container.name, LABEL_MSG);
      else if (names.has(container.name)) error(`${path}.name`, "Duplicate value", container.name);
      else names.add(container.name);
      checkContainer(
        container,
        path,
        {
          init: base === "spec.initContainers",
          hostNetwork: spec.hostNetwork === true,
          volumeNames,
          hostPorts,
          options,
        },
        error,
      );
    });
  }
  return issues;
}

/** Kubernetes' IsEnvVarName. */
export function isEnvVarName(name: string): boolean {
  return ENV_NAME.test(name);
}

type ErrorFn = (path: string, type: string, value?: unknown, detail?: string) => void;

function checkVolumes(volumes: Json[], error: ErrorFn): Set<string> {
  const names = new Set<string>();
  volumes.forEach((volume, i) => {
    const path = `spec.volumes[${i}]`;
    if (!volume.name) error(`${path}.name`, "Required value");
    else if (volume.name.length > 63 || !DNS1123_LABEL.test(volume.name))
      error(`${path}.name`, "Invalid value", volume.name, LABEL_MSG);
    else if (names.has(volume.name)) error(`${path}.name`, "Duplicate value", volume.name);
    else names.add(volume.name);
    const sources = VOLUME_SOURCES.filter((k) => volume[k] !== undefined && volume[k] !== null);
    if (sources.length === 0) error(path, "Required value", undefined, "must specify a volume type");
    else if (sources.length > 1)
      error(`${path}.${sources[1]}`, "Forbidden", undefined, "may not specify more than 1 volume type");
    if (volume.hostPath) {
      const hostPath = volume.hostPath as Json;
      if (!hostPath.path) error(`${path}.hostPath.path`, "Required value");
      else if (!String(hostPath.path).startsWith("/"))
        error(`${path}.hostPath.path`, "Invalid value", hostPath.path, "must be an absolute path");
      if (!HOST_PATH_TYPES.includes(hostPath.type ?? "")) {
        error(
          `${path}.hostPath.type`,
          "Unsupported value",
          hostPath.type,
          `supported values: ${HOST_PATH_TYPES.map((t) => JSON.stringify(t)).join(", ")}`,
        );
      }
    }
    checkConfigVolume(volume, path, error);
    if (volume.emptyDir) {
      const emptyDir = volume.emptyDir as Json;
      if (!["", "Memory", undefined].includes(emptyDir.medium))
        error(`${path}.emptyDir.medium`, "Unsupported value", emptyDir.medium, 'supported values: "", "Memory"');
      if (emptyDir.sizeLimit !== undefined && !(parseQuantity(emptyDir.sizeLimit)! > 0)) {
        error(
          `${path}.emptyDir.sizeLimit`,
          "Invalid value",
          emptyDir.sizeLimit,
          "must be a positive quantity such as 64Mi",
        );
      }
    }
  });
  return names;
}

const DOWNWARD_VOLUME_FIELDS = [
  "metadata.name",
  "metadata.namespace",
  "metadata.uid",
  "metadata.labels",
  "metadata.annotations",
];
const MODE_MSG = "must be a number between 0 and 0777 (octal), both inclusive";

/** configMap, secret, projected and downwardAPI volumes: names, items, paths and modes. */
function checkConfigVolume(volume: Json, path: string, error: ErrorFn): void {
  const checkMode = (value: unknown, at: string) => {
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0o777))
      error(at, "Invalid value", value, MODE_MSG);
  };
  const paths = new Set<string>();
  const checkPath = (value: unknown, at: string) => {
    if (!value) return error(at, "Required value");
    const text = String(value);
    if (text.startsWith("/")) error(at, "Invalid value", text, "must be a relative path");
    else if (text.split("/").includes("..")) error(at, "Invalid value", text, "must not contain '..'");
    else if (text.startsWith("..")) error(at, "Invalid value", text, "must not start with '..'");
    else if (paths.has(text)) error(at, "Invalid value", text, "conflicting duplicate paths");
    paths.add(text);
  };
  const checkItems = (items: unknown, at: string) => {
    if (!Array.isArray(items)) return;
    items.forEach((item: Json, i: number) => {
      const p = `${at}.items[${i}]`;
      if (!item.key) error(`${p}.key`, "Required value");
      else
        for (const message of configKeyErrors(String(item.key))) error(`${p}.key`, "Invalid value", item.key, message);
      checkPath(item.path, `${p}.path`);
      checkMode(item.mode, `${p}.mode`);
    });
  };
  const checkDownward = (items: unknown, at: string) => {
    if (!Array.isArray(items)) return;
    items.forEach((item: Json, i: number) => {
      const p = `${at}.items[${i}]`;
      checkPath(item.path, `${p}.path`);
      checkMode(item.mode, `${p}.mode`);
      const fieldPath = item.fieldRef?.fieldPath;
      if (item.fieldRef && item.resourceFieldRef)
        error(p, "Invalid value", "", "fieldRef and resourceFieldRef can not be specified simultaneously");
      else if (!item.fieldRef && !item.resourceFieldRef)
        error(p, "Required value", undefined, "one of fieldRef and resourceFieldRef is required");
      if (
        item.fieldRef &&
        !DOWNWARD_VOLUME_FIELDS.includes(fieldPath ?? "") &&
        !/^metadata\.(labels|annotations)\['[^']+'\]$/.test(fieldPath ?? "")
      )
        error(
          `${p}.fieldRef.fieldPath`,
          "Unsupported value",
          fieldPath,
          `supported values: ${DOWNWARD_VOLUME_FIELDS.map((f) => JSON.stringify(f)).join(", ")}, metadata.labels['<KEY>'], metadata.annotations['<KEY>']`,
        );
      if (item.resourceFieldRef && !item.resourceFieldRef.containerName)
        error(`${p}.resourceFieldRef.containerName`, "Required value");
    });
  };
  if (volume.configMap) {
    if (!volume.configMap.name) error(`${path}.configMap.name`, "Required value");
    checkItems(volume.configMap.items, `${path}.configMap`);
    checkMode(volume.configMap.defaultMode, `${path}.configMap.defaultMode`);
  }
  if (volume.secret) {
    if (!volume.secret.secretName) error(`${path}.secret.secretName`, "Required value");
    checkItems(volume.secret.items, `${path}.secret`);
    checkMode(volume.secret.defaultMode, `${path}.secret.defaultMode`);
  }
  if (volume.downwardAPI) {
    checkDownward(volume.downwardAPI.items, `${path}.downwardAPI`);
    checkMode(volume.downwardAPI.defaultMode, `${path}.downwardAPI.defaultMode`);
  }
  if (volume.projected) {
    checkMode(volume.projected.defaultMode, `${path}.projected.defaultMode`);
    (Array.isArray(volume.projected.sources) ? volume.projected.sources : []).forEach((source: Json, i: number) => {
      const at = `${path}.projected.sources[${i}]`;
      const kinds = ["configMap", "secret", "downwardAPI", "serviceAccountToken", "clusterTrustBundle"].filter(
        (k) => source[k] !== undefined && source[k] !== null,
      );
      if (kinds.length === 0) error(at, "Required value", undefined, "must specify exactly 1 volume type");
      else if (kinds.length > 1)
        error(`${at}.${kinds[1]}`, "Forbidden", undefined, "may not specify more than 1 volume type");
      for (const kind of ["configMap", "secret"] as const) {
        if (!source[kind]) continue;
        if (!source[kind].name) error(`${at}.${kind}.name`, "Required value");
        checkItems(source[kind].items, `${at}.${kind}`);
      }
      if (source.downwardAPI) checkDownward(source.downwardAPI.items, `${at}.downwardAPI`);
    });
  }
}

interface ContainerContext {
  init: boolean;
  hostNetwork: boolean;
  volumeNames: Set<string>;
  hostPorts: Set<string>;
  options: ValidationOptions;
}

function checkContainer(c: V1Container, path: string, ctx: ContainerContext, error: ErrorFn): void {
  if (!c.image || !String(c.image).trim()) error(`${path}.image`, "Required value");
  if (!["Always", "IfNotPresent", "Never"].includes(c.imagePullPolicy ?? "")) {
    error(
      `${path}.imagePullPolicy`,
      "Unsupported value",
      c.imagePullPolicy,
      'supported values: "Always", "IfNotPresent", "Never"',
    );
  }
  for (const field of ["command", "args"] as const) {
    if (c[field] !== undefined && (!Array.isArray(c[field]) || c[field]!.some((x) => typeof x !== "string"))) {
      error(`${path}.${field}`, "Invalid value", c[field], "must be a list of strings");
    }
  }
  const portNames = new Set<string>();
  (c.ports ?? []).forEach((port, j) => {
    const p = `${path}.ports[${j}]`;
    if (!isPort(port.containerPort))
      error(
        `${p}.containerPort`,
        port.containerPort === undefined ? "Required value" : "Invalid value",
        port.containerPort,
        port.containerPort === undefined ? undefined : "must be between 1 and 65535, inclusive",
      );
    if (port.hostPort !== undefined && port.hostPort !== 0 && !isPort(port.hostPort))
      error(`${p}.hostPort`, "Invalid value", port.hostPort, "must be between 1 and 65535, inclusive");
    if (!["TCP", "UDP", "SCTP"].includes(port.protocol ?? ""))
      error(`${p}.protocol`, "Unsupported value", port.protocol, 'supported values: "SCTP", "TCP", "UDP"');
    if (port.name !== undefined) {
      if (!isSvcName(port.name))
        error(
          `${p}.name`,
          "Invalid value",
          port.name,
          "must be no more than 15 characters, contain only lowercase alphanumerics and '-', contain at least one letter, and not start or end with '-' or contain '--'",
        );
      else if (portNames.has(port.name)) error(`${p}.name`, "Duplicate value", port.name);
      else portNames.add(port.name);
    }
    if (ctx.hostNetwork && port.hostPort && port.hostPort !== port.containerPort) {
      error(`${p}.hostPort`, "Invalid value", port.hostPort, "must match `containerPort` when `hostNetwork` is true");
    }
    const hostPort = ctx.hostNetwork ? port.containerPort : port.hostPort;
    if (hostPort) {
      const key = `${hostPort}/${port.protocol}`;
      if (ctx.hostPorts.has(key)) error(`${p}.hostPort`, "Duplicate value", key);
      ctx.hostPorts.add(key);
    }
  });
  const envNames: string[] = [];
  (c.env ?? []).forEach((env, j) => {
    const p = `${path}.env[${j}]`;
    if (!env.name) error(`${p}.name`, "Required value");
    else if (!ENV_NAME.test(env.name))
      error(
        `${p}.name`,
        "Invalid value",
        env.name,
        "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
      );
    envNames.push(env.name);
    if (env.valueFrom) {
      if (env.value !== undefined && env.value !== "")
        error(`${p}.valueFrom`, "Invalid value", "", "may not be specified when `value` is not empty");
      const sources = Object.keys(env.valueFrom);
      if (sources.length !== 1)
        error(`${p}.valueFrom`, "Invalid value", "", "may not have more than one field specified at a time");
      const fieldPath = env.valueFrom.fieldRef?.fieldPath;
      if (
        env.valueFrom.fieldRef &&
        !FIELD_REFS.includes(fieldPath ?? "") &&
        !/^metadata\.(labels|annotations)\['[^']+'\]$/.test(fieldPath ?? "")
      ) {
        error(
          `${p}.valueFrom.fieldRef.fieldPath`,
          "Unsupported value",
          fieldPath,
          `supported values: ${FIELD_REFS.map((f) => JSON.stringify(f)).join(", ")}, metadata.labels['<KEY>'], metadata.annotations['<KEY>']`,
        );
      }
      for (const kind of ["configMapKeyRef", "secretKeyRef"] as const) {
        const ref = env.valueFrom[kind];
        if (!ref) continue;
        if (!ref.name) error(`${p}.valueFrom.${kind}.name`, "Required value");
        if (!ref.key) error(`${p}.valueFrom.${kind}.key`, "Required value");
        else
          for (const message of configKeyErrors(ref.key))
            error(`${p}.valueFrom.${kind}.key`, "Invalid value", ref.key, message);
      }
      const resource = env.valueFrom.resourceFieldRef?.resource;
      if (
        env.valueFrom.resourceFieldRef &&
        !["limits.cpu", "limits.memory", "requests.cpu", "requests.memory"].includes(resource ?? "")
      ) {
        error(
          `${p}.valueFrom.resourceFieldRef.resource`,
          "Unsupported value",
          resource,
          'supported values: "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"',
        );
      }
    }
  });
  (c.envFrom ?? []).forEach((source, j) => {
    const p = `${path}.envFrom[${j}]`;
    const kinds = (["configMapRef", "secretRef"] as const).filter((k) => source[k]);
    if (kinds.length === 0) error(p, "Required value", undefined, "one of configMapRef or secretRef is required");
    else if (kinds.length > 1) error(p, "Invalid value", "", "may not have more than one field specified at a time");
    for (const kind of kinds) if (!source[kind]!.name) error(`${p}.${kind}.name`, "Required value");
    if (source.prefix && !ENV_NAME.test(source.prefix))
      error(
        `${p}.prefix`,
        "Invalid value",
        source.prefix,
        "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
      );
  });
  const mountPaths = new Set<string>();
  (c.volumeMounts ?? []).forEach((mount, j) => {
    const p = `${path}.volumeMounts[${j}]`;
    if (!mount.name) error(`${p}.name`, "Required value");
    else if (!ctx.volumeNames.has(mount.name)) error(`${p}.name`, "Not found", mount.name);
    if (!mount.mountPath) error(`${p}.mountPath`, "Required value");
    else if (!mount.mountPath.startsWith("/"))
      error(`${p}.mountPath`, "Invalid value", mount.mountPath, "must be an absolute path");
    else if (mountPaths.has(mount.mountPath))
      error(`${p}.mountPath`, "Invalid value", mount.mountPath, "must be unique");
    else mountPaths.add(mount.mountPath);
    if (mount.subPath && (mount.subPath.startsWith("/") || mount.subPath.split("/").includes(".."))) {
      error(`${p}.subPath`, "Invalid value", mount.subPath, "must be a relative path without '..'");
    }
  });
  for (const kind of ["livenessProbe", "readinessProbe", "startupProbe"] as const) {
    const probe = c[kind];
    if (!probe) continue;
    if (ctx.init) {
      error(`${path}.${kind}`, "Forbidden", undefined, "may not be set for init containers");
      continue;
    }
    checkHandler(probe as Json, `${path}.${kind}`, ["exec", "httpGet", "tcpSocket", "grpc"], portNames, error);
    for (const field of [
      "initialDelaySeconds",
      "periodSeconds",
      "timeoutSeconds",
      "successThreshold",
      "failureThreshold",
    ] as const) {
      const value = probe[field];
      const min = field === "initialDelaySeconds" ? 0 : 1;
      if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
        error(`${path}.${kind}.${field}`, "Invalid value", value, `must be greater than or equal to ${min}`);
      }
    }
    if (kind !== "readinessProbe" && probe.successThreshold !== 1)
      error(`${path}.${kind}.successThreshold`, "Invalid value", probe.successThreshold, "must be 1");
  }
  for (const hook of ["postStart", "preStop"] as const) {
    const handler = c.lifecycle?.[hook];
    if (!handler) continue;
    if (ctx.init) error(`${path}.lifecycle`, "Forbidden", undefined, "may not be set for init containers");
    else
      checkHandler(
        handler as Json,
        `${path}.lifecycle.${hook}`,
        ["exec", "httpGet", "tcpSocket", "sleep"],
        portNames,
        error,
      );
  }
  checkResources(c, path, error);
  const security = c.securityContext;
  if (security?.privileged && !ctx.options.allowPrivileged) {
    error(
      `${path}.securityContext.privileged`,
      "Forbidden",
      undefined,
      "disallowed by cluster policy (start the kubelet with --allow_privileged to allow it)",
    );
  }
  for (const field of ["runAsUser", "runAsGroup"] as const) {
    const value = security?.[field];
    if (value !== undefined && (!Number.isInteger(value) || value < 0))
      error(`${path}.securityContext.${field}`, "Invalid value", value, "must be between 0 and 2147483647, inclusive");
  }
}

function checkHandler(handler: Json, path: string, kinds: string[], portNames: Set<string>, error: ErrorFn): void {
  const present = kinds.filter((k) => handler[k] !== undefined && handler[k] !== null);
  if (present.length === 0) return error(path, "Required value", undefined, "must specify a handler type");
  if (present.length > 1)
    return error(`${path}.${present[1]}`, "Forbidden", undefined, "may not specify more than 1 handler type");
  const kind = present[0]!;
  const body = handler[kind] as Json;
  if (kind === "exec" && (!Array.isArray(body.command) || body.command.length === 0))
    error(`${path}.exec.command`, "Required value");
  if (kind === "sleep" && !(Number.isInteger(body.seconds) && body.seconds >= 0))
    error(`${path}.sleep.seconds`, "Invalid value", body.seconds, "must be greater than or equal to 0");
  if (kind === "grpc") {
    if (body.port === undefined) error(`${path}.grpc.port`, "Required value");
    else if (!isPort(body.port))
      error(
        `${path}.grpc.port`,
        "Invalid value",
        body.port,
        typeof body.port === "string" && !/^\d+$/.test(body.port)
          ? "must be a port number (gRPC probes take no named ports)"
          : "must be between 1 and 65535, inclusive",
      );
  }
  if (kind === "httpGet" || kind === "tcpSocket") {
    const port = body.port;
    const ok =
      typeof port === "number"
        ? isPort(port)
        : typeof port === "string" && (/^\d+$/.test(port) ? isPort(Number(port)) : portNames.has(port));
    if (port === undefined) error(`${path}.${kind}.port`, "Required value");
    else if (!ok)
      error(
        `${path}.${kind}.port`,
        "Invalid value",
        port,
        typeof port === "string" && !/^\d+$/.test(port)
          ? "must be a port number or the name of a port of this container"
          : "must be between 1 and 65535, inclusive",
      );
  }
  if (kind === "httpGet" && !["HTTP", "HTTPS"].includes(body.scheme ?? "HTTP"))
    error(`${path}.httpGet.scheme`, "Unsupported value", body.scheme, 'supported values: "HTTP", "HTTPS"');
}

function checkResources(c: V1Container, path: string, error: ErrorFn): void {
  const values: Record<string, Record<string, number>> = { limits: {}, requests: {} };
  for (const kind of ["limits", "requests"] as const) {
    for (const [name, raw] of Object.entries(c.resources?.[kind] ?? {})) {
      const value = parseQuantity(raw as string | number);
      if (value === undefined || value < 0) {
        error(
          `${path}.resources.${kind}[${name}]`,
          "Invalid value",
          raw,
          "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        );
      } else if (!["cpu", "memory", "ephemeral-storage"].includes(name) && !name.startsWith("hugepages-")) {
        error(`${path}.resources.${kind}[${name}]`, "Unsupported value", name, 'supported values: "cpu", "memory"');
      } else values[kind]![name] = value;
    }
  }
  for (const [name, request] of Object.entries(values.requests!)) {
    const limit = values.limits![name];
    if (limit !== undefined && request > limit) {
      error(
        `${path}.resources.requests`,
        "Invalid value",
        String(c.resources!.requests![name]),
        `must be less than or equal to ${name} limit of ${c.resources!.limits![name]}`,
      );
    }
  }
}

/** Reports unknown fields (typos), ignored fields (warnings) and impossible ones (errors). */
function checkFields(value: Json, type: string, path: string, issues: FieldIssue[]): void {
  const fields = SCHEMA[type];
  // A type name the table does not define is a bug in the table, not in the manifest: say so.
  if (!fields) throw new Error(`validation schema: no type named ${JSON.stringify(type)} (at ${path})`);
  if (typeof value !== "object" || value === null) return;
  for (const key of Object.keys(value)) {
    const at = path ? `${path}.${key}` : key;
    const kind = fields[key];
    if (value[key] === undefined || value[key] === null) continue;
    if (kind === undefined) {
      issues.push({
        path: at,
        type: "Unknown field",
        detail: `unknown field "${at}" is ignored (check the spelling)`,
        severity: "warning",
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
      const inner = kind.slice(1, -1);
      if (Array.isArray(value[key]))
        value[key].forEach((item: Json, i: number) => checkFields(item, inner, `${at}[${i}]`, issues));
      else issues.push({ path: at, type: "Invalid value", detail: "must be a list", severity: "error" });
    } else if (kind) {
      checkFields(value[key], kind, at, issues);
    }
  }
}

function isPort(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}

function isSvcName(name: string): boolean {
  return name.length <= 15 && IANA_SVC_NAME.test(name) && /[a-z]/.test(name) && !name.includes("--");
}
