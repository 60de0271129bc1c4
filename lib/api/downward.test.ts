import { expect, test } from "bun:test";
import { testPod } from "../testing/pods.ts";
import { podFieldValue, resourceFieldValue } from "./downward.ts";

const pod = () => {
  const p = testPod("web");
  p.metadata.labels = { tier: "front", app: 'say "hi"' };
  p.metadata.annotations = { ...p.metadata.annotations, "team.example/owner": "ops" };
  return p;
};
const placement = { nodeName: "node-1", hostIP: "10.0.0.1", podIP: "10.0.0.7" };

test("a labels or annotations file lists keys in order, values quoted as Go's %q, without the kubelet's own annotations", () => {
  const p = pod();
  expect(Object.keys(p.metadata.annotations).some((k) => k.startsWith("kubelet.io/"))).toBe(true);
  expect(podFieldValue(p, "metadata.labels")).toBe('app="say \\"hi\\""\ntier="front"');
  const annotations = podFieldValue(p, "metadata.annotations")!.split("\n");
  expect(annotations).toContain('team.example/owner="ops"');
  expect(annotations).toEqual([...annotations].sort());
  expect(annotations.filter((line) => line.startsWith("kubelet.io/"))).toEqual([]);
  expect(podFieldValue(p, "metadata.labels['tier']")).toBe("front");
  expect(podFieldValue(p, "metadata.annotations['absent']")).toBe("");
});

test("spec and status fields resolve with the pod's placement (env), not in a volume; an unknown path is undefined", () => {
  const p = pod();
  expect(podFieldValue(p, "spec.nodeName", placement)).toBe("node-1");
  expect(podFieldValue(p, "status.hostIP", placement)).toBe("10.0.0.1");
  expect(podFieldValue(p, "status.podIPs", placement)).toBe("10.0.0.7");
  expect(podFieldValue(p, "spec.serviceAccountName", placement)).toBe("default");
  expect(podFieldValue(p, "spec.nodeName")).toBeUndefined();
  expect(podFieldValue(p, "metadata.generation", placement)).toBeUndefined();
});

test("a resource field divides by its divisor rounding up; a limit the container does not set reads the node's capacity", () => {
  const container = { name: "app", resources: { requests: { memory: "100Mi", cpu: "250m" } } };
  const node = { cpus: 2, memoryBytes: 8 * 2 ** 30 };
  expect(resourceFieldValue(container, { resource: "requests.memory", divisor: "1Mi" }, node)).toBe("100");
  expect(resourceFieldValue(container, { resource: "requests.cpu" }, node)).toBe("1");
  expect(resourceFieldValue(container, { resource: "requests.cpu", divisor: "1m" }, node)).toBe("250");
  expect(resourceFieldValue(container, { resource: "limits.memory", divisor: "1Gi" }, node)).toBe("8");
  expect(resourceFieldValue(container, { resource: "limits.cpu" }, node)).toBe("2");
});
