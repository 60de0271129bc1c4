import { expect, test } from "bun:test";
import type { Pod, V1Container } from "../../../api/types.ts";
import { testPod } from "../../../testing/pods.ts";
import { BitMask } from "./bitmask.ts";
import type { ProviderHints } from "./policy.ts";
import { AdmissionError, createTopologyManager, type HintProvider, podAdmitResult } from "./topology-manager.ts";

const numa = { nodes: [0, 1], distances: new Map<number, number[]>() };

/** A provider answering fixed hints per container and recording what it was asked to allocate. */
function provider(hints: Record<string, ProviderHints>, podHints?: ProviderHints) {
  const allocated: string[] = [];
  const p: HintProvider & { allocated: string[] } = {
    allocated,
    getTopologyHints: (_pod: Pod, c: V1Container) => hints[c.name],
    getPodTopologyHints: () => podHints,
    allocate: (_pod, c) => void allocated.push(c.name),
  };
  return p;
}
const node = (n: number, preferred = true) => ({ numaNodeAffinity: BitMask.of(n), preferred });

test("a container that cannot sit on one NUMA node is rejected with TopologyAffinityError under single-numa-node", () => {
  const manager = createTopologyManager({ policy: "single-numa-node", scope: "container", policyOptions: {}, numa });
  const cpu = provider({ app: { cpu: [{ numaNodeAffinity: BitMask.of(0, 1), preferred: true }] } });
  manager.addHintProvider(cpu);
  expect(manager.admit(testPod("wide"))).toEqual({
    reason: "TopologyAffinityError",
    message: "Resources cannot be allocated with Topology locality",
  });
  expect(cpu.allocated).toEqual([]);
});

test("an aligned container is recorded with its affinity and allocated by every provider, init containers first", () => {
  const manager = createTopologyManager({ policy: "restricted", scope: "container", policyOptions: {}, numa });
  const cpu = provider({ app: { cpu: [node(1)] }, setup: { cpu: [node(0)] } });
  const memory = provider({ app: { memory: [node(0), node(1)] } });
  manager.addHintProvider(cpu);
  manager.addHintProvider(memory);
  const pod = testPod("aligned", {
    initContainers: [{ name: "setup", image: "local/busybox:latest" }],
  });
  expect(manager.admit(pod)).toBeUndefined();
  expect(manager.getAffinity(pod.metadata.uid, "app").numaNodeAffinity?.getBits()).toEqual([1]);
  expect(cpu.allocated).toEqual(["setup", "app"]);
  expect(memory.allocated).toEqual(["setup", "app"]);
});

test("scope pod merges the providers' pod hints once and gives every container the same affinity", () => {
  const manager = createTopologyManager({ policy: "single-numa-node", scope: "pod", policyOptions: {}, numa });
  manager.addHintProvider(provider({}, { cpu: [node(1)] }));
  manager.addHintProvider(provider({}, { memory: [node(1), node(0)] }));
  const pod = testPod("together", {
    containers: [
      { name: "a", image: "x" },
      { name: "b", image: "x" },
    ],
  });
  expect(manager.admit(pod)).toBeUndefined();
  expect(manager.getAffinity(pod.metadata.uid, "a").numaNodeAffinity?.getBits()).toEqual([1]);
  expect(manager.getAffinity(pod.metadata.uid, "b").numaNodeAffinity?.getBits()).toEqual([1]);
});

test("scope pod rejects the whole pod when its merged hints span two nodes under single-numa-node", () => {
  const manager = createTopologyManager({ policy: "single-numa-node", scope: "pod", policyOptions: {}, numa });
  const cpu = provider({}, { cpu: [{ numaNodeAffinity: BitMask.of(0, 1), preferred: true }] });
  manager.addHintProvider(cpu);
  expect(manager.admit(testPod("wide"))?.reason).toBe("TopologyAffinityError");
  expect(cpu.allocated).toEqual([]);
});

test("a provider's failure to allocate is its own reason, any other error UnexpectedAdmissionError", () => {
  expect(podAdmitResult(new AdmissionError("SMTAlignmentError", "odd"))).toEqual({
    reason: "SMTAlignmentError",
    message: "odd",
  });
  expect(podAdmitResult(new Error("boom"))).toEqual({
    reason: "UnexpectedAdmissionError",
    message: "Allocate failed due to boom, which is unexpected",
  });
});

test("unknown policies, scopes and options, and too many NUMA nodes, refuse the start in upstream's words", () => {
  const make = (over: object) =>
    createTopologyManager({ policy: "none", scope: "container", policyOptions: {}, numa, ...over });
  expect(() => make({ policy: "strict" })).toThrow('unknown policy: "strict"');
  expect(() => make({ scope: "node" })).toThrow('unknown scope: "node"');
  expect(() => make({ policyOptions: { fast: "true" } })).toThrow('unknown Topology Manager Policy option: "fast"');
  const nine = { nodes: [0, 1, 2, 3, 4, 5, 6, 7, 8], distances: new Map() };
  expect(() => make({ numa: nine })).toThrow("unsupported on machines with more than 8 NUMA Nodes");
  expect(() => make({ numa: nine, policyOptions: { "max-allowable-numa-nodes": "9" } })).not.toThrow();
});
