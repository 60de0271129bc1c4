import { expect, test } from "bun:test";
import type { V1Container } from "../../api/types.ts";
import { containerUnified, type MemoryQosSettings } from "./memory-qos.ts";

const Mi = 2 ** 20;
const Gi = 2 ** 30;
const box = (requests: Record<string, string>, limits: Record<string, string>): V1Container => ({
  name: "app",
  resources: { requests, limits },
});
const v2: MemoryQosSettings = {
  cgroupVersion: 2,
  singleProcessOomKill: false,
  memoryQos: true,
  throttlingFactor: 0.9,
  allocatableMemoryBytes: 8 * Gi,
};

test("memory.high is floor((request + factor × (limit − request)) / page) × page; no memory.min (policy None)", () => {
  // 100Mi + 0.9 × 900Mi = 910Mi = 954204160 bytes, a whole number of pages.
  expect(containerUnified(box({ memory: "100Mi" }, { memory: "1000Mi" }), v2)).toEqual({
    "memory.oom.group": "1",
    "memory.high": String(910 * Mi),
  });
  // 0 + 0.5 × 10001 bytes = 5000.5: rounded down to the page (4096).
  expect(containerUnified(box({}, { memory: "10001" }), { ...v2, throttlingFactor: 0.5 })["memory.high"]).toBe("4096");
});

test("without a limit memory.high is taken between the request and node allocatable memory", () => {
  const high = Math.floor((Gi + (8 * Gi - Gi) * 0.9) / 4096) * 4096;
  expect(containerUnified(box({ memory: "1Gi" }, {}), v2)["memory.high"]).toBe(String(high));
});

test("a container whose memory request equals its limit gets no memory.high", () => {
  expect(containerUnified(box({ memory: "1Gi" }, { memory: "1Gi" }), v2)).toEqual({ "memory.oom.group": "1" });
});

test("memory.oom.group is left out with singleProcessOOMKill, the QoS files without the MemoryQoS gate", () => {
  const container = box({ memory: "100Mi" }, { memory: "1Gi" });
  expect(Object.keys(containerUnified(container, { ...v2, singleProcessOomKill: true }))).toEqual(["memory.high"]);
  expect(containerUnified(container, { ...v2, memoryQos: false })).toEqual({ "memory.oom.group": "1" });
});

test("cgroup v1 has none of these files: nothing is set", () => {
  expect(containerUnified(box({ memory: "100Mi" }, { memory: "1Gi" }), { ...v2, cgroupVersion: 1 })).toEqual({});
});
