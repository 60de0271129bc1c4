import { describe, expect, test } from "bun:test";
import { applyManifestStrictness } from "./manifest-strict.ts";
import type { FieldIssue } from "./types.ts";

const unknown = (detail: string): FieldIssue => ({
  path: "spec.containers[0].comand",
  type: "Unknown field",
  detail,
  severity: "warning",
});
const ignored: FieldIssue = {
  path: "spec.nodeSelector",
  type: "Ignored field",
  detail: "no effect",
  severity: "warning",
};

describe("manifest strictness", () => {
  test("strict: an unknown field becomes an error that keeps its did-you-mean and names --strict_manifests=false", () => {
    const [issue] = applyManifestStrictness(
      [unknown('unknown field "spec.containers[0].comand" is ignored (did you mean command?)')],
      true,
    );
    expect(issue).toMatchObject({ severity: "error", type: "Unknown field", path: "spec.containers[0].comand" });
    expect(issue!.detail).toBe(
      'unknown field "spec.containers[0].comand" (did you mean command?): fix or remove it, or give --strict_manifests=false to run pods without their unknown fields',
    );
  });

  test("strict: an unknown field without a close name says to check the spelling", () => {
    const [issue] = applyManifestStrictness([unknown('unknown field "x" is ignored (check the spelling)')], true);
    expect(issue!.detail).toStartWith('unknown field "spec.containers[0].comand" (check the spelling): ');
  });

  test("strict leaves other warnings as they are, and lenient leaves everything", () => {
    const issues = [ignored, unknown("is ignored (did you mean command?)")];
    expect(applyManifestStrictness(issues, true)[0]).toBe(ignored);
    expect(applyManifestStrictness(issues, false)).toBe(issues);
  });
});
