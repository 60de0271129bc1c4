// NUMA topology hints for device plugin resources (topology_hints.go's generateDeviceTopologyHints): every
// combination of the machine's NUMA nodes that holds enough of the resource's available devices is a hint,
// preferred when it is as narrow as any combination that could hold the request.
import type { PluginDevice } from "./deviceplugin-schema.ts";

/** A hint in NUMA node ids (the topology manager turns it into its bitmask). */
export interface DeviceTopologyHint {
  nodes: number[];
  preferred: boolean;
}

const numaOf = (device: PluginDevice | undefined) => (device?.topology?.nodes ?? []).map((n) => n.ID);

/** Every non-empty subset of `nodes`, as upstream's bitmask.IterateBitMasks visits them (by size, then order). */
export function nodeCombinations(nodes: number[]): number[][] {
  const out: number[][] = [];
  const sorted = [...nodes].sort((a, b) => a - b);
  const grow = (start: number, size: number, picked: number[]) => {
    if (picked.length === size) return void out.push([...picked]);
    for (let i = start; i < sorted.length; i++) grow(i + 1, size, [...picked, sorted[i]!]);
  };
  for (let size = 1; size <= sorted.length; size++) grow(0, size, []);
  return out;
}

/**
 * The hints for `request` devices of one resource: `devices` are all its devices, `available` the free healthy
 * ones, `reusable` those the pod's init containers held (every hint must cover them).
 */
export function deviceTopologyHints(
  numaNodes: number[],
  devices: Map<string, PluginDevice>,
  available: Iterable<string>,
  reusable: Iterable<string>,
  request: number,
): DeviceTopologyHint[] {
  let minAffinitySize = numaNodes.length;
  const hints: DeviceTopologyHint[] = [];
  const free = [...available];
  const kept = [...reusable];
  const within = (mask: Set<number>, id: string) => numaOf(devices.get(id)).some((n) => mask.has(n));
  for (const combination of nodeCombinations(numaNodes)) {
    const mask = new Set(combination);
    const inMask = [...devices.keys()].filter((id) => within(mask, id)).length;
    if (inMask >= request && mask.size < minAffinitySize) minAffinitySize = mask.size;
    let matching = 0;
    let covers = true;
    for (const id of kept) {
      if (!devices.get(id)?.topology) continue;
      if (!within(mask, id)) covers = false;
      matching++;
    }
    if (!covers) continue;
    matching += free.filter((id) => within(mask, id)).length;
    if (matching >= request) hints.push({ nodes: combination, preferred: false });
  }
  for (const hint of hints) hint.preferred = hint.nodes.length === minAffinitySize;
  return hints;
}

/** True when any device of the resource reports NUMA nodes (deviceHasTopologyAlignment). */
export function hasTopology(devices: Map<string, PluginDevice> | undefined): boolean {
  return [...(devices?.values() ?? [])].some((d) => (d.topology?.nodes.length ?? 0) > 0);
}

/**
 * `available` ordered as filterByAffinity does: devices on the decided NUMA nodes first (those on nodes holding
 * fewer devices first), then devices on other nodes, then devices without topology.
 */
export function orderByAffinity(devices: Map<string, PluginDevice>, available: string[], affinity: number[]): string[] {
  const inAffinity = new Set(affinity);
  const rank = (id: string) => {
    const nodes = numaOf(devices.get(id));
    if (nodes.length === 0) return 2;
    return nodes.some((n) => inAffinity.has(n)) ? 0 : 1;
  };
  return available
    .map((id, i) => ({ id, i, r: rank(id) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map(({ id }) => id);
}
