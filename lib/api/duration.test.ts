// Go durations read and printed as Go does.
import { describe, expect, test } from "bun:test";
import { formatDuration, parseDuration } from "./duration.ts";

describe("durations", () => {
  const cases: Array<[string, number]> = [
    ["10s", 10_000],
    ["1m30s", 90_000],
    ["500ms", 500],
    ["1h", 3_600_000],
    ["1.5s", 1500],
    ["0", 0],
    ["2h45m", 9_900_000],
  ];
  for (const [text, ms] of cases)
    test(`parses Go duration ${text} as ${ms} ms`, () => expect(parseDuration(text)).toBe(ms));
  for (const bad of ["10", "s", "10x", "1m 30s", ""])
    test(`rejects "${bad}" as Go does`, () => expect(() => parseDuration(bad)).toThrow(/invalid duration/));
  test("prints durations the way Go does", () => {
    expect([10_000, 90_000, 500, 3_600_000, 0, 300_000].map(formatDuration)).toEqual([
      "10s",
      "1m30s",
      "500ms",
      "1h",
      "0s",
      "5m",
    ]);
  });
});
