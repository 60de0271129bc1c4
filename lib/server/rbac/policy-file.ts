// The authorization policy file → RBAC objects: ClusterRoles, ClusterRoleBindings, Roles and RoleBindings
// (rbac.authorization.k8s.io/v1) from multi-document YAML, a List or an array, checked with the API
// server's validation paths and wording, plus what an API server would not see: unknown fields, duplicate
// names, bindings to roles the file lacks and rules no kubelet request can match.
import { readYamlDocuments } from "../../api/manifest.ts";
import { fieldError, formatIssue, type FieldIssue } from "../../api/types.ts";
import { closestName } from "../../spelling.ts";
import { ALL, type PolicyRule } from "./rules.ts";

/** The RBAC API group: roleRef.apiGroup and User/Group subjects' apiGroup. */
export const RBAC_GROUP = "rbac.authorization.k8s.io";
const API_VERSION = `${RBAC_GROUP}/v1`;

/** The subresources of `nodes` the kubelet checks (pkg/kubelet/server/auth.go, fine-grained included). */
export const KUBELET_SUBRESOURCES = [
  "proxy",
  "stats",
  "metrics",
  "log",
  "spec",
  "checkpoint",
  "pods",
  "healthz",
  "configz",
];
/** The verbs the kubelet asks for: its HTTP methods as API verbs, and the Kubernetes API's list and watch. */
export const KUBELET_VERBS = ["get", "create", "update", "patch", "delete", "list", "watch"];
/** Core resources of the Kubernetes API slice the kubelet serves (lib/server/apiserver/), checked as kube-apiserver does. */
export const API_RESOURCES = [
  "pods",
  "pods/status",
  "pods/log",
  "pods/exec",
  "pods/attach",
  "pods/portforward",
  "events",
  "namespaces",
  "configmaps",
  "secrets",
];

export interface Subject {
  kind: string;
  apiGroup: string;
  name: string;
  namespace: string;
}

export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

/** A ClusterRoleBinding (namespace "") or a RoleBinding. */
export interface Binding {
  kind: "ClusterRoleBinding" | "RoleBinding";
  name: string;
  namespace: string;
  roleRef: RoleRef;
  subjects: Subject[];
}

/** Every object of a policy file that validated, ready to evaluate. */
export interface Policy {
  clusterRoles: Map<string, PolicyRule[]>;
  /** Keyed `namespace/name`. */
  roles: Map<string, PolicyRule[]>;
  clusterRoleBindings: Binding[];
  roleBindings: Binding[];
}

/** A problem in a policy file: where (file, document, object) and what, with the field path inside the object. */
export interface PolicyIssue extends FieldIssue {
  file: string;
  document: number;
  /** `ClusterRole kubelet-scraper`, when the object could be told apart. */
  object?: string;
}

type Json = Record<string, unknown>;
const KINDS = ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"] as const;
type Kind = (typeof KINDS)[number];
const LIST_KINDS = ["List", ...KINDS.map((k) => `${k}List`)];
const FIELDS: Record<string, string[]> = {
  object: ["apiVersion", "kind", "metadata"],
  ClusterRole: ["rules", "aggregationRule"],
  Role: ["rules"],
  ClusterRoleBinding: ["roleRef", "subjects"],
  RoleBinding: ["roleRef", "subjects"],
  rule: ["verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"],
  roleRef: ["apiGroup", "kind", "name"],
  subject: ["kind", "apiGroup", "name", "namespace"],
};

/** `F[2] ClusterRole scraper: rules[0].verbs: Required value: …`, the line validate and the reload log print. */
export function formatPolicyIssue(issue: PolicyIssue): string {
  return `${issue.file}[${issue.document}]${issue.object ? ` ${issue.object}` : ""}: ${formatIssue(issue)}`;
}

/** `3 ClusterRoles, 3 ClusterRoleBindings` (Roles and RoleBindings only when there are some). */
export function describePolicy(policy: Policy): string {
  const count = (n: number, kind: string) => `${n} ${kind}${n === 1 ? "" : "s"}`;
  const counts = [
    count(policy.clusterRoles.size, "ClusterRole"),
    count(policy.clusterRoleBindings.length, "ClusterRoleBinding"),
  ];
  if (policy.roles.size || policy.roleBindings.length)
    counts.push(count(policy.roles.size, "Role"), count(policy.roleBindings.length, "RoleBinding"));
  return counts.join(", ");
}

/** Checks a policy file's text: every error and warning, none when the file is good. For `kubelet validate`. */
export function checkRbacPolicy(text: string | Uint8Array, file: string): PolicyIssue[] {
  return readPolicy(text, file).issues;
}

/** The policy in `text` and its issues; the policy holds only the objects without errors. */
export function readPolicy(text: string | Uint8Array, file: string): { policy: Policy; issues: PolicyIssue[] } {
  const policy: Policy = { clusterRoles: new Map(), roles: new Map(), clusterRoleBindings: [], roleBindings: [] };
  const issues: PolicyIssue[] = [];
  const seen = new Map<string, number>();
  let objects = 0;
  for (const parsed of readYamlDocuments(text)) {
    const document = parsed.document;
    if ("issue" in parsed) {
      issues.push({ ...parsed.issue, file, document });
      continue;
    }
    for (const { value, path } of flatten(parsed.value, "")) {
      objects++;
      const checked = checkObject(value, path);
      const object = checked.kind && checked.name ? `${checked.kind} ${checked.key}` : checked.kind;
      const report = (issue: FieldIssue) => issues.push({ ...issue, file, document, ...(object ? { object } : {}) });
      checked.issues.forEach(report);
      if (!checked.kind || checked.issues.some((i) => i.severity === "error")) continue;
      const first = seen.get(object!);
      if (first !== undefined) {
        report(
          fieldError(
            at(path, "metadata.name"),
            "Duplicate value",
            checked.name,
            `${object} is already defined in document ${first}: merge the two or rename one`,
          ),
        );
        continue;
      }
      seen.set(object!, document);
      if (checked.rules)
        (checked.kind === "ClusterRole" ? policy.clusterRoles : policy.roles).set(checked.key, checked.rules);
      if (checked.binding)
        (checked.kind === "ClusterRoleBinding" ? policy.clusterRoleBindings : policy.roleBindings).push(
          checked.binding,
        );
    }
  }
  if (objects === 0 && issues.length === 0)
    issues.push({
      ...fieldError(
        "<document>",
        "Required value",
        undefined,
        "the file holds no ClusterRole, ClusterRoleBinding, Role or RoleBinding: write the roles and their bindings (an empty file would deny every request)",
      ),
      file,
      document: 0,
    });
  for (const binding of [...policy.clusterRoleBindings, ...policy.roleBindings]) {
    const missing = missingRole(policy, binding);
    if (missing)
      issues.push({
        path: "roleRef.name",
        type: "Not found",
        value: binding.roleRef.name,
        detail: `${missing} is not in this file: the binding grants nothing until it is added (or fix the name)`,
        severity: "warning",
        file,
        document: seen.get(`${binding.kind} ${bindingKey(binding)}`) ?? 0,
        object: `${binding.kind} ${bindingKey(binding)}`,
      });
  }
  return { policy, issues };
}

/** The role a binding names, as upstream's lister would name it when missing (`clusterrole.rbac… "x"`), or undefined. */
export function missingRole(policy: Policy, binding: Binding): string | undefined {
  const { kind, name } = binding.roleRef;
  if (kind === "ClusterRole") return policy.clusterRoles.has(name) ? undefined : `clusterrole.${RBAC_GROUP} "${name}"`;
  return policy.roles.has(`${binding.namespace}/${name}`) ? undefined : `role.${RBAC_GROUP} "${name}"`;
}

const bindingKey = (binding: Binding) => (binding.namespace ? `${binding.namespace}/${binding.name}` : binding.name);
/** The path of `field` inside the object at `path`; "" names the object itself. */
const at = (path: string, field: string) => (!field ? path || "<document>" : path ? `${path}.${field}` : field);

/** Arrays and Lists (List, ClusterRoleList…) become their items; anything else is one object. */
function* flatten(value: unknown, path: string): Generator<{ value: unknown; path: string }> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* flatten(item, `${path}[${i}]`);
  } else if (isObject(value) && LIST_KINDS.includes(value.kind as string) && Array.isArray(value.items)) {
    for (const [i, item] of value.items.entries()) yield* flatten(item, at(path, `items[${i}]`));
  } else yield { value, path };
}

interface CheckedObject {
  kind?: Kind;
  name?: string;
  /** `name` for cluster-scoped objects, `namespace/name` for Roles and RoleBindings. */
  key: string;
  rules?: PolicyRule[];
  binding?: Binding;
  issues: FieldIssue[];
}

function checkObject(value: unknown, path: string): CheckedObject {
  const issues: FieldIssue[] = [];
  const error = reporter(issues, path);
  if (!isObject(value)) {
    error(
      "",
      "Invalid value",
      Array.isArray(value) ? "a list" : value,
      "expected an RBAC object (a map with apiVersion and kind)",
    );
    return { key: "", issues };
  }
  const kind = value.kind;
  if (!KINDS.includes(kind as Kind)) {
    error(
      "kind",
      kind === undefined ? "Required value" : "Unsupported value",
      kind,
      `supported values: ${KINDS.map((k) => `"${k}"`).join(", ")}${kind === "Pod" ? "; pods go in a manifest (--config), not in the authorization policy" : ""}`,
    );
    return { key: "", issues };
  }
  const k = kind as Kind;
  if (value.apiVersion !== API_VERSION)
    error(
      "apiVersion",
      "Unsupported value",
      value.apiVersion ?? "",
      `supported values: "${API_VERSION}"${/^rbac\.authorization\.k8s\.io\/v1(alpha|beta)1$/.test(String(value.apiVersion)) ? " (that version was removed in Kubernetes 1.22; the fields are the same, change apiVersion)" : ""}`,
    );
  unknownFields(value, [...FIELDS.object!, ...FIELDS[k]!], path, issues);
  const metadata = isObject(value.metadata) ? value.metadata : {};
  if (value.metadata !== undefined && !isObject(value.metadata))
    error("metadata", "Invalid value", value.metadata, "must be a map (name, namespace, labels…)");
  const name = typeof metadata.name === "string" ? metadata.name : "";
  if (metadata.name === undefined)
    error("metadata.name", "Required value", undefined, "name or generateName is required");
  else for (const message of nameErrors(metadata.name)) error("metadata.name", "Invalid value", metadata.name, message);
  const namespaced = k === "Role" || k === "RoleBinding";
  // Cluster-scoped objects drop a namespace, as the API server does; namespaced ones default to "default".
  const namespace = namespaced ? (typeof metadata.namespace === "string" && metadata.namespace) || "default" : "";
  const key = namespace ? `${namespace}/${name}` : name;
  if (k === "ClusterRole" || k === "Role") {
    if (value.aggregationRule !== undefined)
      issues.push({
        path: at(path, "aggregationRule"),
        type: "Not supported",
        detail: "aggregation is not followed here: list the rules in this ClusterRole itself",
        severity: "warning",
      });
    const rules = listOf(value.rules, at(path, "rules"), issues).map((rule, i) =>
      checkRule(rule, at(path, `rules[${i}]`), namespaced, issues),
    );
    return { kind: k, name, key, rules, issues };
  }
  const roleRef = checkRoleRef(value.roleRef, at(path, "roleRef"), k, issues);
  const subjects = listOf(value.subjects, at(path, "subjects"), issues).map((subject, i) =>
    checkSubject(subject, at(path, `subjects[${i}]`), namespaced, issues),
  );
  if (subjects.length === 0)
    issues.push({
      path: at(path, "subjects"),
      type: "Required value",
      detail: "no subjects: this binding grants nothing (list the User, Group or ServiceAccount it is for)",
      severity: "warning",
    });
  if (namespaced)
    issues.push({
      path: at(path, "kind"),
      type: "Invalid value",
      value: k,
      detail:
        "every request to the kubelet is cluster-wide (resource nodes), so a RoleBinding never applies: use a ClusterRoleBinding",
      severity: "warning",
    });
  return { kind: k, name, key, binding: { kind: k as Binding["kind"], name, namespace, roleRef, subjects }, issues };
}

function checkRule(value: unknown, path: string, namespaced: boolean, issues: FieldIssue[]): PolicyRule {
  const rule: PolicyRule = { verbs: [], apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: [] };
  if (!isObject(value)) {
    issues.push(fieldError(path, "Invalid value", value, "a rule is a map of verbs, apiGroups, resources…"));
    return rule;
  }
  unknownFields(value, FIELDS.rule!, path, issues);
  const malformed = new Set<string>();
  for (const field of FIELDS.rule as Array<keyof PolicyRule>) {
    const before = issues.length;
    rule[field] = strings(value[field], at(path, field), issues);
    if (issues.length > before) malformed.add(field);
  }
  const error = (field: string, type: string, bad?: unknown, detail?: string) => {
    if (!malformed.has(field)) issues.push(fieldError(at(path, field), type, bad, detail));
  };
  // upstream's validatePolicyRule, its paths and wording
  if (rule.verbs.length === 0) error("verbs", "Required value", undefined, "verbs must contain at least one value");
  if (rule.nonResourceURLs.length > 0) {
    if (namespaced)
      error(
        "nonResourceURLs",
        "Invalid value",
        rule.nonResourceURLs,
        "namespaced rules cannot apply to non-resource URLs",
      );
    if (rule.apiGroups.length > 0 || rule.resources.length > 0 || rule.resourceNames.length > 0)
      error(
        "nonResourceURLs",
        "Invalid value",
        rule.nonResourceURLs,
        "rules cannot apply to both regular resources and non-resource URLs",
      );
    return rule;
  }
  if (rule.apiGroups.length === 0)
    error("apiGroups", "Required value", undefined, "resource rules must supply at least one api group");
  if (rule.resources.length === 0)
    error("resources", "Required value", undefined, "resource rules must supply at least one resource");
  if (rule.resourceNames.length > 0 && rule.resources.length > 1)
    error("resourceNames", "Required value", undefined, "resource names cannot apply to multiple resources");
  checkReach(rule, path, issues);
  return rule;
}

/** Warnings for a resource rule that cannot match any request this kubelet checks, with the likely fix. */
function checkReach(rule: PolicyRule, path: string, issues: FieldIssue[]): void {
  const warn = (field: string, bad: unknown, detail: string) =>
    issues.push({ path: at(path, field), type: "Invalid value", value: bad, detail, severity: "warning" });
  const kubeletResources = KUBELET_SUBRESOURCES.map((s) => `nodes/${s}`);
  const reaches = (r: string) =>
    r === ALL ||
    kubeletResources.includes(r) ||
    API_RESOURCES.includes(r) ||
    (r.startsWith("*/") && KUBELET_SUBRESOURCES.includes(r.slice(2)));
  for (const [i, resource] of rule.resources.entries()) {
    if (reaches(resource)) continue;
    const listed = `the kubelet checks ${kubeletResources.join(", ")} (or "*")`;
    const guess = closestName(resource, kubeletResources);
    if (resource === "nodes") warn(`resources[${i}]`, resource, `nodes does not cover its subresources: ${listed}`);
    else if (resource === "nodes/*") warn(`resources[${i}]`, resource, `a star after nodes/ is no glob: ${listed}`);
    else if (guess) warn(`resources[${i}]`, resource, `the kubelet checks no such resource (did you mean ${guess}?)`);
  }
  const why = [
    ...(rule.verbs.some((v) => v === ALL || KUBELET_VERBS.includes(v))
      ? []
      : [`no verb the kubelet checks (${KUBELET_VERBS.join(", ")})`]),
    ...(rule.apiGroups.some((g) => g === ALL || g === "") ? [] : ['no "" (core) API group, where nodes are']),
    ...(rule.resources.some(reaches) ? [] : [`no resource the kubelet checks (${kubeletResources.join(", ")})`]),
  ];
  if (why.length && rule.verbs.length && rule.apiGroups.length && rule.resources.length)
    issues.push({
      path,
      type: "Invalid value",
      detail: `this rule grants nothing on a kubelet: ${why.join("; ")}`,
      severity: "warning",
    });
}

function checkRoleRef(value: unknown, path: string, kind: Kind, issues: FieldIssue[]): RoleRef {
  const error = reporter(issues, path);
  if (!isObject(value)) {
    error(
      "",
      "Required value",
      undefined,
      "a binding names its role: roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: …}",
    );
    return { apiGroup: "", kind: "", name: "" };
  }
  unknownFields(value, FIELDS.roleRef!, path, issues);
  const ref = {
    apiGroup: text(value.apiGroup, at(path, "apiGroup"), issues),
    kind: text(value.kind, at(path, "kind"), issues),
    name: text(value.name, at(path, "name"), issues),
  };
  if (ref.apiGroup !== RBAC_GROUP)
    error("apiGroup", "Unsupported value", ref.apiGroup, `supported values: "${RBAC_GROUP}"`);
  const kinds = kind === "ClusterRoleBinding" ? ["ClusterRole"] : ["Role", "ClusterRole"];
  if (!kinds.includes(ref.kind))
    error("kind", "Unsupported value", ref.kind, `supported values: ${kinds.map((k) => `"${k}"`).join(", ")}`);
  if (!ref.name) error("name", "Required value");
  else for (const message of nameErrors(ref.name)) error("name", "Invalid value", ref.name, message);
  return ref;
}

function checkSubject(value: unknown, path: string, namespaced: boolean, issues: FieldIssue[]): Subject {
  const subject: Subject = { kind: "", apiGroup: "", name: "", namespace: "" };
  const error = reporter(issues, path);
  if (!isObject(value)) {
    error("", "Invalid value", value, "a subject is a map: {kind: User, name: …}");
    return subject;
  }
  unknownFields(value, FIELDS.subject!, path, issues);
  for (const field of FIELDS.subject as Array<keyof Subject>)
    subject[field] = text(value[field], at(path, field), issues);
  // rbac/v1 defaulting: User and Group subjects are in the RBAC group unless they say otherwise.
  if (!subject.apiGroup && (subject.kind === "User" || subject.kind === "Group")) subject.apiGroup = RBAC_GROUP;
  if (!subject.name) error("name", "Required value");
  switch (subject.kind) {
    case "ServiceAccount":
      if (subject.name && !isDnsSubdomain(subject.name))
        error(
          "name",
          "Invalid value",
          subject.name,
          "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        );
      if (subject.apiGroup) error("apiGroup", "Unsupported value", subject.apiGroup, 'supported values: ""');
      if (!namespaced && !subject.namespace)
        error(
          "namespace",
          "Required value",
          undefined,
          `a ServiceAccount of a ClusterRoleBinding names its namespace (its tokens' user is system:serviceaccount:<namespace>:${subject.name || "<name>"})`,
        );
      break;
    case "User":
    case "Group":
      if (subject.apiGroup !== RBAC_GROUP)
        error("apiGroup", "Unsupported value", subject.apiGroup, `supported values: "${RBAC_GROUP}"`);
      break;
    default:
      error("kind", "Unsupported value", subject.kind, 'supported values: "ServiceAccount", "User", "Group"');
  }
  return subject;
}

/** Adds an error at `field` of the object at `path` to `issues`. */
function reporter(issues: FieldIssue[], path: string) {
  return (field: string, type: string, bad?: unknown, detail?: string) =>
    issues.push(fieldError(at(path, field), type, bad, detail));
}

/** apimachinery's IsValidPathSegmentName: the names of roles and bindings. */
function nameErrors(name: unknown): string[] {
  if (typeof name !== "string") return ["must be a string"];
  if (name === "") return ["name or generateName is required"];
  if (name === "." || name === "..") return [`may not be '${name}'`];
  return ["/", "%"].filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
}

function isDnsSubdomain(name: string): boolean {
  return name.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name);
}

function unknownFields(value: Json, known: string[], path: string, issues: FieldIssue[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key) || key === "status") continue;
    const guess = closestName(key, known);
    issues.push(
      fieldError(
        at(path, key),
        "Unknown field",
        undefined,
        `unknown field "${at(path, key)}" (${guess ? `did you mean ${guess}?` : "check the spelling"}): fix or remove it`,
      ),
    );
  }
}

/** A list field: absent is empty; anything but a list is an error. */
function listOf(value: unknown, path: string, issues: FieldIssue[]): unknown[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) return value;
  issues.push(fieldError(path, "Invalid value", value, "must be a list"));
  return [];
}

/** A list of strings: `verbs: get` is an error that shows the list to write. */
function strings(value: unknown, path: string, issues: FieldIssue[]): string[] {
  if (value === undefined) return [];
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value;
  const fix = typeof value === "string" ? ` (write [${value}])` : "";
  issues.push(fieldError(path, "Invalid value", value, `must be a list of strings${fix}`));
  return [];
}

function text(value: unknown, path: string, issues: FieldIssue[]): string {
  if (value === undefined || typeof value === "string") return value ?? "";
  issues.push(fieldError(path, "Invalid value", value, "must be a string"));
  return "";
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
