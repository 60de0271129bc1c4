import { expect, test } from "bun:test";
import { BitMask, iterateBitMasks } from "./bitmask.ts";
import { mergeByPolicy, type ProviderHints, type TopologyHint } from "./policy.ts";

// Hints written as "01+" (nodes 0 and 1, preferred), "1-" (node 1, not preferred), "*+" (any node, preferred).
const hint = (text: string): TopologyHint => {
  const nodes = text.slice(0, -1);
  return {
    ...(nodes === "*" ? {} : { numaNodeAffinity: BitMask.of(...[...nodes].map(Number)) }),
    preferred: text.endsWith("+"),
  };
};
const provider = (resources?: Record<string, string[] | null>): ProviderHints =>
  resources &&
  Object.fromEntries(Object.entries(resources).map(([r, hs]) => [r, hs === null ? undefined : hs.map(hint)]));
const show = (h: TopologyHint) => `${h.numaNodeAffinity?.toString() ?? "*"}${h.preferred ? "+" : "-"}`;
const info = (nodes: number[]) => ({ nodes, distances: new Map<number, number[]>() });
const OPTS = { preferClosestNUMA: false, maxAllowableNUMANodes: 8 };

// Upstream's commonPolicyMergeTestCases and bestEffortPolicy.mergeTestCases (policy_test.go), NUMA nodes 0-3.
const BEST_EFFORT: Array<[string, Array<Record<string, string[] | null> | undefined>, string]> = [
  ["Two providers, 1 hint each, same mask, both preferred 1/2", [{ r1: ["0+"] }, { r2: ["0+"] }], "0+"],
  ["Two providers, 1 hint each, same mask, both preferred 2/2", [{ r1: ["1+"] }, { r2: ["1+"] }], "1+"],
  ["Two providers, 1 no hints, 1 single hint preferred 1/2", [undefined, { r: ["0+"] }], "0+"],
  ["Two providers, 1 with 2 hints, 1 with single hint matching 2/2", [{ r1: ["0+", "1+"] }, { r2: ["1+"] }], "1+"],
  [
    "Two providers, both with 2 hints, matching narrower preferred hint from both",
    [{ r1: ["0+", "1+"] }, { r2: ["0+", "01-"] }],
    "0+",
  ],
  [
    "Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
    [{ r1: ["1+", "01-"] }, { r2: ["0+", "1+", "01-"] }],
    "1+",
  ],
  ["Multiple resources, same provider", [{ r1: ["1+", "01-"], r2: ["0+", "1+", "01-"] }], "1+"],
  [
    "Two providers, 2 hints each, same mask (some with different bits), same preferred",
    [{ r1: ["01+", "02+"] }, { r2: ["01+", "02+"] }],
    "01+",
  ],
  ["TopologyHint not set", [], "0123+"],
  ["HintProvider returns empty non-nil map[string][]TopologyHint", [{}], "0123+"],
  ["HintProvider returns -nil map[string][]TopologyHint from provider", [{ r: null }], "0123+"],
  ["HintProvider returns empty non-nil map[string][]TopologyHint from provider", [{ r: [] }], "0123-"],
  ["Single TopologyHint with Preferred as true and NUMANodeAffinity as nil", [{ r: ["*+"] }], "0123+"],
  ["Single TopologyHint with Preferred as false and NUMANodeAffinity as nil", [{ r: ["*-"] }], "0123-"],
  ["Two providers, 1 hint each, no common mask", [{ r1: ["0+"] }, { r2: ["1+"] }], "0123-"],
  ["Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2", [{ r1: ["0+"] }, { r2: ["0-"] }], "0-"],
  ["Two providers, 1 hint each, 1 wider mask, both preferred 1/2", [{ r1: ["0+"] }, { r2: ["01+"] }], "0-"],
  [
    "Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
    [{ r1: ["0+", "1+"] }, { r2: ["01-"] }],
    "0-",
  ],
  ["bestNonPreferredAffinityCount (1)", [{ r1: ["0123-", "01-"] }, { r2: ["01-"] }], "01-"],
  ["bestNonPreferredAffinityCount (2)", [{ r1: ["0123-", "01-"] }, { r2: ["03-"] }], "03-"],
  ["bestNonPreferredAffinityCount (3)", [{ r1: ["0123-", "01-"] }, { r2: ["12-"] }], "12-"],
  ["bestNonPreferredAffinityCount (4)", [{ r1: ["0123-", "01-"] }, { r2: ["23-"] }], "23-"],
  ["bestNonPreferredAffinityCount (5)", [{ r1: ["0123-", "01-"] }, { r2: ["12-", "23-"] }], "12-"],
  ["bestNonPreferredAffinityCount (6)", [{ r1: ["0123-", "01-"] }, { r2: ["123-", "12-", "13-", "23-"] }], "12-"],
];

// Upstream's singleNumaNodePolicy.mergeTestCases, NUMA nodes 0-1: the whole machine comes back as no affinity.
const SINGLE_NUMA_NODE: Array<[string, Array<Record<string, string[] | null> | undefined>, string]> = [
  ["TopologyHint not set", [], "*+"],
  ["HintProvider returns empty non-nil map[string][]TopologyHint from provider", [{ r: [] }], "*-"],
  ["Two providers, 1 hint each, no common mask", [{ r1: ["0+"] }, { r2: ["1+"] }], "*-"],
  ["Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2", [{ r1: ["0+"] }, { r2: ["0-"] }], "*-"],
  [
    "Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
    [{ r1: ["0+", "1+"] }, { r2: ["01-"] }],
    "*-",
  ],
  ["Single NUMA hint generation", [{ r1: ["01+"], r2: ["0+", "1+", "01-"] }], "*-"],
  ["One no-preference provider", [{ r1: ["0+", "1+", "01-"] }, undefined], "0+"],
];

for (const [name, providers, expected] of SINGLE_NUMA_NODE)
  test(`single-numa-node merges as upstream: ${name}`, () => {
    const { hint: merged, admit } = mergeByPolicy("single-numa-node", info([0, 1]), providers.map(provider), OPTS);
    expect(show(merged)).toBe(expected);
    expect(admit).toBe(expected.endsWith("+"));
  });

for (const [name, providers, expected] of BEST_EFFORT)
  test(`best-effort merges as upstream: ${name}`, () => {
    const { hint: merged, admit } = mergeByPolicy("best-effort", info([0, 1, 2, 3]), providers.map(provider), OPTS);
    expect(show(merged)).toBe(expected);
    expect(admit).toBe(true);
  });

test("restricted admits only a preferred merged hint", () => {
  const nodes = info([0, 1]);
  expect(mergeByPolicy("restricted", nodes, [provider({ r1: ["0+"] }), provider({ r2: ["0+"] })], OPTS).admit).toBe(
    true,
  );
  expect(mergeByPolicy("restricted", nodes, [provider({ r1: ["0+"] }), provider({ r2: ["1+"] })], OPTS).admit).toBe(
    false,
  );
});

test("single-numa-node keeps only one-node hints and rejects what spans two nodes", () => {
  const nodes = info([0, 1]);
  const spans = mergeByPolicy("single-numa-node", nodes, [provider({ cpu: ["01+"] })], OPTS);
  expect(spans.admit).toBe(false);
  const fits = mergeByPolicy(
    "single-numa-node",
    nodes,
    [provider({ cpu: ["0+", "1+", "01-"] }), provider({ memory: ["1+", "01-"] })],
    OPTS,
  );
  expect([show(fits.hint), fits.admit]).toEqual(["1+", true]);
  // No preference at all is any node: admitted with no affinity.
  const none = mergeByPolicy("single-numa-node", nodes, [provider(undefined)], OPTS);
  expect([show(none.hint), none.admit]).toEqual(["*+", true]);
});

test("none admits without merging", () => {
  expect(mergeByPolicy("none", info([0, 1]), [provider({ cpu: [] })], OPTS)).toEqual({
    hint: { preferred: false },
    admit: true,
  });
});

test("prefer-closest-numa-nodes picks the closer of two equally wide masks", () => {
  const distances = new Map([
    [0, [10, 11, 20, 20]],
    [1, [11, 10, 20, 20]],
    [2, [20, 20, 10, 11]],
    [3, [20, 20, 11, 10]],
  ]);
  const nodes = { nodes: [0, 1, 2, 3], distances };
  const hints = [provider({ r: ["02+", "01+"] })];
  expect(show(mergeByPolicy("best-effort", nodes, hints, { ...OPTS, preferClosestNUMA: true }).hint)).toBe("01+");
  expect(show(mergeByPolicy("best-effort", nodes, [provider({ r: ["12+", "02+"] })], OPTS).hint)).toBe("02+");
});

test("bit masks are iterated by size, then in lexicographic order", () => {
  const seen: string[] = [];
  iterateBitMasks([0, 1, 2], (m) => seen.push(m.toString()));
  expect(seen).toEqual(["0", "1", "2", "01", "02", "12", "012"]);
});
