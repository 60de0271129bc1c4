import { expect, test } from "bun:test";
import { parseYaml, readManifests, stringifyYaml } from "./manifest.ts";
import { formatIssue } from "./types.ts";

test("a map or a list used as a mapping key is refused with its line and column", () => {
  for (const key of ["{a: 1}", "[a]"]) {
    const { pods, rejected } = readManifests(`apiVersion: v1\nkind: Pod\nmetadata:\n  ? ${key}\n  : x\n`, {
      source: "file",
      origin: "key.yaml",
    });
    expect(pods).toEqual([]);
    expect(rejected.flatMap((r) => r.issues.map(formatIssue))).toEqual([
      "<document>: Invalid value: cannot parse YAML/JSON at line 4, column 5: a mapping key must be a string, not a map or a list",
    ]);
  }
});

/** What readManifests refuses in `text`: each rejection's object, kind and printed issues. */
const refusals = (text: string) =>
  readManifests(text, { source: "file", origin: "refused.yaml" }).rejected.map((r) => ({
    pod: r.pod,
    kind: r.kind,
    issues: r.issues.map((i) => `${i.severity} ${formatIssue(i)}`),
  }));

test("a ConfigMap or Secret of an apiVersion other than v1 is refused by kind and name, inside a list too", () => {
  expect(refusals("apiVersion: v2\nkind: ConfigMap\nmetadata: {name: m}\n")).toEqual([
    {
      pod: "default/m",
      kind: "ConfigMap",
      issues: ['error apiVersion: Unsupported value: "v2": supported values: "v1"'],
    },
  ]);
  expect(refusals("apiVersion: v1\nkind: List\nitems:\n- {kind: Secret, metadata: {name: s}}\n")).toEqual([
    {
      pod: "default/s",
      kind: "Secret",
      issues: ['error items[0].apiVersion: Unsupported value: "": supported values: "v1"'],
    },
  ]);
});

test("metadata or spec that is a list or a scalar is refused, not read as an empty pod", () => {
  const detail = "must be an object (a map of fields), not a list or a scalar";
  expect(refusals("apiVersion: v1\nkind: Pod\nmetadata: [a]\n")).toEqual([
    { pod: undefined, kind: undefined, issues: [`error metadata: Invalid value: "a list": ${detail}`] },
  ]);
  expect(refusals("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: 3\n")).toEqual([
    { pod: "default/p", kind: undefined, issues: [`error spec: Invalid value: 3: ${detail}`] },
  ]);
});

test("a refused Pod is named by its namespace and name, and a missing apiVersion is shown as empty", () => {
  expect(refusals("kind: Pod\nmetadata: {name: p, namespace: ns}\n")).toEqual([
    { pod: "ns/p", kind: undefined, issues: ['error apiVersion: Unsupported value: "": supported values: "v1"'] },
  ]);
});

test("inside a list or an array, an issue's path starts at the item", () => {
  expect(refusals("[{kind: Foo}]\n").flatMap((r) => r.issues)).toEqual([
    'error [0].kind: Unsupported value: "Foo": only Pod, PodList, List, ConfigMap, Secret and ContainerManifest (v1beta1/v1beta2) are read by a kubelet',
  ]);
  expect(refusals("apiVersion: v1\nkind: List\nitems: [{kind: Pod, apiVersion: v1, metadata: []}]\n")).toEqual([
    {
      pod: undefined,
      kind: undefined,
      issues: [
        'error items[0].metadata: Invalid value: "a list": must be an object (a map of fields), not a list or a scalar',
      ],
    },
  ]);
});

test("a null item of a list is refused as not a Pod, and an empty document or a lone null is skipped", () => {
  expect(refusals("apiVersion: v1\nkind: List\nitems: [~]\n")).toEqual([
    {
      pod: undefined,
      kind: undefined,
      issues: ['error items[0]: Invalid value: "object": expected a Pod manifest (an object)'],
    },
  ]);
  for (const text of ["# only a comment\n", "---\n~\n"])
    expect(readManifests(text, { source: "file", origin: "empty.yaml" })).toEqual({
      pods: [],
      rejected: [],
      configs: [],
    });
});

test("a document of a kind other than Pod is not read as a v1beta1 ContainerManifest, which needs containers or an id", () => {
  const required =
    "error kind: Required value: a v1 Pod needs `apiVersion: v1` and `kind: Pod` (a v1beta1 ContainerManifest needs `version: v1beta1`)";
  expect(refusals("{kind: Foo, version: v1beta1, id: x}\n").flatMap((r) => r.issues)).toEqual([
    'error kind: Unsupported value: "Foo": only Pod, PodList, List, ConfigMap, Secret and ContainerManifest (v1beta1/v1beta2) are read by a kubelet',
  ]);
  expect(refusals("{version: v1beta1, metadata: {}}\n").flatMap((r) => r.issues)).toEqual([required]);
});

test("the kubelet-settings hint is given only when nothing of a pod is in the document", () => {
  const hint = "; kubelet settings are read with --config_file, not as a manifest";
  const hinted = (text: string) => refusals(text)[0]!.issues[0]!.endsWith(hint);
  expect(hinted("sync_frequency: 10s\n")).toBe(true);
  for (const field of ["apiVersion: v1", "metadata: {}", "spec: {}", "containers: []", "id: x"])
    expect([field, hinted(`${field}\n`)]).toEqual([field, false]);
});

/** The one pod read from `text`, which must not be refused. */
const podOf = (text: string) => {
  const { pods, rejected } = readManifests(text, { source: "file", origin: "pod.yaml" });
  expect(rejected).toEqual([]);
  return pods[0]!;
};

test("a v1beta1 ContainerManifest without an id is read with an empty name, for validation to report", () => {
  const pod = podOf("{version: v1beta1, containers: [{name: c, image: busybox}]}\n");
  expect(pod.metadata.name).toBe("");
  expect(pod.spec.containers.map((c) => c.name)).toEqual(["c"]);
});

test("a v1beta1 restartPolicy names one of always, onFailure and never, and an empty one means Always", () => {
  const policies = ["always", "onFailure", "never", ""].map(
    (p) => podOf(`{version: v1beta1, id: x, restartPolicy: {${p ? `${p}: {}` : ""}}}\n`).spec.restartPolicy,
  );
  expect(policies).toEqual(["Always", "OnFailure", "Never", "Always"]);
});

test("a v1beta1 env `key` is the name when no name is given, and a v1beta1 mount `path` the mountPath when none is given", () => {
  const container = podOf(
    "version: v1beta1\nid: x\ncontainers:\n- name: c\n  image: busybox\n" +
      "  env: [{key: K1, value: a}, {name: N2, value: b}, {name: N3, key: K3, value: c}]\n" +
      "  volumeMounts: [{name: a, path: /p}, {name: b, mountPath: /m, path: /x}, {name: c, mountPath: /m2}]\n",
  ).spec.containers[0]!;
  expect(container.env).toEqual([
    { name: "K1", value: "a" },
    { name: "N2", value: "b" },
    { name: "N3", key: "K3", value: "c" } as never,
  ]);
  expect(container.volumeMounts).toEqual([
    { name: "a", mountPath: "/p" },
    { name: "b", mountPath: "/m" },
    { name: "c", mountPath: "/m2" },
  ]);
});

test("containers, ports, mounts and volumes that are not objects are kept as written, for validation to report", () => {
  const beta = podOf(
    "{version: v1beta1, id: x, containers: [c, {name: d, image: b, volumeMounts: [m]}], volumes: [v]}\n",
  );
  expect(beta.spec.containers as unknown[]).toEqual(["c", expect.objectContaining({ volumeMounts: ["m"] })]);
  expect(beta.spec.volumes as unknown[]).toEqual(["v"]);
  const v1 = podOf(
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [c, {name: d, image: b, ports: [80]}]}\n",
  );
  expect(v1.spec.containers as unknown[]).toEqual(["c", expect.objectContaining({ ports: [80] })]);
});

test("an explicit null inside a list item is dropped as an unset field", () => {
  const pod = podOf(
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: b, command: ~}]}\n",
  );
  expect("command" in pod.spec.containers[0]!).toBe(false);
});

test("an empty uid in the manifest is derived as if none were given", () => {
  const uid = (meta: string) => podOf(`apiVersion: v1\nkind: Pod\nmetadata: {name: p${meta}}\n`).metadata.uid;
  expect(uid(", uid: ''")).toBe(uid(""));
  expect(uid(", uid: given")).toBe("given");
});

test("only an integer with a leading zero is octal: a word that starts with one stays a string", () => {
  const labels = podOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: 0755x, b: 0755}}\n").metadata.labels;
  expect(labels).toEqual({ a: "0755x", b: 0o755 as never });
});

test("nesting deeper than 100 levels of block lists is refused with its place", () => {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  x:\n  ${"- ".repeat(101)}x\n`;
  expect(refusals(text).flatMap((r) => r.issues)).toEqual([
    expect.stringMatching(
      /^error <document>: Invalid value: cannot parse YAML\/JSON at line \d+, column \d+: nested more than 100 levels deep/,
    ),
  ]);
});

test("parseYaml names the line and column of a syntax error", () => {
  expect(() => parseYaml("a: [1\n")).toThrow(/at line 2, column 1:/);
});

test("stringifyYaml writes long values on one line, and flow style when asked", () => {
  const long = "word ".repeat(30).trim();
  expect(stringifyYaml({ a: long })).toBe(`a: ${long}\n`);
  expect(stringifyYaml({ a: 1, b: ["x"] }, { flow: true })).toBe("{ a: 1, b: [ x ] }\n");
});

test("a v1beta1 ContainerManifestList is read as its items", () => {
  const { pods, rejected } = readManifests(
    "{kind: ContainerManifestList, items: [{version: v1beta1, id: a}, {version: v1beta1, id: b}]}\n",
    { source: "file", origin: "list.yaml" },
  );
  expect([pods.map((p) => p.metadata.name), rejected]).toEqual([["a", "b"], []]);
});
