// The only yaml import: manifest text → pods. Reads v1 Pod, PodList/List, top-level arrays and the
// original v1beta1/v1beta2 ContainerManifest, converts them to the Pod model and applies defaults.
import { createHash } from "node:crypto";
import { parse, parseAllDocuments, stringify } from "yaml";
import { toConfigObject, type ConfigObject } from "./config-objects.ts";
import { ANNOTATION, type FieldIssue, type Pod, type RejectedPod, type SourceName, type V1Container } from "./types.ts";
import { podSpecHash } from "./hash.ts";

/** Where the text came from: stamped on every pod and every rejection. */
export interface ManifestContext {
  source: SourceName;
  /** File path, URL, etcd key, or "-" for stdin. */
  origin: string;
}

export interface ManifestResult {
  pods: Pod[];
  rejected: RejectedPod[];
  /** ConfigMaps and Secrets found beside the pods (not validated: see validateConfigObject). */
  configs: ConfigObject[];
}

/** Parses one YAML (or JSON) document; throws on syntax errors. For configuration files. */
export function parseYaml(text: string): unknown {
  return parse(text, { prettyErrors: true });
}

/** Serialises a value as YAML (print-config, `validate -o yaml`). */
export function stringifyYaml(value: unknown, options: { flow?: boolean } = {}): string {
  return stringify(value, { lineWidth: 0, ...(options.flow ? { collectionStyle: "flow" as const } : {}) });
}

/**
 * `defaultMode: 0644` is octal to Kubernetes (its YAML reader is YAML 1.1) but decimal 644 to YAML 1.2:
 * read a leading-zero integer as octal, so file modes mean what their authors and Kubernetes mean.
 */
const LEGACY_OCTAL = {
  identify: () => false,
  default: true,
  tag: "tag:yaml.org,2002:int",
  format: "OCT",
  test: /^0[0-7]+$/,
  resolve: (text: string) => Number.parseInt(text, 8),
};

type Json = Record<string, unknown>;

/**
 * Parses YAML or JSON text holding one or more manifests into defaulted pods (not validated:
 * see validatePod). Unparsable documents and unsupported kinds come back as rejections.
 */
export function readManifests(text: string, ctx: ManifestContext): ManifestResult {
  const result: ManifestResult = { pods: [], rejected: [], configs: [] };
  const documents = parseAllDocuments(text, {
    prettyErrors: true,
    uniqueKeys: false,
    customTags: (tags) => [LEGACY_OCTAL, ...tags],
  });
  const list = Array.isArray(documents) ? documents : [documents];
  list.forEach((doc, index) => {
    const reject = (issue: FieldIssue, pod?: string, kind?: ConfigObject["kind"]) =>
      result.rejected.push({
        source: ctx.source,
        origin: ctx.origin,
        document: index,
        ...(pod ? { pod } : {}),
        ...(kind ? { kind } : {}),
        issues: [issue],
      });
    if (doc.errors.length > 0) {
      const error = doc.errors[0]!;
      const at = error.linePos?.[0] ? ` at line ${error.linePos[0].line}, column ${error.linePos[0].col}` : "";
      return reject({
        path: "<document>",
        type: "Invalid value",
        detail: `cannot parse YAML/JSON${at}: ${error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")}`,
        severity: "error",
      });
    }
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) return;
    for (const { manifest, path } of flatten(value, "")) {
      if (isObject(manifest) && (manifest.kind === "ConfigMap" || manifest.kind === "Secret")) {
        if (manifest.apiVersion !== "v1")
          reject(
            {
              path: path ? `${path}.apiVersion` : "apiVersion",
              type: "Unsupported value",
              value: manifest.apiVersion ?? "",
              detail: 'supported values: "v1"',
              severity: "error",
            },
            describe(manifest),
            manifest.kind,
          );
        else result.configs.push(toConfigObject(manifest, { ...ctx, document: index }));
        continue;
      }
      const converted = toPod(manifest, path);
      if ("issue" in converted) {
        reject(converted.issue, describe(manifest));
        continue;
      }
      result.pods.push(finish(converted.pod, ctx, index));
    }
  });
  return result;
}

/** Lists and arrays of manifests become their items; everything else is one manifest. */
function* flatten(value: unknown, path: string): Generator<{ manifest: unknown; path: string }> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* flatten(item, `${path}[${i}]`);
    return;
  }
  if (
    isObject(value) &&
    Array.isArray(value.items) &&
    ["PodList", "List", "ContainerManifestList", undefined].includes(value.kind as string | undefined)
  ) {
    for (const [i, item] of value.items.entries()) yield* flatten(item, `${path}items[${i}]`);
    return;
  }
  yield { manifest: value, path };
}

function toPod(manifest: unknown, path: string): { pod: Json } | { issue: FieldIssue } {
  const at = (field: string) => (path ? `${path}.${field}` : field);
  if (!isObject(manifest)) {
    return {
      issue: {
        path: path || "<document>",
        type: "Invalid value",
        value: typeof manifest,
        detail: "expected a Pod manifest (an object)",
        severity: "error",
      },
    };
  }
  const version = manifest.version ?? manifest.apiVersion;
  if (manifest.kind === "Pod") {
    if (manifest.apiVersion !== "v1") {
      return {
        issue: {
          path: at("apiVersion"),
          type: "Unsupported value",
          value: manifest.apiVersion ?? "",
          detail: 'supported values: "v1"',
          severity: "error",
        },
      };
    }
    return { pod: structuredClone(manifest) };
  }
  if (
    manifest.kind === undefined &&
    (version === "v1beta1" || version === "v1beta2") &&
    ("containers" in manifest || "id" in manifest)
  ) {
    return { pod: fromContainerManifest(manifest) };
  }
  if (manifest.kind === undefined) {
    return {
      issue: {
        path: at("kind"),
        type: "Required value",
        detail:
          "a v1 Pod needs `apiVersion: v1` and `kind: Pod` (a v1beta1 ContainerManifest needs `version: v1beta1`)",
        severity: "error",
      },
    };
  }
  return {
    issue: {
      path: at("kind"),
      type: "Unsupported value",
      value: manifest.kind,
      detail:
        "only Pod, PodList, List, ConfigMap, Secret and ContainerManifest (v1beta1/v1beta2) are read by a kubelet",
      severity: "error",
    },
  };
}

const PULL_POLICY: Record<string, string> = {
  PullAlways: "Always",
  PullIfNotPresent: "IfNotPresent",
  PullNever: "Never",
};
const RESTART_POLICY: Record<string, string> = { always: "Always", onFailure: "OnFailure", never: "Never" };

/** The 2014 ContainerManifest → v1 Pod. */
function fromContainerManifest(manifest: Json): Json {
  const containers = (Array.isArray(manifest.containers) ? manifest.containers : []).map((raw: unknown) => {
    if (!isObject(raw)) return raw;
    const { cpu, memory, privileged, imagePullPolicy, env, ...rest } = raw;
    const container: Json = { ...rest };
    if (cpu !== undefined || memory !== undefined) {
      const limits: Json = {};
      if (cpu !== undefined && cpu !== 0) limits.cpu = `${cpu}m`;
      if (memory !== undefined && memory !== 0) limits.memory = String(memory);
      if (Object.keys(limits).length) container.resources = { limits };
    }
    if (privileged !== undefined) container.securityContext = { privileged };
    if (imagePullPolicy !== undefined)
      container.imagePullPolicy = PULL_POLICY[imagePullPolicy as string] ?? imagePullPolicy;
    if (Array.isArray(env))
      container.env = env.map((e: Json) =>
        isObject(e) && e.name === undefined && e.key !== undefined ? { name: e.key, value: e.value } : e,
      );
    return container;
  });
  const volumes = (Array.isArray(manifest.volumes) ? manifest.volumes : []).map((raw: unknown) => {
    if (!isObject(raw)) return raw;
    const { source, ...rest } = raw;
    const volume: Json = { ...rest };
    if (isObject(source)) {
      if (isObject(source.hostDir)) volume.hostPath = { path: source.hostDir.path };
      if (source.emptyDir !== undefined && source.emptyDir !== null) volume.emptyDir = {};
      for (const key of Object.keys(source)) if (key !== "hostDir" && key !== "emptyDir") volume[key] = source[key];
    }
    return volume;
  });
  const spec: Json = { containers };
  if (volumes.length) spec.volumes = volumes;
  if (isObject(manifest.restartPolicy)) {
    const key = Object.keys(manifest.restartPolicy)[0];
    spec.restartPolicy = key ? (RESTART_POLICY[key] ?? key) : "Always";
  }
  if (manifest.hostNetwork !== undefined) spec.hostNetwork = manifest.hostNetwork;
  if (manifest.dnsPolicy !== undefined) spec.dnsPolicy = manifest.dnsPolicy;
  const metadata: Json = { name: manifest.id ?? "" };
  if (manifest.uuid) metadata.uid = manifest.uuid;
  return { apiVersion: "v1", kind: "Pod", metadata, spec };
}

/** Kubernetes defaults, uid and bookkeeping annotations. */
function finish(raw: Json, ctx: ManifestContext, document: number): Pod {
  const metadata = (isObject(raw.metadata) ? raw.metadata : {}) as Json;
  const spec = (isObject(raw.spec) ? raw.spec : {}) as Json;
  const name = typeof metadata.name === "string" ? metadata.name : "";
  const namespace = typeof metadata.namespace === "string" && metadata.namespace ? metadata.namespace : "default";
  spec.restartPolicy ??= "Always";
  spec.dnsPolicy ??= "ClusterFirst";
  spec.terminationGracePeriodSeconds ??= 30;
  for (const list of [spec.initContainers, spec.containers]) {
    if (Array.isArray(list))
      for (const container of list) if (isObject(container)) defaultContainer(container as unknown as V1Container);
  }
  const annotations = isObject(metadata.annotations) ? { ...(metadata.annotations as Record<string, string>) } : {};
  const pod = {
    ...raw,
    apiVersion: "v1",
    kind: "Pod",
    metadata: { ...metadata, name, namespace, uid: "", annotations },
    spec,
  } as unknown as Pod;
  pod.metadata.uid =
    typeof metadata.uid === "string" && metadata.uid ? metadata.uid : stableUid(ctx.source, namespace, name);
  annotations[ANNOTATION.source] = ctx.source;
  annotations[ANNOTATION.origin] = ctx.origin;
  annotations[ANNOTATION.document] = String(document);
  annotations[ANNOTATION.hash] = podSpecHash(pod);
  return pod;
}

function defaultContainer(container: V1Container): void {
  container.imagePullPolicy ??= defaultPullPolicy(container.image ?? "");
  container.terminationMessagePath ??= "/dev/termination-log";
  container.terminationMessagePolicy ??= "File";
  for (const port of container.ports ?? []) if (isObject(port)) port.protocol ??= "TCP";
  for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
    if (!isObject(probe)) continue;
    probe.initialDelaySeconds ??= 0;
    probe.periodSeconds ??= 10;
    probe.timeoutSeconds ??= 1;
    probe.successThreshold ??= 1;
    probe.failureThreshold ??= 3;
    if (isObject(probe.httpGet)) probe.httpGet.scheme ??= "HTTP";
  }
}

/** Kubernetes: Always for `:latest` or no tag, IfNotPresent for any other tag or a digest. */
export function defaultPullPolicy(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent";
  const lastSegment = image.slice(image.lastIndexOf("/") + 1);
  const tag = lastSegment.includes(":") ? lastSegment.slice(lastSegment.indexOf(":") + 1) : "";
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}

/** A uid that stays the same across edits of a pod: derived from source and namespace/name. */
function stableUid(source: string, namespace: string, name: string): string {
  const hex = createHash("sha256").update(`${source}/${namespace}/${name}`).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function describe(manifest: unknown): string | undefined {
  if (!isObject(manifest)) return undefined;
  const meta = isObject(manifest.metadata) ? manifest.metadata : {};
  const name = meta.name ?? manifest.id;
  return typeof name === "string"
    ? `${typeof meta.namespace === "string" ? meta.namespace : "default"}/${name}`
    : undefined;
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
