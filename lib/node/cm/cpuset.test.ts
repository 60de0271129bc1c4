import { expect, test } from "bun:test";
import { CPUSet, parseCPUSet } from "./cpuset.ts";

test("a set prints consecutive ids as ranges, as the kernel's cpulist", () => {
  expect(new CPUSet([7, 0, 1, 2, 4]).toString()).toBe("0-2,4,7");
  expect(new CPUSet().toString()).toBe("");
});

test("the list format parses back to the same set", () => {
  for (const text of ["0", "0-3", "0,2-3,9", ""]) expect(parseCPUSet(text).toString()).toBe(text);
  expect(parseCPUSet("1,1,0").list()).toEqual([0, 1]);
});

test("a malformed list is refused with cpuset.Parse's words", () => {
  expect(() => parseCPUSet("1.3")).toThrow('strconv.Atoi: parsing "1.3": invalid syntax');
  expect(() => parseCPUSet("asd")).toThrow('strconv.Atoi: parsing "asd": invalid syntax');
  expect(() => parseCPUSet("3-1")).toThrow('invalid range "3-1" (3 > 1)');
});

test("set algebra keeps ids unique and sorted", () => {
  const a = new CPUSet([0, 1, 2]);
  const b = new CPUSet([2, 3]);
  expect(a.union(b).list()).toEqual([0, 1, 2, 3]);
  expect(a.intersection(b).list()).toEqual([2]);
  expect(a.difference(b).list()).toEqual([0, 1]);
  expect(new CPUSet([1]).isSubsetOf(a)).toBe(true);
  expect(a.equals(new CPUSet([2, 1, 0]))).toBe(true);
});
