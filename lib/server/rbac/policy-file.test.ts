import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseYaml } from "../../api/manifest.ts";
import { checkRbacPolicy, describePolicy, formatPolicyIssue, readPolicy } from "./policy-file.ts";

const EXAMPLES = join(import.meta.dir, "../../../testdata/rbac");
const V1 = "apiVersion: rbac.authorization.k8s.io/v1";
const ROLE = `${V1}\nkind: ClusterRole\nmetadata: {name: scraper}\n`;
const BINDING = `${V1}\nkind: ClusterRoleBinding\nmetadata: {name: scrape}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scraper}\n`;
const GOOD_RULE = 'rules: [{apiGroups: [""], resources: [nodes/metrics], verbs: [get]}]';
const GOOD = `${ROLE}${GOOD_RULE}\n---\n${BINDING}subjects: [{kind: User, name: prometheus}]\n`;

const lines = (text: string) => checkRbacPolicy(text, "p.yaml").map(formatPolicyIssue);

describe("reading", () => {
  test("every example in testdata/rbac is free of errors and warnings, alone and all in one file", () => {
    const files = readdirSync(EXAMPLES).filter((f) => f.endsWith(".yaml"));
    expect(files.sort()).toEqual(["admin.yaml", "log-reader.yaml", "pod-reader.yaml", "scraper.yaml"]);
    const texts = files.map((f) => readFileSync(join(EXAMPLES, f), "utf8"));
    for (const [i, text] of texts.entries())
      expect({ file: files[i], issues: lines(text) }).toEqual({ file: files[i], issues: [] });
    const all = readPolicy(texts.join(""), "all.yaml");
    expect(all.issues).toEqual([]);
    expect(describePolicy(all.policy)).toBe("4 ClusterRoles, 4 ClusterRoleBindings");
  });

  test("reads multi-document YAML, a List, a ClusterRoleList and a top-level array alike", () => {
    const [role, bind] = GOOD.split("---\n") as [string, string];
    const indent = (text: string) => `  ${text.trim().replace(/\n/g, "\n    ")}`.replace(/^ {2}/, "  - ");
    for (const text of [
      GOOD,
      `${V1}\nkind: List\nitems:\n${indent(role)}\n${indent(bind)}\n`,
      `${V1}\nkind: ClusterRoleList\nitems:\n${indent(role)}\n---\n${bind}`,
      `[${JSON.stringify(parseYaml(role))}, ${JSON.stringify(parseYaml(bind))}]`,
    ]) {
      const { policy, issues } = readPolicy(text, "p.yaml");
      expect(issues).toEqual([]);
      expect(describePolicy(policy)).toBe("1 ClusterRole, 1 ClusterRoleBinding");
    }
  });

  test("keeps only the objects without errors, and says how many it kept", () => {
    const { policy } = readPolicy(`${GOOD}---\n${ROLE.replace("scraper", "broken")}rules: [{verbs: []}]\n`, "p.yaml");
    expect([...policy.clusterRoles.keys()]).toEqual(["scraper"]);
    expect(describePolicy(policy)).toBe("1 ClusterRole, 1 ClusterRoleBinding");
  });
});

describe("errors, with upstream's paths and wording and the fix", () => {
  const cases: Array<[string, string, string[]]> = [
    [
      "a rule without verbs",
      `${ROLE}rules: [{apiGroups: [""], resources: [nodes/metrics]}]`,
      ["p.yaml[0] ClusterRole scraper: rules[0].verbs: Required value: verbs must contain at least one value"],
    ],
    [
      "a misspelt field, with the closest real name",
      `${ROLE}rules: [{apiGroups: [""], resources: [nodes/metrics], verbs: [get], resourceName: [n]}]`,
      [
        'p.yaml[0] ClusterRole scraper: rules[0].resourceName: Unknown field: unknown field "rules[0].resourceName" (did you mean resourceNames?): fix or remove it',
      ],
    ],
    [
      "a scalar where a list belongs, with the list to write",
      `${ROLE}rules: [{apiGroups: [""], resources: [nodes/metrics], verbs: get}]`,
      ['p.yaml[0] ClusterRole scraper: rules[0].verbs: Invalid value: "get": must be a list of strings (write [get])'],
    ],
    [
      "a resource rule without API groups or resources",
      `${ROLE}rules: [{verbs: [get]}]`,
      [
        "p.yaml[0] ClusterRole scraper: rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        "p.yaml[0] ClusterRole scraper: rules[0].resources: Required value: resource rules must supply at least one resource",
      ],
    ],
    [
      "a rule for resources and URLs at once",
      `${ROLE}rules: [{verbs: [get], nonResourceURLs: [/metrics], resources: [nodes/metrics]}]`,
      [
        'p.yaml[0] ClusterRole scraper: rules[0].nonResourceURLs: Invalid value: ["/metrics"]: rules cannot apply to both regular resources and non-resource URLs',
      ],
    ],
    [
      "resource names over several resources",
      `${ROLE}rules: [{apiGroups: [""], resources: [nodes/metrics, nodes/stats], resourceNames: [n], verbs: [get]}]`,
      [
        "p.yaml[0] ClusterRole scraper: rules[0].resourceNames: Required value: resource names cannot apply to multiple resources",
      ],
    ],
    [
      "a removed API version",
      `${ROLE.replace("/v1", "/v1beta1")}${GOOD_RULE}`,
      [
        'p.yaml[0] ClusterRole scraper: apiVersion: Unsupported value: "rbac.authorization.k8s.io/v1beta1": supported values: "rbac.authorization.k8s.io/v1" (that version was removed in Kubernetes 1.22; the fields are the same, change apiVersion)',
      ],
    ],
    [
      "a kind that is not RBAC",
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}",
      [
        'p.yaml[0]: kind: Unsupported value: "Pod": supported values: "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"; pods go in a manifest (--config), not in the authorization policy',
      ],
    ],
    [
      "a role without a name, or with a slash in it",
      `${V1}\nkind: ClusterRole\nmetadata: {}\n---\n${V1}\nkind: ClusterRole\nmetadata: {name: a/b}`,
      [
        "p.yaml[0] ClusterRole: metadata.name: Required value: name or generateName is required",
        "p.yaml[1] ClusterRole a/b: metadata.name: Invalid value: \"a/b\": may not contain '/'",
      ],
    ],
    [
      "a binding whose roleRef lacks its API group or names a Role",
      `${BINDING.replace("apiGroup: rbac.authorization.k8s.io, kind: ClusterRole", "kind: Role")}subjects: [{kind: User, name: u}]`,
      [
        'p.yaml[0] ClusterRoleBinding scrape: roleRef.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"',
        'p.yaml[0] ClusterRoleBinding scrape: roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
      ],
    ],
    [
      "subjects of an unknown kind, of a wrong group, or a ServiceAccount without namespace",
      `${BINDING}subjects: [{kind: Users, name: u}, {kind: Group, apiGroup: "", name: g}, {kind: ServiceAccount, name: prom}]`,
      [
        'p.yaml[0] ClusterRoleBinding scrape: subjects[0].kind: Unsupported value: "Users": supported values: "ServiceAccount", "User", "Group"',
        "p.yaml[0] ClusterRoleBinding scrape: subjects[2].namespace: Required value: a ServiceAccount of a ClusterRoleBinding names its namespace (its tokens' user is system:serviceaccount:<namespace>:prom)",
      ],
    ],
    [
      "the same role twice",
      `${ROLE}${GOOD_RULE}\n---\n${ROLE}${GOOD_RULE}`,
      [
        'p.yaml[1] ClusterRole scraper: metadata.name: Duplicate value: "scraper": ClusterRole scraper is already defined in document 0: merge the two or rename one',
      ],
    ],
    [
      "YAML that does not parse, with line and column",
      `${ROLE}rules: [{verbs: [get]`,
      ["p.yaml[0]: <document>: Invalid value: cannot parse YAML/JSON at line 4"],
    ],
    [
      "a file with no objects at all",
      "# nothing yet\n",
      [
        "p.yaml[0]: <document>: Required value: the file holds no ClusterRole, ClusterRoleBinding, Role or RoleBinding: write the roles and their bindings (an empty file would deny every request)",
      ],
    ],
  ];
  for (const [what, text, expected] of cases)
    test(`names ${what}`, () => {
      const errors = checkRbacPolicy(text, "p.yaml").filter((i) => i.severity === "error");
      const got = errors.map(formatPolicyIssue);
      expect(got.length).toBe(expected.length);
      for (const [i, line] of expected.entries()) expect(got[i]!).toStartWith(line);
    });
});

describe("warnings: what loads but grants nothing on a kubelet", () => {
  const cases: Array<[string, string, string[]]> = [
    [
      "a misspelt subresource, with the one meant",
      `${ROLE}rules: [{apiGroups: [""], resources: [nodes/metric], verbs: [get]}]`,
      [
        'p.yaml[0] ClusterRole scraper: rules[0].resources[0]: Invalid value: "nodes/metric": the kubelet checks no such resource (did you mean nodes/metrics?)',
        "p.yaml[0] ClusterRole scraper: rules[0]: Invalid value: this rule grants nothing on a kubelet: no resource the kubelet checks",
      ],
    ],
    [
      "nodes, which does not cover its subresources, and nodes/*, which is no glob",
      `${ROLE}rules: [{apiGroups: [""], resources: [nodes, "nodes/*", nodes/stats], verbs: [get, list]}]`,
      [
        'p.yaml[0] ClusterRole scraper: rules[0].resources[0]: Invalid value: "nodes": nodes does not cover its subresources: the kubelet checks nodes/proxy,',
        'p.yaml[0] ClusterRole scraper: rules[0].resources[1]: Invalid value: "nodes/*": a star after nodes/ is no glob: the kubelet checks nodes/proxy,',
      ],
    ],
    [
      "a rule in another API group or with verbs the kubelet never asks for",
      `${ROLE}rules: [{apiGroups: [apps], resources: ["*"], verbs: [bind, escalate]}]`,
      [
        'p.yaml[0] ClusterRole scraper: rules[0]: Invalid value: this rule grants nothing on a kubelet: no verb the kubelet checks (get, create, update, patch, delete, list, watch); no "" (core) API group, where nodes are',
      ],
    ],
    [
      "a binding to a role the file lacks, in upstream's not-found words",
      `${BINDING.replace("name: scraper", "name: scrapr")}subjects: [{kind: User, name: u}]`,
      [
        'p.yaml[0] ClusterRoleBinding scrape: roleRef.name: Not found: "scrapr": clusterrole.rbac.authorization.k8s.io "scrapr" is not in this file: the binding grants nothing until it is added (or fix the name)',
      ],
    ],
    [
      "a binding without subjects",
      `${ROLE}${GOOD_RULE}\n---\n${BINDING}`,
      [
        "p.yaml[1] ClusterRoleBinding scrape: subjects: Required value: no subjects: this binding grants nothing (list the User, Group or ServiceAccount it is for)",
      ],
    ],
    [
      "a RoleBinding, which never applies to the kubelet's cluster-wide requests",
      `${ROLE}${GOOD_RULE}\n---\n${BINDING.replace("kind: ClusterRoleBinding", "kind: RoleBinding")}subjects: [{kind: User, name: u}]`,
      [
        'p.yaml[1] RoleBinding default/scrape: kind: Invalid value: "RoleBinding": every request to the kubelet is cluster-wide (resource nodes), so a RoleBinding never applies: use a ClusterRoleBinding',
      ],
    ],
    [
      "an aggregation rule, which is not followed",
      `${ROLE}${GOOD_RULE}\naggregationRule: {clusterRoleSelectors: []}`,
      [
        "p.yaml[0] ClusterRole scraper: aggregationRule: Not supported: aggregation is not followed here: list the rules in this ClusterRole itself",
      ],
    ],
  ];
  for (const [what, text, expected] of cases)
    test(`names ${what}`, () => {
      const issues = checkRbacPolicy(text, "p.yaml");
      expect(issues.filter((i) => i.severity === "error").map(formatPolicyIssue)).toEqual([]);
      const got = issues.filter((i) => i.severity === "warning").map(formatPolicyIssue);
      expect(got.length).toBe(expected.length);
      for (const [i, line] of expected.entries()) expect(got[i]!).toStartWith(line);
    });
});
