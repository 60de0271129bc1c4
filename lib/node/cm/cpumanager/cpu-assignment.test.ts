import { expect, test } from "bun:test";
import { writeStandInSysfs } from "../../../testing/stand-in-sysfs.ts";
import { CPUSet, parseCPUSet } from "../cpuset.ts";
import { readTopology } from "../topology.ts";
import { takeByTopology, takeByTopologyDistributed } from "./cpu-assignment.ts";

// 1 socket, 4 cores, 2 threads: cores {0,4} {1,5} {2,6} {3,7}.
const oneSocketHT = readTopology(writeStandInSysfs({ sockets: 1, coresPerSocket: 4, threadsPerCore: 2, numaNodes: 1 }));
// 2 sockets on 2 NUMA nodes, 2 cores each, 2 threads: node 0 = 0,1,4,5; node 1 = 2,3,6,7.
const dualSocketHT = readTopology(
  writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 }),
);
const all = (n: number) => new CPUSet(Array.from({ length: n }, (_, i) => i));

test("two CPUs on a hyperthreaded socket are one whole core", () => {
  expect(takeByTopology(oneSocketHT, all(8), 2).toString()).toBe("0,4");
});

test("one CPU fills a partly used core before breaking a free one", () => {
  expect(takeByTopology(oneSocketHT, parseCPUSet("1-7"), 1).toString()).toBe("4");
});

test("a whole socket's worth takes the socket", () => {
  expect(takeByTopology(dualSocketHT, all(8), 4).toString()).toBe("0-1,4-5");
  // The socket with fewer free CPUs goes first, so large blocks stay free.
  expect(takeByTopology(dualSocketHT, parseCPUSet("1-7"), 2).toString()).toBe("1,5");
  expect(takeByTopology(dualSocketHT, parseCPUSet("0-1,3-7"), 2).toString()).toBe("3,7");
});

test("more CPUs than are free fail with upstream's words", () => {
  expect(() => takeByTopology(oneSocketHT, parseCPUSet("1-2"), 3)).toThrow(
    "not enough cpus available to satisfy request: requested=3, available=2",
  );
});

test("distribute-cpus-across-numa spreads a request larger than a node evenly over two nodes", () => {
  const quad = readTopology(writeStandInSysfs({ sockets: 2, coresPerSocket: 4, threadsPerCore: 1, numaNodes: 2 }));
  const set = takeByTopologyDistributed(quad, all(8), 6, 1);
  expect(set.intersection(parseCPUSet("0-3")).size).toBe(3);
  expect(set.intersection(parseCPUSet("4-7")).size).toBe(3);
  // What fits one node stays packed on one node.
  expect(takeByTopologyDistributed(quad, all(8), 2, 1).isSubsetOf(parseCPUSet("0-3"))).toBe(true);
});
