import { describe, expect, test } from "bun:test";
import { formatValue, labelText, renderFamily, renderedOnce } from "./exposition.ts";

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

  test("renderedOnce renders again only when an argument is another value or object than last time", () => {
    const calls: unknown[] = [];
    const render = renderedOnce((o: object, n: number) => (calls.push(o), `${n}`));
    const first = {};
    render(first, 1);
    render(first, 1);
    expect(calls).toHaveLength(1);
    render({}, 1);
    render({}, 1);
    render(first, 2);
    expect(calls).toHaveLength(4);
  });
});
