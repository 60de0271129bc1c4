import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { main } from "./cli.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-validate-policy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SCRAPER = join(import.meta.dir, "../../testdata/rbac/scraper.yaml");

/** `kubelet …argv` with no config file: its exit code and what it wrote. */
async function kubelet(...argv: string[]) {
  const written = { out: "", err: "" };
  const into = (key: keyof typeof written) =>
    new Writable({ write: (chunk, _encoding, done) => done(void (written[key] += chunk)) });
  const io = { env: { KUBELET_CONFIG_FILE: "" }, readStdin: async () => "", exit: () => {} };
  const code = await main(argv, { ...io, stdout: into("out"), stderr: into("err") });
  return { code, ...written };
}

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe("kubelet validate --authorization_policy_file", () => {
  test("says a good policy is ok with what it holds, and exits 0 without any manifest path", async () => {
    expect(await kubelet("validate", "--authorization_policy_file", SCRAPER)).toEqual({
      code: 0,
      out: `ok   ${SCRAPER}  authorization policy: 1 ClusterRole, 1 ClusterRoleBinding\n`,
      err: "",
    });
  });

  test("lists each error and warning with file, document, object and field path, and exits 1", async () => {
    const bad = file(
      "bad.yaml",
      `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scraper}
rules: [{apiGroups: [""], resources: [nodes/metric], verb: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: scrape}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scraper}
subjects: [{kind: User, name: prometheus}]
`,
    );
    const { code, out } = await kubelet("validate", "--authorization-policy-file", bad);
    expect(code).toBe(1);
    expect(out.split("\n")).toEqual([
      `FAIL ${bad}  authorization policy: 0 ClusterRoles, 1 ClusterRoleBinding`,
      `  error ${bad}[0] ClusterRole scraper: rules[0].verb: Unknown field: unknown field "rules[0].verb" (did you mean verbs?): fix or remove it`,
      `  error ${bad}[0] ClusterRole scraper: rules[0].verbs: Required value: verbs must contain at least one value`,
      `  warn  ${bad}[0] ClusterRole scraper: rules[0].resources[0]: Invalid value: "nodes/metric": the kubelet checks no such resource (did you mean nodes/metrics?)`,
      `  warn  ${bad}[1] ClusterRoleBinding scrape: roleRef.name: Not found: "scraper": clusterrole.rbac.authorization.k8s.io "scraper" is not in this file: the binding grants nothing until it is added (or fix the name)`,
      "",
    ]);
  });

  test("names a policy file it cannot read and exits 1", async () => {
    const missing = join(dir, "missing.yaml");
    expect(await kubelet("validate", "--authorization_policy_file", missing)).toEqual({
      code: 1,
      out: `FAIL ${missing}  authorization policy: cannot read: no such file or directory\n`,
      err: "",
    });
  });

  test("checks the policy beside manifests, and -o json gives its verdict under policy", async () => {
    const pod = file(
      "pod.yaml",
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: web, image: nginx}]\n",
    );
    const text = await kubelet("validate", pod, "--authorization_policy_file", SCRAPER);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`ok   ${SCRAPER}  authorization policy: 1 ClusterRole, 1 ClusterRoleBinding\n`);
    expect(text.out).toContain("1 pods valid, 0 invalid");
    const json = await kubelet("validate", pod, "--authorization_policy_file", SCRAPER, "-o", "json");
    expect(JSON.parse(json.out).policy).toEqual({
      file: SCRAPER,
      valid: true,
      summary: "1 ClusterRole, 1 ClusterRoleBinding",
      issues: [],
    });
  });

  test("a policy given as a manifest is refused with the flag to use instead", async () => {
    const { code, out } = await kubelet("validate", SCRAPER);
    expect(code).toBe(1);
    expect(out).toContain(
      'kind: Unsupported value: "ClusterRole": a ClusterRole is an authorization policy: give its file with --authorization_policy_file (authorization.mode RBAC) and check it with `kubelet validate --authorization_policy_file FILE`, not as a manifest',
    );
  });

  test("still asks for something to check when given neither paths nor a policy file", async () => {
    const { code, err } = await kubelet("validate");
    expect(code).toBe(2);
    expect(err).toContain(
      "validate needs at least one path (a file, a directory, or - for stdin), or --authorization_policy_file",
    );
  });
});
