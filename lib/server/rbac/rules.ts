// Whether one RBAC PolicyRule grants a request, as upstream's RuleAllows and the rbac/v1 evaluation
// helpers decide: verbs, API groups, `resource/subresource` (and `*/subresource`), resource names, and
// non-resource URLs with a trailing `*` glob. Pure.
import type { RequestAttributes } from "../authorizer.ts";

/** A rule of a ClusterRole or Role (rbac.authorization.k8s.io/v1 PolicyRule), every list present. */
export interface PolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  nonResourceURLs: string[];
}

/** `*` in verbs, apiGroups, resources and nonResourceURLs: everything (rbacv1.VerbAll and friends). */
export const ALL = "*";

/** The rule names the verb, or `*`. */
export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === ALL || v === verb);
}

/** The rule names the API group ("" is the core group that `nodes` belong to), or `*`. */
export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return rule.apiGroups.some((g) => g === ALL || g === group);
}

/**
 * The rule names `resource` or `resource/subresource` exactly, `*`, or a star then `/subresource` (every
 * resource's subresource): `nodes` does not cover `nodes/proxy`, and `nodes/` then a star is no glob.
 */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  return rule.resources.some(
    (r) =>
      r === ALL ||
      r === combined ||
      (subresource !== "" && r.length === subresource.length + 2 && r.startsWith("*/") && r.endsWith(subresource)),
  );
}

/** No resourceNames means every name; otherwise the request's name (the node's, here) is listed. */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  return rule.resourceNames.length === 0 || rule.resourceNames.includes(name);
}

/** The rule lists the path, `*`, or a prefix ending in `*` (`/healthz*`, `/metrics/*`). */
export function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  return rule.nonResourceURLs.some(
    (url) => url === ALL || url === path || (url.endsWith("*") && path.startsWith(url.replace(/\*+$/, ""))),
  );
}

/** Whether `rule` grants the request: upstream's RuleAllows. */
export function ruleAllows(attributes: RequestAttributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, attributes.verb)) return false;
  if (!attributes.resourceRequest) return nonResourceUrlMatches(rule, attributes.path);
  const combined = attributes.subresource ? `${attributes.resource}/${attributes.subresource}` : attributes.resource;
  return (
    apiGroupMatches(rule, attributes.apiGroup) &&
    resourceMatches(rule, combined, attributes.subresource) &&
    resourceNameMatches(rule, attributes.name)
  );
}
