// Kubernetes quantities: every suffix, exponents, signs, and what is not a quantity.
import { expect, test } from "bun:test";
import { milliCpu, parseQuantity } from "./quantity.ts";

test("parses plain numbers, decimal and binary suffixes, exponents and signs", () => {
  const table: Array<[string | number, number]> = [
    ["1", 1],
    [" 2 ", 2],
    ["0.5", 0.5],
    [".5", 0.5],
    [".25", 0.25],
    ["12.5", 12.5],
    ["1.", 1],
    ["+3", 3],
    ["-3", -3],
    ["500m", 0.5],
    ["1k", 1e3],
    ["1M", 1e6],
    ["1G", 1e9],
    ["1T", 1e12],
    ["1P", 1e15],
    ["1E", 1e18],
    ["1Ki", 1024],
    ["1Mi", 2 ** 20],
    ["1.5Gi", 1.5 * 2 ** 30],
    ["1Ti", 2 ** 40],
    ["1Pi", 2 ** 50],
    ["1Ei", 2 ** 60],
    ["1e3", 1000],
    ["1E3", 1000],
    ["25e-1", 2.5],
    ["2e+2", 200],
    ["1e10", 1e10],
    [7, 7],
    [0.25, 0.25],
  ];
  expect(table.map(([text]) => parseQuantity(text))).toEqual(table.map(([, value]) => value));
});

test("anything else is not a quantity", () => {
  for (const text of ["", "abc", "1x", "Mi", "1 Mi", "1mi", "1KiB", "1e", "e3", "1.2.3", "--1", "1e400", Infinity, NaN])
    expect([text, parseQuantity(text)]).toEqual([text, undefined]);
});

test("CPU in millicores, rounded", () => {
  expect([milliCpu("250m"), milliCpu("1.5"), milliCpu(2), milliCpu("0.0001"), milliCpu("1x")]).toEqual([
    250,
    1500,
    2000,
    0,
    undefined,
  ]);
});
