// Length limits on a pod's fields, where Kubernetes, Docker or Linux bound them, in Kubernetes'
// wording ("Too long: may not be more than N bytes"). Checked before any regular expression runs.
import type { FieldIssue, Pod, V1Container } from "./types.ts";

/** Linux's MAX_ARG_STRLEN: the longest single argument or environment string exec accepts. */
export const MAX_ARG_BYTES = 131_072;
/** Linux's ARG_MAX with the default 8 MiB stack: arguments and environment together. */
export const MAX_ARGS_TOTAL_BYTES = 2_097_152;
/** Kubernetes' TotalAnnotationSizeLimitB. */
export const MAX_ANNOTATION_BYTES = 262_144;
/** Docker's limit on a repository name, and on a tag. */
const MAX_REPOSITORY_BYTES = 255;
const MAX_TAG_BYTES = 128;
const MAX_DIGEST_BYTES = "sha512:".length + 128;
/** Linux's PATH_MAX. */
const MAX_PATH_BYTES = 4096;

/** Every field of a (well-typed) pod that is longer than its limit. */
export function checkLengths(pod: Pod): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const limit = (path: string, value: string | undefined, max: number, why = "") => {
    if (value != null && bytes(value) > max) issues.push(tooLong(path, max, why));
  };
  const { metadata, spec } = pod;
  limit("metadata.name", metadata.name, 253);
  limit("metadata.namespace", metadata.namespace, 63);
  for (const [key, value] of Object.entries(metadata.labels ?? {})) {
    const slash = key.lastIndexOf("/");
    if (slash >= 0) limit(`metadata.labels[${key.slice(0, 253)}]`, key.slice(0, slash), 253, " for a key's prefix");
    limit(`metadata.labels[${key.slice(0, 253)}]`, key.slice(slash + 1), 63, " for a key's name");
    limit(`metadata.labels[${key.slice(0, 63)}]`, value, 63);
  }
  const annotationBytes = Object.entries(metadata.annotations ?? {}).reduce((n, [k, v]) => n + bytes(k) + bytes(v), 0);
  if (annotationBytes > MAX_ANNOTATION_BYTES)
    issues.push(tooLong("metadata.annotations", MAX_ANNOTATION_BYTES, " in total"));
  limit("spec.hostname", spec.hostname, 63);
  (spec.volumes ?? []).forEach((volume, i) => {
    limit(`spec.volumes[${i}].name`, volume.name, 63);
    limit(`spec.volumes[${i}].hostPath.path`, volume.hostPath?.path, MAX_PATH_BYTES, " (PATH_MAX)");
  });
  const groups: Array<[string, V1Container[]]> = [
    ["spec.initContainers", spec.initContainers ?? []],
    ["spec.containers", spec.containers ?? []],
  ];
  for (const [base, containers] of groups)
    containers.forEach((c, i) => checkContainer(c, `${base}[${i}]`, limit, issues));
  return issues;
}

type Limit = (path: string, value: string | undefined, max: number, why?: string) => void;

function checkContainer(c: V1Container, path: string, limit: Limit, issues: FieldIssue[]): void {
  limit(`${path}.name`, c.name, 63);
  if (c.image != null) {
    const at = c.image.indexOf("@");
    const reference = at === -1 ? c.image : c.image.slice(0, at);
    const colon = reference.indexOf(":", reference.lastIndexOf("/") + 1);
    const repository = colon === -1 ? reference : reference.slice(0, colon);
    limit(`${path}.image`, repository, MAX_REPOSITORY_BYTES, " for the repository name (Docker's limit)");
    if (colon !== -1)
      limit(`${path}.image`, reference.slice(colon + 1), MAX_TAG_BYTES, " for the tag (Docker's limit)");
    if (at !== -1)
      limit(`${path}.image`, c.image.slice(at + 1), MAX_DIGEST_BYTES, " for the digest (sha512:<128 hex>)");
  }
  limit(`${path}.workingDir`, c.workingDir, MAX_PATH_BYTES, " (PATH_MAX)");
  (c.volumeMounts ?? []).forEach((m, j) => limit(`${path}.volumeMounts[${j}].mountPath`, m.mountPath, MAX_PATH_BYTES));
  let total = 0;
  const strings: Array<[string, string]> = [
    ...(c.command ?? []).map((v, j): [string, string] => [`${path}.command[${j}]`, v]),
    ...(c.args ?? []).map((v, j): [string, string] => [`${path}.args[${j}]`, v]),
    ...(c.env ?? []).map((e, j): [string, string] => [`${path}.env[${j}].value`, `${e.name ?? ""}=${e.value ?? ""}`]),
  ];
  for (const [at, value] of strings) {
    total += bytes(value) + 1;
    limit(at, value, MAX_ARG_BYTES, " (Linux's limit for one argument or environment string)");
  }
  if (total > MAX_ARGS_TOTAL_BYTES)
    issues.push(tooLong(path, MAX_ARGS_TOTAL_BYTES, " for command, args and env together (Linux's ARG_MAX)"));
}

function tooLong(path: string, max: number, why: string): FieldIssue {
  return { path, type: "Too long", detail: `may not be more than ${max} bytes${why}`, severity: "error" };
}

function bytes(value: string): number {
  return Buffer.byteLength(value);
}
