import { describe, expect, test } from "bun:test";
import { formatValue, labelText, renderFamily } from "./exposition.ts";

describe("Prometheus text exposition", () => {
  test("label values escape backslashes, double quotes and newlines, and label names are sorted", () => {
    expect(labelText({ path: 'C:\\dir\n"x"', a: "1" })).toBe('{a="1",path="C:\\\\dir\\n\\"x\\""}');
    expect(labelText({})).toBe("");
  });

  test("infinities and NaN are written +Inf, -Inf and NaN", () => {
    expect([Infinity, -Infinity, Number.NaN, 0.25, 3].map(formatValue)).toEqual(["+Inf", "-Inf", "NaN", "0.25", "3"]);
  });

  test("a family's HELP escapes backslashes and newlines but not quotes; no sample, no family", () => {
    const text = renderFamily("x_bytes", 'one \\ two\nthree "q"', "gauge", [{ value: Infinity, timestamp: 1.6 }]);
    expect(text.split("\n")).toEqual([
      '# HELP x_bytes one \\\\ two\\nthree "q"',
      "# TYPE x_bytes gauge",
      "x_bytes +Inf 2",
    ]);
    expect(renderFamily("x_bytes", "help", "gauge", [])).toBe("");
  });
});
