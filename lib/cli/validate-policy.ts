// `kubelet validate --authorization_policy_file F`: the RBAC policy file checked as RBAC mode would load it,
// every error and warning with file, document, object and field path.
import { describePolicy, formatPolicyIssue, readPolicy, type PolicyIssue } from "../server/rbac/policy-file.ts";
import { readPolicyFile } from "../server/rbac/rbac-authorizer.ts";

/** The policy file's verdict: valid when it has no errors (warnings are shown and allowed). */
export interface PolicyVerdict {
  file: string;
  valid: boolean;
  /** `3 ClusterRoles, 3 ClusterRoleBindings`, or why the file could not be read. */
  summary: string;
  issues: PolicyIssue[];
}

/** Reads and checks the policy file; never throws. */
export async function checkPolicyFile(file: string): Promise<PolicyVerdict> {
  let bytes: Uint8Array;
  try {
    bytes = await readPolicyFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file or directory" : (error as Error).message;
    return { file, valid: false, summary: `cannot read: ${why}`, issues: [] };
  }
  const { policy, issues } = readPolicy(bytes, file);
  return { file, valid: !issues.some((i) => i.severity === "error"), summary: describePolicy(policy), issues };
}

/** The verdict as validate's text lines: `ok   F  authorization policy: …`, then one line per issue. */
export function policyVerdictText(verdict: PolicyVerdict): string {
  const head = `${verdict.valid ? "ok  " : "FAIL"} ${verdict.file}  authorization policy: ${verdict.summary}\n`;
  return (
    head +
    verdict.issues
      .map((issue) => `  ${issue.severity === "error" ? "error" : "warn "} ${formatPolicyIssue(issue)}\n`)
      .join("")
  );
}
