import { expect, test } from "bun:test";
import { checkpointChecksum, fnv32a, spew, stringMap } from "./checksum.ts";

test("FNV-32a matches Go's hash/fnv on known vectors", () => {
  expect(fnv32a("")).toBe(0x811c9dc5);
  expect(fnv32a("a")).toBe(0xe40c292c);
  expect(fnv32a("foobar")).toBe(0xbf9cf968);
});

test("go-spew prints struct fields with their types and map entries without theirs", () => {
  const value = {
    kind: "ptr" as const,
    type: "state.X",
    value: {
      kind: "struct" as const,
      type: "state.X",
      fields: [
        ["Name", { kind: "string", value: "a" }],
        ["M", stringMap({ b: "2", a: "1" })],
        ["N", { kind: "number", type: "uint64", value: 3 }],
      ] as Array<[string, never]>,
    },
  };
  expect(spew(value)).toBe("(*state.X){Name:(string)a M:(map[string]string)map[a:1 b:2] N:(uint64)3}");
});

test("a checkpoint's checksum is FNV-32a of its spew text", () => {
  const value = { kind: "string" as const, value: "x" };
  expect(checkpointChecksum(value)).toBe(fnv32a("(string)x"));
});
