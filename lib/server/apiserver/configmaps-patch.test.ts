import { describe, expect, test } from "bun:test";
import { mergePatch } from "./configmaps-patch.ts";

describe("mergePatch", () => {
  test("merges maps key by key, deletes keys patched to null and replaces everything else (RFC 7386)", () => {
    const target = { data: { a: "1", b: "2" }, metadata: { labels: { x: "y" } }, immutable: false };
    expect(mergePatch(target, { data: { b: null, c: "3" }, immutable: true, metadata: { labels: null } })).toEqual({
      data: { a: "1", c: "3" },
      metadata: {},
      immutable: true,
    });
  });

  test("a patch that is not an object replaces the target", () => {
    expect(mergePatch({ a: 1 }, ["x"])).toEqual(["x"]);
  });

  test("a strategic-merge directive is refused by name, not applied wrongly", () => {
    expect(() => mergePatch({ data: {} }, { $patch: "replace", data: {} })).toThrow(
      'the patch directive "$patch" is not supported here',
    );
  });
});
