import { expect, test } from "bun:test";
import { expand } from "./expand.ts";

const vars: Record<string, string> = { VAR_A: "A", VAR_B: "B", EMPTY: "" };
const cases: Array<[string, string]> = [
  ["$(VAR_A)", "A"],
  ["___$(VAR_B)___", "___B___"],
  ["$(VAR_A)-$(VAR_B)", "A-B"],
  ["$(EMPTY)x", "x"],
  ["$(UNKNOWN)", "$(UNKNOWN)"],
  ["$$(VAR_A)", "$(VAR_A)"],
  ["$$$(VAR_A)", "$A"],
  ["$$$$(VAR_A)", "$$(VAR_A)"],
  ["$VAR_A", "$VAR_A"],
  ["$(VAR_A", "$(VAR_A"],
  ["a $(VAR_A", "a $(VAR_A"],
  ["$VAR_A (x)", "$VAR_A (x)"],
  ["$()", "$()"],
  ["trailing $", "trailing $"],
  ["no refs", "no refs"],
];

for (const [input, expected] of cases) {
  test(`expands ${JSON.stringify(input)} to ${JSON.stringify(expected)} as Kubernetes does`, () => {
    expect(expand(input, (name) => vars[name])).toBe(expected);
  });
}
