// One request against a loaded policy, as upstream's RBACAuthorizer decides it: the bindings whose subjects
// include the caller (ClusterRoleBindings, then RoleBindings of the request's namespace), the rules of the
// roles they name, allow on the first rule that matches, otherwise no opinion; reasons in upstream's words.
import type { AuthorizationResult, RequestAttributes, UserInfo } from "../authorizer.ts";
import { missingRole, type Binding, type Policy, type Subject } from "./policy-file.ts";
import { ruleAllows } from "./rules.ts";

/** Whether the policy allows the request; never "deny" (RBAC only adds permissions, as upstream). */
export function evaluatePolicy(policy: Policy, attributes: RequestAttributes): AuthorizationResult {
  const errors: string[] = [];
  const bindings = [
    ...policy.clusterRoleBindings,
    ...(attributes.namespace ? policy.roleBindings.filter((b) => b.namespace === attributes.namespace) : []),
  ];
  for (const binding of bindings) {
    const subject = binding.subjects.find((s) => appliesTo(attributes.user, s, binding.namespace));
    if (!subject) continue;
    const missing = missingRole(policy, binding);
    if (missing) {
      errors.push(`${missing} not found`);
      continue;
    }
    const rules =
      binding.roleRef.kind === "ClusterRole"
        ? policy.clusterRoles.get(binding.roleRef.name)!
        : policy.roles.get(`${binding.namespace}/${binding.roleRef.name}`)!;
    if (rules.some((rule) => ruleAllows(attributes, rule)))
      return { decision: "allow", reason: `RBAC: allowed by ${describeBinding(binding, subject)}` };
  }
  const why = `RBAC: no rules authorize user "${attributes.user.name}" with groups ${goStrings(attributes.user.groups)} to ${describeRequest(attributes)}`;
  // utilerrors.NewAggregate: one error as itself, several in brackets.
  const resolution = errors.length === 0 ? "" : `; RBAC: ${errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`}`;
  return { decision: "no-opinion", reason: why + resolution };
}

/** Upstream's appliesToUser: a User by name, a Group by membership, a ServiceAccount by its username. */
export function appliesTo(user: UserInfo, subject: Subject, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case "User":
      return user.name === subject.name;
    case "Group":
      return user.groups.includes(subject.name);
    case "ServiceAccount": {
      const namespace = subject.namespace || bindingNamespace;
      return namespace !== "" && user.name === `system:serviceaccount:${namespace}:${subject.name}`;
    }
    default:
      return false;
  }
}

/** `ClusterRoleBinding "scrape" of ClusterRole "kubelet-scraper" to User "prometheus"` (upstream's describers). */
function describeBinding(binding: Binding, subject: Subject): string {
  const name = binding.kind === "RoleBinding" ? `${binding.name}/${binding.namespace}` : binding.name;
  const who =
    subject.kind === "ServiceAccount"
      ? `${subject.kind} "${subject.name}/${subject.namespace || binding.namespace}"`
      : `${subject.kind} "${subject.name}"`;
  return `${binding.kind} "${name}" of ${binding.roleRef.kind} "${binding.roleRef.name}" to ${who}`;
}

/** `"get" resource "nodes/proxy" named "node-1" cluster-wide`, or `"get" nonResourceURL "/healthz" cluster-wide`. */
function describeRequest(a: RequestAttributes): string {
  const scope = a.namespace ? `in namespace "${a.namespace}"` : "cluster-wide";
  if (!a.resourceRequest) return `"${a.verb}" nonResourceURL "${a.path}" ${scope}`;
  const resource = `${a.resource}${a.apiGroup ? `.${a.apiGroup}` : ""}${a.subresource ? `/${a.subresource}` : ""}`;
  return `"${a.verb}" resource "${resource}"${a.name ? ` named "${a.name}"` : ""} ${scope}`;
}

/** Go's %q of a []string: `["a" "b"]`. */
function goStrings(values: string[]): string {
  return `[${values.map((v) => JSON.stringify(v)).join(" ")}]`;
}
