import { expect, test } from "bun:test";
import { readManifests } from "./manifest.ts";
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
    issues: r.issues.map(formatIssue),
  }));

test("a ConfigMap or Secret of an apiVersion other than v1 is refused by kind and name, inside a list too", () => {
  expect(refusals("apiVersion: v2\nkind: ConfigMap\nmetadata: {name: m}\n")).toEqual([
    { pod: "default/m", kind: "ConfigMap", issues: ['apiVersion: Unsupported value: "v2": supported values: "v1"'] },
  ]);
  expect(refusals("apiVersion: v1\nkind: List\nitems:\n- {kind: Secret, metadata: {name: s}}\n")).toEqual([
    {
      pod: "default/s",
      kind: "Secret",
      issues: ['items[0].apiVersion: Unsupported value: "": supported values: "v1"'],
    },
  ]);
});

test("metadata or spec that is a list or a scalar is refused, not read as an empty pod", () => {
  const detail = "must be an object (a map of fields), not a list or a scalar";
  expect(refusals("apiVersion: v1\nkind: Pod\nmetadata: [a]\n")).toEqual([
    { pod: undefined, kind: undefined, issues: [`metadata: Invalid value: "a list": ${detail}`] },
  ]);
  expect(refusals("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: 3\n")).toEqual([
    { pod: "default/p", kind: undefined, issues: [`spec: Invalid value: 3: ${detail}`] },
  ]);
});
