// `kubelet validate`: manifests from files, directories and stdin → a verdict per pod and per
// ConfigMap or Secret, every issue with file, document and field path; references from pods to
// ConfigMaps and Secrets are checked across all the files given; an authorization policy file
// (validate-policy.ts) when one is named. Returns the exit code (0 valid, 1 invalid).
import { listManifestFiles, readManifestFile } from "../api/manifest-files.ts";
import { DEFAULT_MAX_MANIFEST_BYTES, tooLarge } from "../api/manifest-text.ts";
import { readManifests } from "../api/manifest.ts";
import { ANNOTATION, formatIssue, podKey, type FieldIssue } from "../api/types.ts";
import { validatePod } from "../api/validation.ts";
import {
  configKey,
  configKeyOf,
  describeConfig,
  validateConfigObject,
  type ConfigLookup,
  type ConfigObject,
} from "../api/config-objects.ts";
import { checkConfigRefs } from "../api/config-refs.ts";
import { checkPolicyFile, policyVerdictText } from "./validate-policy.ts";

export interface ValidateOptions {
  allowPrivileged: boolean;
  allowSensitiveHostPaths?: boolean;
  /** --trusted_sources and the configuration's protected paths (api/host-paths.ts); files are read as source file. */
  trustedSources?: readonly string[];
  protectedHostPaths?: readonly string[];
  /** Unknown fields are errors (validate's default); false: warnings, as `run` decodes. */
  strict?: boolean;
  maxBytes?: number;
  format: "text" | "json";
  /** --authorization_policy_file: an RBAC policy file checked too (paths may then be empty). */
  policyFile?: string;
  out: NodeJS.WritableStream;
  readStdin: () => Promise<string>;
}

interface PodVerdict {
  file: string;
  document?: number;
  /** `namespace/name` of the pod (or of the ConfigMap or Secret when `kind` is set). */
  pod?: string;
  kind?: "ConfigMap" | "Secret";
  valid: boolean;
  issues: FieldIssue[];
}

/** Validates every manifest under `paths` and prints the verdicts; resolves to the exit code. */
export async function validateCommand(paths: string[], options: ValidateOptions): Promise<number> {
  const verdicts: PodVerdict[] = [];
  const unreadable: Array<{ path: string; message: string }> = [];
  const files: string[] = [];
  for (const path of paths) {
    if (path === "-") {
      files.push("-");
      continue;
    }
    try {
      files.push(...(await listManifestFiles(path)));
    } catch (error) {
      unreadable.push({
        path,
        message:
          (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file or directory" : (error as Error).message,
      });
    }
  }
  // Every file first: a pod may name a ConfigMap or Secret defined in any of them.
  const read: Array<{ file: string; result: ReturnType<typeof readManifests> }> = [];
  for (const file of files) {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
    let text: string | Uint8Array | undefined;
    try {
      text = file === "-" ? await options.readStdin() : await readManifestFile(file, maxBytes);
    } catch (error) {
      unreadable.push({ path: file, message: (error as Error).message });
      continue;
    }
    if (text === undefined) {
      verdicts.push({ file, document: 0, valid: false, issues: [tooLarge(undefined, maxBytes)] });
      continue;
    }
    read.push({ file, result: readManifests(text, { source: "file", origin: file }, { maxBytes }) });
  }
  const objects = new Map<string, ConfigObject>();
  for (const { file, result } of read) {
    for (const rejected of result.rejected)
      verdicts.push({
        file,
        document: rejected.document,
        pod: rejected.pod,
        ...(rejected.kind ? { kind: rejected.kind } : {}),
        valid: false,
        issues: rejected.issues,
      });
    for (const object of result.configs) {
      const issues = validateConfigObject(object);
      const key = configKeyOf(object);
      const first = objects.get(key);
      if (first)
        issues.push({
          path: "metadata.name",
          type: "Duplicate value",
          value: object.metadata.name,
          detail: `${describeConfig(object)} is already defined in ${first.metadata.annotations[ANNOTATION.origin]}[${first.metadata.annotations[ANNOTATION.document]}]; the first one wins`,
          severity: "error",
        });
      const valid = !issues.some((i) => i.severity === "error");
      if (valid && !first) objects.set(key, object);
      verdicts.push({
        file,
        document: Number(object.metadata.annotations[ANNOTATION.document]),
        pod: `${object.metadata.namespace}/${object.metadata.name}`,
        kind: object.kind,
        valid,
        issues,
      });
    }
  }
  const lookup: ConfigLookup = { get: (kind, namespace, name) => objects.get(configKey(kind, namespace, name)) };
  const seen = new Map<string, string>();
  for (const { file, result } of read) {
    for (const pod of result.pods) {
      const issues = validatePod(pod, options);
      // References are followed only through a pod that validates: its fields may not have the shapes they need.
      if (!issues.some((i) => i.severity === "error")) issues.push(...checkConfigRefs(pod, lookup));
      const key = podKey(pod);
      const document = Number(pod.metadata.annotations[ANNOTATION.document]);
      const first = seen.get(key);
      if (first)
        issues.push({
          path: "metadata.name",
          type: "Duplicate value",
          value: pod.metadata.name,
          detail: `pod ${key} is already defined in ${first}; only the first one runs`,
          severity: "error",
        });
      else seen.set(key, `${file}[${document}]`);
      verdicts.push({ file, document, pod: key, valid: !issues.some((i) => i.severity === "error"), issues });
    }
  }
  const invalid = verdicts.filter((v) => !v.valid && !v.kind).length;
  const configVerdicts = verdicts.filter((v) => v.kind);
  const invalidConfigs = configVerdicts.filter((v) => !v.valid).length;
  const podVerdicts = verdicts.length - configVerdicts.length;
  const warnings = verdicts.reduce((n, v) => n + v.issues.filter((i) => i.severity === "warning").length, 0);
  const policy = options.policyFile === undefined ? undefined : await checkPolicyFile(options.policyFile);
  const code = invalid > 0 || invalidConfigs > 0 || unreadable.length > 0 || (policy && !policy.valid) ? 1 : 0;
  if (options.format === "json") {
    options.out.write(
      JSON.stringify(
        {
          valid: podVerdicts - invalid,
          invalid,
          warnings,
          unreadable,
          pods: verdicts.filter((v) => !v.kind),
          configs: configVerdicts,
          ...(policy ? { policy } : {}),
        },
        null,
        2,
      ) + "\n",
    );
    return code;
  }
  for (const { path, message } of unreadable) options.out.write(`FAIL ${path}: cannot read: ${message}\n`);
  for (const v of verdicts) {
    options.out.write(
      `${v.valid ? "ok  " : "FAIL"} ${v.file}${v.document !== undefined && !v.pod ? `[${v.document}]` : ""}  ${v.kind ? `${v.kind} ` : ""}${v.pod ?? ""}\n`,
    );
    for (const issue of v.issues) {
      options.out.write(
        `  ${issue.severity === "error" ? "error" : "warn "} ${v.file}[${v.document ?? 0}]${v.pod ? ` ${v.kind ? `${v.kind} ` : ""}${v.pod}` : ""}: ${formatIssue(issue)}\n`,
      );
    }
  }
  if (policy) options.out.write(policyVerdictText(policy));
  if (paths.length === 0 && policy) return code;
  const fileCount = new Set(verdicts.map((v) => v.file)).size;
  options.out.write(
    `${podVerdicts - invalid} pods valid, ${invalid} invalid, ${warnings} warnings in ${fileCount} files${configVerdicts.length ? `; ${configVerdicts.length - invalidConfigs} ConfigMaps/Secrets valid, ${invalidConfigs} invalid` : ""}${unreadable.length ? `, ${unreadable.length} unreadable` : ""}\n`,
  );
  return code;
}
