// How `run` treats an unknown field in a manifest (--strict_manifests): an error that refuses the edit,
// with the did-you-mean, or (false) the upstream decoder's warning that drops the field and runs the pod.
import type { FieldIssue } from "./types.ts";

/** The flag that turns strictness off, named in every strict rejection. */
export const STRICT_MANIFESTS_FLAG = "--strict_manifests";

/**
 * `issues` from a lenient validatePod with each unknown-field warning made an error when `strict`:
 * `unknown field "spec.containers[0].comand" (did you mean command?): the pod is not run with it; …`.
 */
export function applyManifestStrictness(issues: FieldIssue[], strict: boolean): FieldIssue[] {
  if (!strict) return issues;
  return issues.map((issue) => {
    if (issue.type !== "Unknown field" || issue.severity !== "warning") return issue;
    const hint = /\((did you mean [^)]*|check the spelling)\)$/.exec(issue.detail ?? "")?.[1] ?? "check the spelling";
    return {
      ...issue,
      detail: `unknown field "${issue.path}" (${hint}): fix or remove it, or give ${STRICT_MANIFESTS_FLAG}=false to run pods without their unknown fields`,
      severity: "error",
    };
  });
}
