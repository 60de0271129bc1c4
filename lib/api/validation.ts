// Pure checks of a defaulted pod, with Kubernetes' field paths and wording. Errors stop a pod;
// warnings (fields a standalone kubelet ignores, unknown fields) are reported and the pod runs.
import { configKeyErrors } from "./config-objects.ts";
import { checkLengths } from "./field-limits.ts";
import { checkHostPathSafety, type HostPathPolicy } from "./host-paths.ts";
import { parseQuantity } from "./quantity.ts";
import { checkFields, SCHEMA } from "./schema.ts";
import { checkSecurity } from "./security-validation.ts";
import {
  ANNOTATION,
  CONTAINER_MANIFEST,
  fieldError,
  isSidecar,
  type FieldIssue,
  type Pod,
  type V1Container,
} from "./types.ts";

export interface ValidationOptions extends HostPathPolicy {
  allowPrivileged: boolean;
  /** An unknown field is an error (validate's default, as kubectl's strict decoding); else a warning (`run --strict_manifests=false`). */
  strict?: boolean;
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
  checkFields(pod, "Pod", "", issues, options.strict ? "error" : "warning");
  // Every check below assumes the shapes the schema describes: they see the pod without its wrongly typed
  // fields (so one type error hides none of the other errors), and say nothing more about those fields.
  const wrong = issues.filter((i) => i.severity === "error" && i.type === "Invalid value");
  if (wrong.length) {
    const rest = semanticIssues(withoutFields(pod, wrong), options);
    return [...issues, ...rest.filter((i) => !wrong.some((w) => within(i.path, w.path)))];
  }
  return [...issues, ...semanticIssues(pod, options)];
}

/** The checks after the schema's, on a pod of the right shapes. */
function semanticIssues(pod: Pod, options: ValidationOptions): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const error = (...issue: Parameters<typeof fieldError>) => issues.push(fieldError(...issue));
  const lengths = checkLengths(pod);
  issues.push(...lengths);
  if (lengths.length) return issues; // a 5 MB name is not worth matching against a regex
  issues.push(...checkHostPathSafety(pod, options));
  const { metadata, spec } = pod;
  if (!metadata.name) error("metadata.name", "Required value", undefined, "name or generateName is required");
  else if (!DNS1123_SUBDOMAIN.test(metadata.name))
    error("metadata.name", "Invalid value", metadata.name, SUBDOMAIN_MSG);
  if (!DNS1123_LABEL.test(metadata.namespace))
    error("metadata.namespace", "Invalid value", metadata.namespace, LABEL_MSG);
  for (const [key, value] of Object.entries(metadata.labels ?? {})) {
    if (!LABEL_VALUE.test(value)) {
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
  // The 2014 format allowed a manifest without containers (the pod is then just its network).
  const containerless = metadata.annotations[ANNOTATION.format] === CONTAINER_MANIFEST;
  if (!Array.isArray(spec.containers) || (spec.containers.length === 0 && !containerless))
    error("spec.containers", "Required value");
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
      else if (!DNS1123_LABEL.test(container.name)) error(`${path}.name`, "Invalid value", container.name, LABEL_MSG);
      else if (names.has(container.name)) error(`${path}.name`, "Duplicate value", container.name);
      else names.add(container.name);
      checkContainer(
        container,
        path,
        {
          init: base === "spec.initContainers",
          podRestartPolicy: spec.restartPolicy,
          hostNetwork: spec.hostNetwork === true,
          volumeNames,
          hostPorts,
          options,
        },
        error,
      );
    });
  }
  checkSecurity(pod, error);
  return issues;
}

/**
 * A copy of the pod without its wrongly typed fields. An item of a list of objects becomes `{}` (the
 * indexes of the others stay right); an item of a list of scalars goes (last first, for the same reason).
 */
function withoutFields(pod: Pod, wrong: FieldIssue[]): Pod {
  const copy = structuredClone(pod) as unknown as Json;
  for (const issue of [...wrong].reverse()) {
    const steps = [...issue.path.matchAll(/\[([^\]]*)\]|[^.[\]]+/g)].map((m) => m[1] ?? m[0]);
    let parent: Json | undefined = copy;
    for (const step of steps.slice(0, -1)) parent = parent?.[step];
    const last = steps.at(-1)!;
    if (!Array.isArray(parent)) delete parent?.[last];
    else if (issue.detail?.startsWith("must be an object")) parent[Number(last)] = {};
    else parent.splice(Number(last), 1);
  }
  return copy as unknown as Pod;
}

/** Whether `path` is `field` or a field under it. */
function within(path: string, field: string): boolean {
  return path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`);
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
    else if (!DNS1123_LABEL.test(volume.name)) error(`${path}.name`, "Invalid value", volume.name, LABEL_MSG);
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
    if (value !== undefined && !((value as number) >= 0 && (value as number) <= 0o777))
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
  /** The pod's restartPolicy. */
  podRestartPolicy?: string;
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
  checkRestartPolicies(c, path, ctx, error);
  // A sidecar (restartPolicy Always) takes probes and hooks as an app container does; other init containers none.
  const plainInit = ctx.init && !isSidecar(c);
  for (const kind of ["livenessProbe", "readinessProbe", "startupProbe"] as const) {
    const probe = c[kind];
    if (!probe) continue;
    if (plainInit) {
      error(`${path}.${kind}`, "Forbidden", undefined, INIT_ONLY_SIDECARS);
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
    if (plainInit) error(`${path}.lifecycle`, "Forbidden", undefined, INIT_ONLY_SIDECARS);
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
    if (value !== undefined && value < 0)
      error(`${path}.securityContext.${field}`, "Invalid value", value, "must be between 0 and 2147483647, inclusive");
  }
}

/** Upstream's words for a field only sidecars may have among init containers. */
const INIT_ONLY_SIDECARS = "may not be set for init containers without restartPolicy=Always";

/**
 * A container's restartPolicy (only `Always`, only on init containers: a sidecar) and its resizePolicy (cpu and
 * memory, each once, NotRequired or RestartContainer; RestartContainer not under the pod's restartPolicy Never).
 */
function checkRestartPolicies(c: V1Container, path: string, ctx: ContainerContext, error: ErrorFn): void {
  if (c.restartPolicy !== undefined) {
    if (!ctx.init) error(`${path}.restartPolicy`, "Forbidden", undefined, "may not be set for non-init containers");
    else if (c.restartPolicy !== "Always")
      error(`${path}.restartPolicy`, "Unsupported value", c.restartPolicy, 'supported values: "Always"');
  }
  if (!c.resizePolicy) return;
  if (ctx.init && !isSidecar(c))
    return error(`${path}.resizePolicy`, "Invalid value", c.resizePolicy, "must not be set for init containers");
  const seen = new Set<string>();
  c.resizePolicy.forEach((policy, j) => {
    const p = `${path}.resizePolicy[${j}]`;
    if (!["cpu", "memory"].includes(policy.resourceName))
      error(`${p}.resourceName`, "Unsupported value", policy.resourceName, 'supported values: "cpu", "memory"');
    else if (seen.has(policy.resourceName)) error(`${p}.resourceName`, "Duplicate value", policy.resourceName);
    seen.add(policy.resourceName);
    if (!["NotRequired", "RestartContainer"].includes(policy.restartPolicy))
      error(
        `${p}.restartPolicy`,
        "Unsupported value",
        policy.restartPolicy,
        'supported values: "NotRequired", "RestartContainer"',
      );
    else if (policy.restartPolicy === "RestartContainer" && ctx.podRestartPolicy === "Never")
      error(
        `${p}.restartPolicy`,
        "Invalid value",
        policy.restartPolicy,
        "must be 'NotRequired' when `restartPolicy` is 'Never'",
      );
  });
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
      } else if (isExtendedResourceName(name)) {
        // A device plugin's resource (example.com/widget) is counted in whole devices, never overcommitted.
        if (!Number.isInteger(value))
          error(`${path}.resources.${kind}[${name}]`, "Invalid value", String(raw), "must be an integer");
        else values[kind]![name] = value;
      } else if (!["cpu", "memory", "ephemeral-storage"].includes(name) && !name.startsWith("hugepages-")) {
        error(`${path}.resources.${kind}[${name}]`, "Unsupported value", name, 'supported values: "cpu", "memory"');
      } else values[kind]![name] = value;
    }
  }
  for (const [name, request] of Object.entries(values.requests!)) {
    if (!isExtendedResourceName(name)) continue;
    const limit = values.limits![name];
    if (limit === undefined)
      error(
        `${path}.resources.limits`,
        "Required value",
        undefined,
        "Limit must be set for non overcommitable resources",
      );
    else if (limit !== request)
      error(
        `${path}.resources.requests[${name}]`,
        "Invalid value",
        String(c.resources!.requests![name]),
        `must be equal to ${name} limit of ${c.resources!.limits![name]}`,
      );
  }
  for (const [name, request] of Object.entries(values.requests!)) {
    const limit = values.limits![name];
    if (limit !== undefined && request > limit && !isExtendedResourceName(name)) {
      error(
        `${path}.resources.requests`,
        "Invalid value",
        String(c.resources!.requests![name]),
        `must be less than or equal to ${name} limit of ${c.resources!.limits![name]}`,
      );
    }
  }
}

function isPort(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}

function isSvcName(name: string): boolean {
  return name.length <= 15 && IANA_SVC_NAME.test(name) && /[a-z]/.test(name) && !name.includes("--");
}

/**
 * An extended resource name (v1helper.IsExtendedResourceName): domain-qualified, outside the kubernetes.io
 * domains and not a quota "requests." name, as device plugins advertise them (example.com/widget, nvidia.com/gpu).
 */
export function isExtendedResourceName(name: string): boolean {
  const slash = name.indexOf("/");
  if (slash <= 0 || name.startsWith("requests.")) return false;
  const domain = name.slice(0, slash);
  if (domain === "kubernetes.io" || domain.endsWith(".kubernetes.io")) return false;
  return (
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(domain) &&
    /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name.slice(slash + 1))
  );
}
