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
