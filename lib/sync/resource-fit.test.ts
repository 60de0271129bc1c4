// The resource fit at admission: requests, init containers, overhead, and the Go kubelet's numbers.
import { expect, test } from "bun:test";
import { insufficientResource, podRequests, sumRequests } from "./resource-fit.ts";
import { testPod } from "../testing/pods.ts";
import type { V1Container } from "../api/types.ts";

const c = (name: string, requests: Record<string, string>, limits: Record<string, string> = {}): V1Container => ({
  name,
  image: "busybox",
  resources: { requests, limits },
});

test("a pod requests the larger of its app containers' sum and its largest init container, plus its overhead", () => {
  const pod = testPod("web", {
    containers: [c("a", { cpu: "250m", memory: "64Mi" }), c("b", {}, { cpu: "250m" })],
    initContainers: [c("init", { cpu: "1", memory: "16Mi" })],
    overhead: { cpu: "100m", memory: "32Mi" },
  });
  expect(podRequests(pod)).toEqual({ milliCpu: 1100, memoryBytes: 96 * 2 ** 20 });
  expect(sumRequests([pod, pod])).toEqual({ milliCpu: 2200, memoryBytes: 192 * 2 ** 20 });
});

test("a sidecar's requests add to the app containers' at admission, as the scheduler counts them", () => {
  const pod = testPod("web", {
    containers: [c("a", { cpu: "250m", memory: "64Mi" })],
    initContainers: [{ ...c("proxy", { cpu: "100m", memory: "32Mi" }), restartPolicy: "Always" }],
  });
  expect(podRequests(pod)).toEqual({ milliCpu: 350, memoryBytes: 96 * 2 ** 20 });
});

test("a pod fits while its requests and the admitted pods' stay within allocatable; overhead counts", () => {
  const allocatable = { milliCpu: 2000, memoryBytes: 2 ** 30 };
  const used = { milliCpu: 1500, memoryBytes: 0 };
  const pod = testPod("web", { containers: [c("a", { cpu: "400m" })] });
  expect(insufficientResource(pod, used, allocatable)).toBeUndefined();
  expect(insufficientResource({ ...pod, spec: { ...pod.spec, overhead: { cpu: "200m" } } }, used, allocatable)).toEqual(
    { resource: "cpu", requested: 600, used: 1500, capacity: 2000 },
  );
  expect(insufficientResource(testPod("idle"), { milliCpu: 9000, memoryBytes: 0 }, allocatable)).toBeUndefined();
});

test("ephemeral-storage requests add up across pods, a limit without a request counting as one", () => {
  const pod = testPod("disk", {
    containers: [c("a", { "ephemeral-storage": "1Gi" }), c("b", {}, { "ephemeral-storage": "1Gi" })],
  });
  expect(podRequests(pod)).toEqual({ milliCpu: 0, memoryBytes: 0, ephemeralStorageBytes: 2 * 2 ** 30 });
  expect(sumRequests([pod, testPod("none"), pod]).ephemeralStorageBytes).toBe(4 * 2 ** 30);
});
