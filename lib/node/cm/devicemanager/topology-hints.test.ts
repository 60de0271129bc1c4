import { expect, test } from "bun:test";
import type { PluginDevice } from "./deviceplugin-schema.ts";
import { deviceTopologyHints, hasTopology, nodeCombinations, orderByAffinity } from "./topology-hints.ts";

const on = (...spec: Array<[string, number | undefined]>) =>
  new Map<string, PluginDevice>(
    spec.map(([ID, node]) => [
      ID,
      { ID, health: "Healthy", topology: node === undefined ? null : { nodes: [{ ID: node }] } },
    ]),
  );

test("node combinations are every subset, smallest first, as IterateBitMasks visits them", () => {
  expect(nodeCombinations([1, 0])).toEqual([[0], [1], [0, 1]]);
});

test("one device on each of two nodes: either node alone is a preferred hint, both together a non-preferred one", () => {
  const devices = on(["a", 0], ["b", 1]);
  expect(deviceTopologyHints([0, 1], devices, ["a", "b"], [], 1)).toEqual([
    { nodes: [0], preferred: true },
    { nodes: [1], preferred: true },
    { nodes: [0, 1], preferred: false },
  ]);
});

test("two devices asked of a machine with one per node: only both nodes together, preferred", () => {
  expect(deviceTopologyHints([0, 1], on(["a", 0], ["b", 1]), ["a", "b"], [], 2)).toEqual([
    { nodes: [0, 1], preferred: true },
  ]);
});

test("a node whose device is taken is no hint, yet stays the narrowest possible: the rest are not preferred", () => {
  expect(deviceTopologyHints([0, 1], on(["a", 0], ["b", 1]), ["b"], [], 1)).toEqual([
    { nodes: [1], preferred: true },
    { nodes: [0, 1], preferred: false },
  ]);
  expect(deviceTopologyHints([0, 1], on(["a", 0], ["b", 0], ["c", 1]), ["c"], [], 2)).toEqual([]);
});

test("devices an init container held must be covered by every hint", () => {
  expect(deviceTopologyHints([0, 1], on(["a", 0], ["b", 1]), ["b"], ["a"], 2)).toEqual([
    { nodes: [0, 1], preferred: true },
  ]);
});

test("a resource whose devices report no NUMA node has no topology; allocation prefers the decided nodes", () => {
  expect(hasTopology(on(["a", undefined]))).toBe(false);
  expect(hasTopology(on(["a", undefined], ["b", 1]))).toBe(true);
  expect(orderByAffinity(on(["x", undefined], ["a", 0], ["b", 1]), ["x", "a", "b"], [1])).toEqual(["b", "a", "x"]);
});
