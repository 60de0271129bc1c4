// The only yaml import: manifest text → pods. Reads v1 Pod, PodList/List, top-level arrays and the
// original v1beta1/v1beta2 ContainerManifest, converts them to the Pod model and applies defaults.
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parse, parseAllDocuments, stringify } from "yaml";
import type { Document, Node as YamlNode } from "yaml";
import {
  DEFAULT_MAX_MANIFEST_BYTES,
  decodeManifestText,
  MAX_MANIFEST_DEPTH,
  tooDeep,
  unparsable,
  yamlErrorPlace,
} from "./manifest-text.ts";
import {
  ANNOTATION,
  CONTAINER_MANIFEST,
  type FieldIssue,
  type Pod,
  type RejectedPod,
  type SourceName,
  type V1Container,
} from "./types.ts";
import { toConfigObject, type ConfigObject } from "./config-objects.ts";
import { podSpecHash } from "./hash.ts";
import { sourceUid } from "./pod-uid.ts";

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

/** Limits on manifest input; the same at every door (file, URL, etcd, pushes, `validate`). */
export interface ManifestLimits {
  /** Largest document accepted, bytes (--max_manifest_bytes); checked before parsing. */
  maxBytes?: number;
}

/** Alias expansions allowed per document: real manifests use a handful, an alias bomb millions. */
const MAX_ALIAS_EXPANSIONS = 100;

/**
 * Parses YAML or JSON (text, or bytes that must be UTF-8) holding one or more manifests into
 * defaulted pods (not validated: see validatePod). Oversized, unparsable, too deeply nested or
 * ambiguous documents and unsupported kinds come back as rejections with line and column; this
 * never throws on any input.
 */
export function readManifests(
  input: string | Uint8Array,
  ctx: ManifestContext,
  limits: ManifestLimits = {},
): ManifestResult {
  const result: ManifestResult = { pods: [], rejected: [], configs: [] };
  const reject = (document: number, issue: FieldIssue, pod?: string, kind?: ConfigObject["kind"]) =>
    result.rejected.push({
      source: ctx.source,
      origin: ctx.origin,
      document,
      ...(pod ? { pod } : {}),
      ...(kind ? { kind } : {}),
      issues: [issue],
    });
  for (const parsed of readYamlDocuments(input, limits)) {
    if ("issue" in parsed) {
      reject(parsed.document, parsed.issue);
      continue;
    }
    const { document: index, value } = parsed;
    for (const { manifest, path } of flatten(value, "")) {
      if (isObject(manifest) && (manifest.kind === "ConfigMap" || manifest.kind === "Secret")) {
        if (manifest.apiVersion !== "v1")
          reject(
            index,
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
        reject(index, converted.issue, describe(manifest));
        continue;
      }
      result.pods.push(finish(converted.pod, ctx, index));
    }
  }
  return result;
}

/** One document of a YAML stream: its value (explicit nulls dropped), or why it could not be read. */
export type YamlDocument = { document: number; value: unknown } | { document: number; issue: FieldIssue };

/**
 * Parses YAML or JSON (text, or bytes that must be UTF-8) holding one or more documents, with the
 * manifests' limits: oversized, unparsable, too deeply nested or ambiguous documents and alias bombs
 * come back as issues with line and column; empty documents are skipped. Never throws.
 */
export function readYamlDocuments(input: string | Uint8Array, limits: ManifestLimits = {}): YamlDocument[] {
  const decoded = decodeManifestText(input, limits.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES);
  if ("issue" in decoded) return [{ document: 0, issue: decoded.issue }];
  const lines = new LineCounter();
  const documents = parseAllDocuments(decoded.text, {
    prettyErrors: true,
    uniqueKeys: false,
    lineCounter: lines,
    customTags: (tags) => [LEGACY_OCTAL, ...tags],
  });
  const at = (offset: number) => lines.linePos(offset);
  const parsed: YamlDocument[] = [];
  documents.forEach((doc, index) => {
    const reject = (document: number, issue: FieldIssue) => parsed.push({ document, issue });
    if (doc.errors.length > 0) {
      const place = yamlErrorPlace(decoded.text, doc.errors);
      const pos = at(place.offset);
      return reject(index, unparsable(pos.line, pos.col, `${place.reason}; check the quoting and indentation there`));
    }
    const structural = checkStructure(doc, at);
    if (structural) return reject(index, structural);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSIONS }) as unknown;
    } catch (error) {
      const alias = firstAlias(doc);
      const pos = at(alias?.range?.[0] ?? 0);
      return reject(
        index,
        unparsable(
          pos.line,
          pos.col,
          /alias/i.test((error as Error).message)
            ? `YAML aliases expand to more than ${MAX_ALIAS_EXPANSIONS} nodes (an alias bomb?): write the values out instead of *aliases`
            : "the document cannot be converted to JSON; check it against the Pod format",
        ),
      );
    }
    if (value === null || value === undefined) return;
    dropNulls(value);
    parsed.push({ document: index, value });
  });
  return parsed;
}

/**
 * Walks a parsed document without recursion: nesting deeper than MAX_MANIFEST_DEPTH and a key
 * given twice in one map (Kubernetes' strict decoding refuses both; JSON's last-one-wins would
 * silently drop half of the pod) become a parse issue with line and column.
 */
function checkStructure(doc: Document, at: (offset: number) => { line: number; col: number }): FieldIssue | undefined {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: doc.contents, depth: 0 }];
  while (stack.length) {
    const { node, depth } = stack.pop()!;
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth >= MAX_MANIFEST_DEPTH) {
      const pos = at(node.range?.[0] ?? 0);
      return tooDeep(pos.line, pos.col);
    }
    const keys = new Map<string, number>();
    for (const item of node.items as unknown[]) {
      if (isPair(item)) {
        const key = item.key as YamlNode | null;
        if (isMap(key) || isSeq(key)) {
          const pos = at(key.range?.[0] ?? 0);
          return unparsable(pos.line, pos.col, "a mapping key must be a string, not a map or a list");
        }
        if (isScalar(key)) {
          const name = String(key.value);
          const offset = key.range?.[0] ?? 0;
          const first = keys.get(name);
          if (first !== undefined) {
            const pos = at(offset);
            return unparsable(
              pos.line,
              pos.col,
              `mapping key ${JSON.stringify(name)} already defined at line ${at(first).line}; remove one of them`,
            );
          }
          keys.set(name, offset);
        }
        stack.push({ node: item.value, depth: depth + 1 });
      } else stack.push({ node: item, depth: depth + 1 });
    }
  }
  return undefined;
}

/** Removes `field: null` everywhere: Kubernetes decodes an explicit null as an unset field. */
function dropNulls(value: unknown): void {
  const stack = [value];
  while (stack.length) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isObject(node))
      for (const [key, item] of Object.entries(node)) {
        if (item === null) delete node[key];
        else stack.push(item);
      }
  }
}

function firstAlias(doc: Document): YamlNode | undefined {
  const stack: unknown[] = [doc.contents];
  while (stack.length) {
    const node = stack.pop();
    if (isAlias(node)) return node;
    if (isMap(node) || isSeq(node)) for (const item of node.items as unknown[]) stack.push(item);
    else if (isPair(node)) stack.push(node.value);
  }
  return undefined;
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
  for (const field of ["metadata", "spec"]) {
    if (manifest[field] !== undefined && manifest[field] !== null && !isObject(manifest[field])) {
      return {
        issue: {
          path: at(field),
          type: "Invalid value",
          value: Array.isArray(manifest[field]) ? "a list" : manifest[field],
          detail: "must be an object (a map of fields), not a list or a scalar",
          severity: "error",
        },
      };
    }
  }
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
    typeof version === "string" &&
    // The 2014 validation compared the version case-insensitively ("V1BETA1" is valid).
    ["v1beta1", "v1beta2"].includes(version.toLowerCase()) &&
    ("containers" in manifest || "id" in manifest)
  ) {
    // The 2014 RestartPolicy is a union: none set means always, two set is refused (validateRestartPolicy).
    const policies = isObject(manifest.restartPolicy) ? Object.keys(manifest.restartPolicy) : [];
    if (policies.length > 1)
      return {
        issue: {
          path: at("restartPolicy"),
          type: "Invalid value",
          value: policies.join(", "),
          detail: "must name exactly one policy: always, onFailure or never",
          severity: "error",
        },
      };
    return { pod: fromContainerManifest(manifest) };
  }
  if (manifest.kind === undefined) {
    // Nothing of a pod at all: most likely the kubelet's own settings (`sync_frequency: 10s`, `staticPodPath: …`).
    const settings = !["apiVersion", "metadata", "spec", "containers", "id"].some((field) => field in manifest);
    return {
      issue: {
        path: at("kind"),
        type: "Required value",
        detail: `a v1 Pod needs \`apiVersion: v1\` and \`kind: Pod\` (a v1beta1 ContainerManifest needs \`version: v1beta1\`)${settings ? "; kubelet settings are read with --config_file, not as a manifest" : ""}`,
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
        manifest.kind === "KubeletConfiguration"
          ? "a KubeletConfiguration is the kubelet's own settings: give it with --config_file, not as a manifest"
          : RBAC_KINDS.includes(manifest.kind as string)
            ? `a ${manifest.kind} is an authorization policy: give its file with --authorization_policy_file (authorization.mode RBAC) and check it with \`kubelet validate --authorization_policy_file FILE\`, not as a manifest`
            : "only Pod, PodList, List, ConfigMap, Secret and ContainerManifest (v1beta1/v1beta2) are read by a kubelet",
      severity: "error",
    },
  };
}

/** The rbac.authorization.k8s.io kinds, read from --authorization_policy_file (lib/server/rbac/), never as pods. */
const RBAC_KINDS = ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"];

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
      container.imagePullPolicy = Object.hasOwn(PULL_POLICY, imagePullPolicy as string)
        ? PULL_POLICY[imagePullPolicy as string]
        : imagePullPolicy;
    if (Array.isArray(env))
      container.env = env.map((e: Json) =>
        isObject(e) && e.name === undefined && e.key !== undefined ? { name: e.key, value: e.value } : e,
      );
    if (Array.isArray(rest.volumeMounts))
      container.volumeMounts = rest.volumeMounts.map((m: unknown) => {
        if (!isObject(m)) return m;
        // v1beta1's deprecated `path` (used when mountPath is empty) and `mountType` (LOCAL/HOST, unused).
        const { path, mountType: _mountType, ...mount } = m;
        return mount.mountPath === undefined && path !== undefined ? { ...mount, mountPath: path } : mount;
      });
    return container;
  });
  const volumes = (Array.isArray(manifest.volumes) ? manifest.volumes : []).map((raw: unknown) => {
    if (!isObject(raw)) return raw;
    const { source, ...rest } = raw;
    const volume: Json = { ...rest };
    // A volume without a source was an empty directory in 2014.
    if (source === undefined || source === null) volume.emptyDir = {};
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
    spec.restartPolicy = key ? (Object.hasOwn(RESTART_POLICY, key) ? RESTART_POLICY[key] : key) : "Always";
  }
  if (manifest.hostNetwork !== undefined) spec.hostNetwork = manifest.hostNetwork;
  if (manifest.dnsPolicy !== undefined) spec.dnsPolicy = manifest.dnsPolicy;
  const metadata: Json = { name: manifest.id ?? "", annotations: { [ANNOTATION.format]: CONTAINER_MANIFEST } };
  if (manifest.uuid) metadata.uid = manifest.uuid;
  return { apiVersion: "v1", kind: "Pod", metadata, spec };
}

/** Kubernetes defaults, uid and bookkeeping annotations. */
function finish(raw: Json, ctx: ManifestContext, document: number): Pod {
  const metadata = (isObject(raw.metadata) ? raw.metadata : {}) as Json;
  const spec = (isObject(raw.spec) ? raw.spec : {}) as Json;
  // A name or namespace of the wrong type is kept as written, for validation to report.
  const name = (metadata.name ?? "") as string;
  const namespace = (
    metadata.namespace === undefined || metadata.namespace === "" ? "default" : metadata.namespace
  ) as string;
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
    typeof metadata.uid === "string" && metadata.uid ? metadata.uid : sourceUid(ctx.source, namespace, name);
  annotations[ANNOTATION.source] = ctx.source;
  annotations[ANNOTATION.origin] = ctx.origin;
  annotations[ANNOTATION.document] = String(document);
  annotations[ANNOTATION.hash] = podSpecHash(pod);
  return pod;
}

function defaultContainer(container: V1Container): void {
  container.imagePullPolicy ??= defaultPullPolicy(typeof container.image === "string" ? container.image : "");
  container.terminationMessagePath ??= "/dev/termination-log";
  container.terminationMessagePolicy ??= "File";
  if (Array.isArray(container.ports)) for (const port of container.ports) if (isObject(port)) port.protocol ??= "TCP";
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
