// The topology manager's policies and hint merging, as pkg/kubelet/cm/topologymanager policy*.go: every
// permutation of the providers' hints merged (AND of affinities, preferred only if all are), the best one kept
// (preferred over not, then narrowest or closest), and the policy's admit rule.
import { andMasks, BitMask } from "./bitmask.ts";

/** A provider's hint: the NUMA nodes a resource can be allocated from (undefined = any), and whether preferred. */
export interface TopologyHint {
  numaNodeAffinity?: BitMask;
  preferred: boolean;
}

/** Resource name → its hints; a provider with no preference answers undefined or an empty map. */
export type ProviderHints = Record<string, TopologyHint[] | undefined> | undefined;

export const POLICY_NONE = "none";
export const POLICY_BEST_EFFORT = "best-effort";
export const POLICY_RESTRICTED = "restricted";
export const POLICY_SINGLE_NUMA_NODE = "single-numa-node";
export const POLICIES = [POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE];

/** The NUMA nodes and their distances (upstream's NUMAInfo). */
export interface NUMAInfo {
  nodes: number[];
  distances: Map<number, number[]>;
}

export interface PolicyOptions {
  preferClosestNUMA: boolean;
  maxAllowableNUMANodes: number;
}

const defaultAffinity = (info: NUMAInfo) => BitMask.of(...info.nodes);

/** filterProvidersHints: one list per resource; "no preference" as a preferred any-node hint, "none fit" as not. */
export function filterProvidersHints(providersHints: ProviderHints[]): TopologyHint[][] {
  const all: TopologyHint[][] = [];
  for (const hints of providersHints) {
    if (!hints || Object.keys(hints).length === 0) {
      all.push([{ preferred: true }]);
      continue;
    }
    for (const resource of Object.keys(hints)) {
      const list = hints[resource];
      if (list === undefined) all.push([{ preferred: true }]);
      else if (list.length === 0) all.push([{ preferred: false }]);
      else all.push(list);
    }
  }
  return all;
}

/** The AND of a permutation's affinities; preferred only if every hint is and every set affinity is the same. */
function mergePermutation(defaults: BitMask, permutation: TopologyHint[]): TopologyHint {
  const affinities = permutation.flatMap((hint) => hint.numaNodeAffinity ?? []);
  const preferred = permutation.every((h) => h.preferred) && affinities.every((a) => a.isEqual(affinities[0]!));
  return { numaNodeAffinity: andMasks(defaults, ...affinities), preferred };
}

function iterateAllProviderTopologyHints(all: TopologyHint[][], visit: (permutation: TopologyHint[]) => void) {
  const walk = (i: number, chosen: TopologyHint[]) => {
    if (i === all.length) return visit(chosen);
    for (const hint of all[i]!) walk(i + 1, [...chosen, hint]);
  };
  walk(0, []);
}

function narrowestHint(hints: TopologyHint[]): TopologyHint | undefined {
  let best: TopologyHint | undefined;
  for (const hint of hints) {
    if (!hint.numaNodeAffinity) continue;
    if (!best || hint.numaNodeAffinity.count() < best.numaNodeAffinity!.count()) best = hint;
  }
  return best;
}

const maxOfMinAffinityCounts = (all: TopologyHint[][]) =>
  Math.max(0, ...all.map((hints) => narrowestHint(hints)?.numaNodeAffinity?.count() ?? 0));

/** The mean distance between the nodes of a mask (NUMAInfo's NUMADistances average). */
function averageDistance(info: NUMAInfo, mask: BitMask): number {
  const nodes = mask.getBits();
  let sum = 0;
  let count = 0;
  for (const a of nodes)
    for (const b of nodes) {
      sum += info.distances.get(a)?.[info.nodes.indexOf(b)] ?? 0;
      count++;
    }
  return count ? sum / count : 0;
}

/** NUMAInfo.Closest: fewer nodes, then the smaller average distance, then narrower. */
function closest(info: NUMAInfo, m1: BitMask, m2: BitMask): BitMask {
  if (m1.count() !== m2.count()) return m1.count() < m2.count() ? m1 : m2;
  const d1 = averageDistance(info, m1);
  const d2 = averageDistance(info, m2);
  if (d1 === d2) return m1.isNarrowerThan(m2) ? m1 : m2;
  return d1 < d2 ? m1 : m2;
}

/** HintMerger.Merge: the best merged hint over every permutation of `hints`. */
export function mergeHints(info: NUMAInfo, hints: TopologyHint[][], policy: string, opts: PolicyOptions): TopologyHint {
  const defaults = defaultAffinity(info);
  const bestNonPreferred = maxOfMinAffinityCounts(hints);
  const compareMasks = (current: TopologyHint, candidate: TopologyHint): TopologyHint => {
    const c = current.numaNodeAffinity!;
    const n = candidate.numaNodeAffinity!;
    if (n.isEqual(c)) return current;
    const best =
      policy !== POLICY_SINGLE_NUMA_NODE && opts.preferClosestNUMA ? closest(info, c, n) : c.isNarrowerThan(n) ? c : n;
    return best.isEqual(c) ? current : candidate;
  };
  const compare = (current: TopologyHint | undefined, candidate: TopologyHint): TopologyHint | undefined => {
    const count = candidate.numaNodeAffinity!.count();
    if (count === 0) return current;
    if (!current) return candidate;
    if (!current.preferred && candidate.preferred) return candidate;
    if (current.preferred && !candidate.preferred) return current;
    if (current.preferred && candidate.preferred) return compareMasks(current, candidate);
    // Both non-preferred: creep towards the widest of the narrowest hints, never past it.
    const currentCount = current.numaNodeAffinity!.count();
    if (currentCount > bestNonPreferred) return compareMasks(current, candidate);
    if (currentCount === bestNonPreferred)
      return count !== bestNonPreferred ? current : compareMasks(current, candidate);
    if (count > bestNonPreferred) return current;
    if (count === bestNonPreferred) return candidate;
    if (count > currentCount) return candidate;
    if (count < currentCount) return current;
    return compareMasks(current, candidate);
  };
  let best: TopologyHint | undefined;
  iterateAllProviderTopologyHints(hints, (permutation) => {
    best = compare(best, mergePermutation(defaults, permutation));
  });
  return best ?? { numaNodeAffinity: defaults, preferred: false };
}

/** filterSingleNumaHints: keep only preferred hints of one node, or of no preference. */
const filterSingleNumaHints = (all: TopologyHint[][]) =>
  all.map((hints) => hints.filter((h) => h.preferred && (!h.numaNodeAffinity || h.numaNodeAffinity.count() === 1)));

/** A policy's merge: the best hint for the providers' hints and whether the pod (or container) is admitted. */
export function mergeByPolicy(
  policy: string,
  info: NUMAInfo,
  providersHints: ProviderHints[],
  opts: PolicyOptions,
): { hint: TopologyHint; admit: boolean } {
  if (policy === POLICY_NONE) return { hint: { preferred: false }, admit: true };
  let filtered = filterProvidersHints(providersHints);
  if (policy === POLICY_SINGLE_NUMA_NODE) filtered = filterSingleNumaHints(filtered);
  let hint = mergeHints(info, filtered, policy, opts);
  if (policy === POLICY_SINGLE_NUMA_NODE && hint.numaNodeAffinity?.isEqual(defaultAffinity(info)))
    hint = { preferred: hint.preferred };
  return { hint, admit: policy === POLICY_BEST_EFFORT || hint.preferred };
}
