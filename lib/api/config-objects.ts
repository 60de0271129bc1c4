// ConfigMaps and Secrets as they arrive beside pods: the model, decoding from a manifest document,
// validation with Kubernetes' rules and wording, and the bytes of each key. Secret values never
// appear in an issue, a hash input that is logged, or any message.
import { createHash } from "node:crypto";
import { stableJson } from "./hash.ts";
import { ANNOTATION, fieldError, type FieldIssue } from "./types.ts";

export type ConfigKind = "ConfigMap" | "Secret";

/** A v1 ConfigMap or Secret with name, namespace and bookkeeping annotations set. */
export interface ConfigObject {
  apiVersion: "v1";
  kind: ConfigKind;
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations: Record<string, string>;
  };
  /** ConfigMap: UTF-8 text; Secret: base64. */
  data?: Record<string, string>;
  /** ConfigMap only: base64. */
  binaryData?: Record<string, string>;
  /** Secret only: plain text, merged over `data` (as the API server does on write). */
  stringData?: Record<string, string>;
  immutable?: boolean;
  /** Secret only; defaults to Opaque. */
  type?: string;
}

/** Reads ConfigMaps and Secrets by namespace and name (the merge store answers, first source wins). */
export interface ConfigLookup {
  get(kind: ConfigKind, namespace: string, name: string): ConfigObject | undefined;
}

/** A lookup that knows no objects (tools that read pods alone, tests). */
export const noConfigs: ConfigLookup = { get: () => undefined };

/** `ConfigMap/default/app`, the key config objects are known by. */
export function configKey(kind: ConfigKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export function configKeyOf(object: ConfigObject): string {
  return configKey(object.kind, object.metadata.namespace, object.metadata.name);
}

/** `ConfigMap default/app`, for messages. */
export function describeConfig(object: { kind: ConfigKind; metadata: { namespace: string; name: string } }): string {
  return `${object.kind} ${object.metadata.namespace}/${object.metadata.name}`;
}

export const SECRET_TYPES = {
  opaque: "Opaque",
  tls: "kubernetes.io/tls",
  dockerConfigJson: "kubernetes.io/dockerconfigjson",
  basicAuth: "kubernetes.io/basic-auth",
  sshAuth: "kubernetes.io/ssh-auth",
} as const;

type Json = Record<string, unknown>;

/** A decoded ConfigMap/Secret document with defaults, the hash and the origin annotations. */
export function toConfigObject(raw: Json, origin: { source: string; origin: string; document: number }): ConfigObject {
  const metadata = (isObject(raw.metadata) ? raw.metadata : {}) as Json;
  const kind = raw.kind as ConfigKind;
  const object: ConfigObject = {
    apiVersion: "v1",
    kind,
    metadata: {
      name: typeof metadata.name === "string" ? metadata.name : "",
      namespace: typeof metadata.namespace === "string" && metadata.namespace ? metadata.namespace : "default",
      ...(isObject(metadata.labels) ? { labels: metadata.labels as Record<string, string> } : {}),
      annotations: isObject(metadata.annotations) ? { ...(metadata.annotations as Record<string, string>) } : {},
    },
  };
  for (const field of ["data", "binaryData", "stringData"] as const)
    if (isObject(raw[field])) object[field] = stringValues(raw[field] as Json);
  if (raw.immutable !== undefined) object.immutable = raw.immutable as boolean;
  if (kind === "Secret") object.type = typeof raw.type === "string" && raw.type ? raw.type : SECRET_TYPES.opaque;
  object.metadata.annotations[ANNOTATION.source] = origin.source;
  object.metadata.annotations[ANNOTATION.origin] = origin.origin;
  object.metadata.annotations[ANNOTATION.document] = String(origin.document);
  object.metadata.annotations[ANNOTATION.hash] = configHash(object);
  documentFields.set(object, Object.keys(raw));
  return object;
}

/** YAML turns `port: 80` into a number; Kubernetes would refuse it, we keep its text. */
function stringValues(map: Json): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, typeof v === "string" ? v : String(v ?? "")]));
}

/** Hash of what an object holds; a change means mounted files must be rewritten. */
export function configHash(object: ConfigObject): string {
  const meaning = {
    kind: object.kind,
    name: object.metadata.name,
    namespace: object.metadata.namespace,
    data: object.data ?? {},
    binaryData: object.binaryData ?? {},
    stringData: object.stringData ?? {},
    immutable: object.immutable ?? false,
    type: object.type ?? "",
  };
  return createHash("sha256").update(stableJson(meaning)).digest("hex").slice(0, 16);
}

const decoded = new WeakMap<ConfigObject, Map<string, Buffer>>();
/** The top-level fields each object was written with, so a typo (`date:`) is reported, not silently empty. */
const documentFields = new WeakMap<ConfigObject, string[]>();

/** Every key's bytes (Secret `data` decoded, `stringData` over it; ConfigMap text and binaryData). */
export function configBytes(object: ConfigObject): Map<string, Buffer> {
  let bytes = decoded.get(object);
  if (bytes) return bytes;
  bytes = new Map();
  if (object.kind === "ConfigMap") {
    for (const [key, value] of Object.entries(object.data ?? {})) bytes.set(key, Buffer.from(value, "utf8"));
    for (const [key, value] of Object.entries(object.binaryData ?? {})) bytes.set(key, Buffer.from(value, "base64"));
  } else {
    for (const [key, value] of Object.entries(object.data ?? {})) bytes.set(key, Buffer.from(value, "base64"));
    for (const [key, value] of Object.entries(object.stringData ?? {})) bytes.set(key, Buffer.from(value, "utf8"));
  }
  decoded.set(object, bytes);
  return bytes;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Kubernetes' MaxSecretSize, also the ConfigMap limit. */
export const MAX_CONFIG_BYTES = 1024 * 1024;
const REDACTED = "<secret contents redacted>";
const KNOWN_FIELDS: Record<ConfigKind, string[]> = {
  ConfigMap: ["apiVersion", "kind", "metadata", "data", "binaryData", "immutable"],
  Secret: ["apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"],
};

/** Kubernetes' IsConfigMapKey: the messages of a bad key, none when it is fine. */
export function configKeyErrors(key: string): string[] {
  const errors: string[] = [];
  if (key.length > 253) errors.push("must be no more than 253 characters");
  if (!CONFIG_KEY.test(key))
    errors.push(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    );
  if (key === ".") errors.push("must not be '.'");
  else if (key === "..") errors.push("must not be '..'");
  else if (key.startsWith("..")) errors.push("must not start with '..'");
  return errors;
}

/** Every problem with a ConfigMap or Secret, Kubernetes' paths and wording; values of Secrets are redacted. */
export function validateConfigObject(object: ConfigObject): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const secret = object.kind === "Secret";
  const error = (...issue: Parameters<typeof fieldError>) => issues.push(fieldError(...issue));
  const { name, namespace } = object.metadata;
  if (!name) error("metadata.name", "Required value", undefined, "name or generateName is required");
  else if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name))
    error(
      "metadata.name",
      "Invalid value",
      name,
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
    );
  if (namespace.length > 63 || !DNS1123_LABEL.test(namespace))
    error(
      "metadata.namespace",
      "Invalid value",
      namespace,
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
    );
  if (object.immutable !== undefined && typeof object.immutable !== "boolean")
    error("immutable", "Invalid value", object.immutable, "must be true or false");
  for (const key of documentFields.get(object) ?? []) {
    if (!KNOWN_FIELDS[object.kind].includes(key) && key !== "status")
      issues.push({
        path: key,
        type: "Unknown field",
        detail: `unknown field "${key}" is ignored (check the spelling)`,
        severity: "warning",
      });
  }
  const fields = secret ? (["data", "stringData"] as const) : (["data", "binaryData"] as const);
  for (const field of fields) {
    for (const [key, value] of Object.entries(object[field] ?? {})) {
      for (const message of configKeyErrors(key)) error(`${field}[${key}]`, "Invalid value", key, message);
      if ((field === "binaryData" || (secret && field === "data")) && !isBase64(value))
        error(
          `${field}[${key}]`,
          "Invalid value",
          secret ? REDACTED : undefined,
          `must be base64-encoded${secret ? " (use stringData for plain text)" : ""}`,
        );
    }
  }
  if (!secret)
    for (const key of Object.keys(object.data ?? {}))
      if (object.binaryData?.[key] !== undefined)
        error(`data[${key}]`, "Invalid value", key, "duplicate of key present in binaryData");
  if (issues.some((i) => i.severity === "error")) return issues;
  const bytes = configBytes(object);
  let total = 0;
  for (const value of bytes.values()) total += value.length;
  if (total > MAX_CONFIG_BYTES)
    error(
      "data",
      "Too long",
      undefined,
      `must have at most ${MAX_CONFIG_BYTES} bytes (${total} given; mount large files with a hostPath volume)`,
    );
  if (secret) checkSecretType(object.type ?? SECRET_TYPES.opaque, bytes, error);
  return issues;
}

function checkSecretType(
  type: string,
  bytes: Map<string, Buffer>,
  error: (path: string, type: string, value?: unknown, detail?: string) => void,
): void {
  const require = (key: string) => {
    if (!bytes.has(key)) error(`data[${key}]`, "Required value");
  };
  switch (type) {
    case SECRET_TYPES.tls:
      require("tls.crt");
      require("tls.key");
      return;
    case SECRET_TYPES.dockerConfigJson: {
      require(".dockerconfigjson");
      const text = bytes.get(".dockerconfigjson");
      if (text === undefined) return;
      try {
        const parsed = JSON.parse(text.toString("utf8")) as unknown;
        if (!isObject(parsed) || !isObject(parsed.auths)) throw new Error('no "auths" object');
      } catch (e) {
        error(
          "data[.dockerconfigjson]",
          "Invalid value",
          REDACTED,
          `must be a Docker config.json with an "auths" object: ${(e as Error).message.replace(/".*$/, "").trim()}`,
        );
      }
      return;
    }
    case SECRET_TYPES.basicAuth:
      if (!bytes.has("username") && !bytes.has("password"))
        error("data[username]", "Required value", undefined, "a basic-auth Secret needs username or password");
      return;
    case SECRET_TYPES.sshAuth:
      require("ssh-privatekey");
      return;
    case "kubernetes.io/service-account-token":
      error("type", "Unsupported value", type, "service account tokens are issued by an API server, not a kubelet");
      return;
    default:
  }
}

function isBase64(value: string): boolean {
  const compact = value.replace(/\s+/g, "");
  return compact.length % 4 === 0 && BASE64.test(compact);
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
