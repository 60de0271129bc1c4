import { expect, test } from "bun:test";
import { writeStandInSysfs } from "../../testing/stand-in-sysfs.ts";
import { cpuDetails, cpusPerCore, cpusPerSocket, readTopology } from "./topology.ts";

test("one socket of four cores with two threads each reads as 8 CPUs, 4 cores, 1 socket, 1 NUMA node", () => {
  const t = readTopology(writeStandInSysfs({ sockets: 1, coresPerSocket: 4, threadsPerCore: 2, numaNodes: 1 }));
  expect([t.numCPUs, t.numCores, t.numSockets, t.numNUMANodes]).toEqual([8, 4, 1, 1]);
  expect(cpusPerCore(t)).toBe(2);
  // Hyperthread siblings are numCores apart; a core is named by its lowest CPU.
  expect(t.details.get(5)).toEqual({ numaNodeID: 0, socketID: 0, coreID: 1 });
  expect(cpuDetails(t).cpusInCores(1).toString()).toBe("1,5");
  expect(t.numaMemory.get(0)).toBe(4 * 1024 ** 3);
});

test("two sockets on two NUMA nodes put each socket's CPUs on its own node", () => {
  const t = readTopology(writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 }));
  expect([t.numCPUs, t.numCores, t.numSockets, t.numNUMANodes]).toEqual([8, 4, 2, 2]);
  expect(cpusPerSocket(t)).toBe(4);
  expect(cpuDetails(t).cpusInNUMANodes(1).toString()).toBe("2-3,6-7");
  expect(cpuDetails(t).socketsInNUMANodes(1).list()).toEqual([1]);
  expect(t.distances.get(0)).toEqual([10, 21]);
});

test("a kernel without NUMA reads as a single node 0", () => {
  const t = readTopology(
    writeStandInSysfs({ sockets: 1, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 1, noNodeDir: true }),
  );
  expect(t.numNUMANodes).toBe(1);
  expect([...t.details.values()].every((i) => i.numaNodeID === 0)).toBe(true);
});

test("a missing sysfs file is named in the error", () => {
  expect(() => readTopology("/nonexistent")).toThrow("/nonexistent/devices/system/cpu/online");
});

test("this machine's own sysfs reads as its CPUs", () => {
  const t = readTopology();
  expect(t.numCPUs).toBeGreaterThan(0);
  expect(t.numNUMANodes).toBeGreaterThan(0);
});
