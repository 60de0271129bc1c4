import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RequestAttributes, UserInfo } from "../authorizer.ts";
import { nodeRequest } from "../../testing/node-request.ts";
import { evaluatePolicy } from "./evaluate.ts";
import { readPolicy, type Policy } from "./policy-file.ts";

const policyOf = (text: string): Policy => {
  const { policy, issues } = readPolicy(text, "policy.yaml");
  expect(issues.filter((i) => i.severity === "error")).toEqual([]);
  return policy;
};

const role = (name: string, rules: string) =>
  `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: ${name}}\nrules:\n${rules}\n---\n`;
const binding = (
  name: string,
  roleName: string,
  subjects: string,
  kind = "ClusterRoleBinding",
  roleKind = "ClusterRole",
) =>
  `apiVersion: rbac.authorization.k8s.io/v1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: team}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ${roleKind}, name: ${roleName}}\nsubjects:\n${subjects}\n---\n`;

const SCRAPER = role("scraper", '- {apiGroups: [""], resources: [nodes/metrics], verbs: [get]}');

const user = (name: string, ...groups: string[]): UserInfo => ({ name, groups });
describe("subjects", () => {
  const cases: Array<[string, string, UserInfo, boolean]> = [
    ["a User subject applies to that user name", "- {kind: User, name: prometheus}", user("prometheus"), true],
    ["a User subject does not apply to another name", "- {kind: User, name: prometheus}", user("grafana"), false],
    ["a Group subject applies to a member", "- {kind: Group, name: scrapers}", user("x", "a", "scrapers"), true],
    [
      "a Group subject does not apply to a user of that name",
      "- {kind: Group, name: scrapers}",
      user("scrapers"),
      false,
    ],
    [
      "a ServiceAccount subject applies to its token's username",
      "- {kind: ServiceAccount, name: prom, namespace: monitoring}",
      user("system:serviceaccount:monitoring:prom"),
      true,
    ],
    [
      "a ServiceAccount subject does not apply to the same name in another namespace",
      "- {kind: ServiceAccount, name: prom, namespace: monitoring}",
      user("system:serviceaccount:default:prom"),
      false,
    ],
  ];
  for (const [claim, subjects, who, allowed] of cases)
    test(claim, () => {
      const policy = policyOf(SCRAPER + binding("b", "scraper", subjects));
      expect(evaluatePolicy(policy, nodeRequest(who, "get", "metrics")).decision).toBe(
        allowed ? "allow" : "no-opinion",
      );
    });
});

describe("decisions", () => {
  const policy = policyOf(
    SCRAPER +
      binding(
        "scrape",
        "scraper",
        "- {kind: User, name: prometheus}\n- {kind: ServiceAccount, name: prom, namespace: mon}",
      ),
  );

  test("an allow names the binding, the role and the subject as upstream's RBAC authorizer does", () => {
    expect(evaluatePolicy(policy, nodeRequest(user("prometheus"), "get", "metrics"))).toEqual({
      decision: "allow",
      reason: 'RBAC: allowed by ClusterRoleBinding "scrape" of ClusterRole "scraper" to User "prometheus"',
    });
    expect(evaluatePolicy(policy, nodeRequest(user("system:serviceaccount:mon:prom"), "get", "metrics")).reason).toBe(
      'RBAC: allowed by ClusterRoleBinding "scrape" of ClusterRole "scraper" to ServiceAccount "prom/mon"',
    );
  });

  test("a refusal is no opinion, never deny, with upstream's wording of who asked for what", () => {
    expect(evaluatePolicy(policy, nodeRequest(user("prometheus", "system:authenticated"), "create", "proxy"))).toEqual({
      decision: "no-opinion",
      reason:
        'RBAC: no rules authorize user "prometheus" with groups ["system:authenticated"] to "create" resource "nodes/proxy" named "node-1" cluster-wide',
    });
    const healthz: RequestAttributes = {
      ...nodeRequest(user("x"), "get", ""),
      resourceRequest: false,
      resource: "",
      name: "",
      path: "/healthz",
    };
    expect(evaluatePolicy(policy, healthz).reason).toBe(
      'RBAC: no rules authorize user "x" with groups [] to "get" nonResourceURL "/healthz" cluster-wide',
    );
  });

  test("a binding to a role the file lacks adds upstream's not-found error to the refusal", () => {
    const missing = policyOf(binding("b", "gone", "- {kind: User, name: u}"));
    expect(evaluatePolicy(missing, nodeRequest(user("u"), "get", "metrics")).reason).toEndWith(
      '; RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found',
    );
    expect(evaluatePolicy(missing, nodeRequest(user("other"), "get", "metrics")).reason).not.toContain("not found");
  });

  test("the first binding that allows wins, after any that do not", () => {
    const two = policyOf(
      role("logs", '- {apiGroups: [""], resources: [nodes/log], verbs: [get]}') +
        SCRAPER +
        binding("logs", "logs", "- {kind: Group, name: all}") +
        binding("scrape", "scraper", "- {kind: Group, name: all}"),
    );
    expect(evaluatePolicy(two, nodeRequest(user("u", "all"), "get", "metrics")).reason).toContain(
      'ClusterRoleBinding "scrape"',
    );
  });

  test("a RoleBinding applies only to requests in its namespace, as upstream (the kubelet's never are)", () => {
    const namespaced = policyOf(
      SCRAPER + binding("rb", "scraper", "- {kind: User, name: u}", "RoleBinding", "ClusterRole"),
    );
    expect(evaluatePolicy(namespaced, nodeRequest(user("u"), "get", "metrics")).decision).toBe("no-opinion");
    expect(evaluatePolicy(namespaced, nodeRequest(user("u"), "get", "metrics", { namespace: "team" }))).toEqual({
      decision: "allow",
      reason: 'RBAC: allowed by RoleBinding "rb/team" of ClusterRole "scraper" to User "u"',
    });
  });
});

/** Upstream's GetRequestAttributes (pkg/kubelet/server/auth.go) with fine-grained subresources: the attributes, in the order checked. */
function kubeletChecks(who: UserInfo, method: string, path: string): RequestAttributes[] {
  const verb = { GET: "get", POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[method] ?? "";
  const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  const base = { ...nodeRequest(who, verb, "proxy"), path };
  const exact = [
    ["/stats", "stats"],
    ["/metrics", "metrics"],
    ["/logs", "log"],
    ["/spec", "spec"],
    ["/checkpoint", "checkpoint"],
  ].find(([prefix]) => under(prefix!));
  if (exact) return [{ ...base, subresource: exact[1]! }];
  const fine = [
    ["/pods", "pods"],
    ["/runningpods", "pods"],
    ["/healthz", "healthz"],
    ["/configz", "configz"],
  ].find(([prefix]) => under(prefix!));
  return fine ? [{ ...base, subresource: fine[1]! }, base] : [base];
}

describe("the example roles in testdata/rbac", () => {
  const example = (name: string) =>
    policyOf(readFileSync(join(import.meta.dir, "../../../testdata/rbac", `${name}.yaml`), "utf8"));
  const allowed = (policy: Policy, who: UserInfo, method: string, path: string) =>
    kubeletChecks(who, method, path).some((attributes) => evaluatePolicy(policy, attributes).decision === "allow");
  const cases: Array<[string, UserInfo, Array<[string, string]>, Array<[string, string]>]> = [
    [
      "scraper",
      user("prometheus"),
      [
        ["GET", "/metrics"],
        ["GET", "/metrics/cadvisor"],
        ["GET", "/metrics/resource"],
        ["GET", "/metrics/probes"],
        ["GET", "/stats/summary"],
      ],
      [
        ["GET", "/pods"],
        ["GET", "/exec/default/web/nginx"],
        ["POST", "/run/default/web/nginx"],
        ["GET", "/containerLogs/default/web/nginx"],
        ["GET", "/logs/"],
        ["POST", "/pods"],
        ["GET", "/configz"],
      ],
    ],
    [
      "log-reader",
      user("alice", "log-readers"),
      [
        ["GET", "/logs/"],
        ["GET", "/logs/syslog"],
      ],
      [
        ["GET", "/exec/default/web/nginx"],
        ["GET", "/attach/default/web/nginx"],
        ["GET", "/containerLogs/default/web/nginx"],
        ["GET", "/metrics"],
        ["DELETE", "/pods/default/web"],
      ],
    ],
    [
      "admin",
      user("root", "system:masters"),
      [
        ["GET", "/exec/default/web/nginx"],
        ["POST", "/run/default/web/nginx"],
        ["POST", "/pods"],
        ["DELETE", "/pods/default/web"],
        ["GET", "/containerLogs/default/web/nginx"],
        ["GET", "/metrics"],
        ["GET", "/configz"],
      ],
      [],
    ],
  ];
  for (const [name, who, yes, no] of cases)
    test(`${name}.yaml grants what its comment says and nothing of the rest`, () => {
      const policy = example(name);
      expect(yes.filter(([method, path]) => !allowed(policy, who, method, path))).toEqual([]);
      expect(no.filter(([method, path]) => allowed(policy, who, method, path))).toEqual([]);
      expect(allowed(policy, user("someone-else"), "GET", "/metrics")).toBe(false);
    });
});

describe("the Kubernetes API's namespaced requests", () => {
  const text =
    role("pod-reader", '- {apiGroups: [""], resources: [pods], verbs: [list, watch]}') +
    binding("team-readers", "pod-reader", "- {kind: User, name: dev}", "RoleBinding");
  const list = (namespace: string): RequestAttributes => ({
    user: user("dev"),
    verb: "list",
    resourceRequest: true,
    apiGroup: "",
    apiVersion: "v1",
    resource: "pods",
    subresource: "",
    namespace,
    name: "",
    path: `/api/v1/namespaces/${namespace}/pods`,
  });

  test("a RoleBinding grants its role in its own namespace only, and the file gives no warning for it", () => {
    expect(evaluatePolicy(policyOf(text), list("team")).decision).toBe("allow");
    expect(evaluatePolicy(policyOf(text), list("other")).decision).toBe("no-opinion");
    expect(readPolicy(text, "policy.yaml").issues).toEqual([]);
  });
});
