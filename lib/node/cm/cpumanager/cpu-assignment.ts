// Which CPUs a request gets (pkg/kubelet/cm/cpumanager/cpu_assignment.go): topology-aware best fit. Whole NUMA
// nodes or sockets first (the larger level first), then whole cores, then single threads on the cores and
// sockets with the fewest free CPUs, so what remains stays in large free blocks; or spread evenly over NUMA nodes
// with distribute-cpus-across-numa.
import { CPUSet } from "../cpuset.ts";
import { type CPUTopology, cpuDetails, cpusPerCore, cpusPerSocket } from "../topology.ts";

/** The not-enough-CPUs error, worded as upstream's accumulator. */
export const notEnoughCpus = (requested: number, available: number) =>
  new Error(`not enough cpus available to satisfy request: requested=${requested}, available=${available}`);

function accumulator(topo: CPUTopology, available: CPUSet, numCPUs: number) {
  let result = new CPUSet();
  let needed = numCPUs;
  let free = cpuDetails(topo, available);
  const all = cpuDetails(topo);
  const take = (cpus: CPUSet) => {
    result = result.union(cpus);
    free = cpuDetails(topo, free.cpus().difference(result));
    needed -= cpus.size;
  };
  /** Ids by free CPUs ascending, then id. */
  const sort = (ids: number[], cpusOf: (id: number) => CPUSet) =>
    ids.sort((a, b) => cpusOf(a).size - cpusOf(b).size || a - b);
  const numaFirst = topo.numSockets >= topo.numNUMANodes;
  const sortedNUMANodes = (): number[] => {
    if (numaFirst) return sort(free.numaNodes().list(), (n) => free.cpusInNUMANodes(n));
    return sortedSockets().flatMap((s) => sort(free.numaNodesInSockets(s).list(), (n) => free.cpusInNUMANodes(n)));
  };
  const sortedSockets = (): number[] => {
    if (!numaFirst) return sort(free.sockets().list(), (s) => free.cpusInSockets(s));
    return sortedNUMANodes().flatMap((n) => sort(free.socketsInNUMANodes(n).list(), (s) => free.cpusInSockets(s)));
  };
  const sortedCores = (): number[] => {
    const outer = numaFirst ? sortedSockets() : sortedNUMANodes();
    const coresIn = numaFirst ? free.coresInSockets : free.coresInNUMANodes;
    const seen = new Set<number>();
    return outer.flatMap((id) =>
      sort(coresIn(id).list(), (c) => free.cpusInCores(c)).filter((c) => !seen.has(c) && seen.add(c)),
    );
  };
  const takeFull = (ids: number[], isFree: (id: number) => boolean, cpusOf: (id: number) => CPUSet) => {
    for (const id of ids) {
      if (!isFree(id)) continue;
      const cpus = cpusOf(id);
      if (needed < cpus.size) continue;
      take(cpus);
    }
  };
  const takeFullNUMANodes = () =>
    takeFull(
      sortedNUMANodes(),
      (n) => free.cpusInNUMANodes(n).size === all.cpusInNUMANodes(n).size,
      (n) => all.cpusInNUMANodes(n),
    );
  const takeFullSockets = () =>
    takeFull(
      sortedSockets(),
      (s) => free.cpusInSockets(s).size === cpusPerSocket(topo),
      (s) => all.cpusInSockets(s),
    );
  return {
    result: () => result,
    satisfied: () => needed < 1,
    failed: () => needed > free.cpus().size,
    takeFullFirstLevel: () => (numaFirst ? takeFullNUMANodes() : takeFullSockets()),
    takeFullSecondLevel: () => (numaFirst ? takeFullSockets() : takeFullNUMANodes()),
    takeFullCores: () =>
      takeFull(
        sortedCores(),
        (c) => free.cpusInCores(c).size === cpusPerCore(topo),
        (c) => all.cpusInCores(c),
      ),
    takeRemainingCPUs() {
      for (const core of sortedCores())
        for (const cpu of free.cpusInCores(core).list()) {
          if (needed < 1) return;
          take(new CPUSet([cpu]));
        }
    },
  };
}

/** takeByTopologyNUMAPacked: `numCPUs` of `available`, packed by topology. */
export function takeByTopology(topo: CPUTopology, available: CPUSet, numCPUs: number): CPUSet {
  const acc = accumulator(topo, available, numCPUs);
  if (acc.satisfied()) return acc.result();
  if (acc.failed()) throw notEnoughCpus(numCPUs, available.size);
  for (const step of [acc.takeFullFirstLevel, acc.takeFullSecondLevel, acc.takeFullCores, acc.takeRemainingCPUs]) {
    step();
    if (acc.satisfied()) return acc.result();
  }
  throw new Error("failed to allocate cpus");
}

/** Every combination of `size` items of `items`, in lexicographic order. */
function combinations<T>(items: T[], size: number): T[][] {
  if (size === 0) return [[]];
  return items.flatMap((item, i) => combinations(items.slice(i + 1), size - 1).map((rest) => [item, ...rest]));
}

/**
 * takeByTopologyNUMADistributed: a request one NUMA node can hold is packed; a larger one is spread evenly, in
 * blocks of `groupSize` CPUs (2 with full-pcpus-only on SMT), over the fewest NUMA nodes that can hold it,
 * choosing the combination that leaves the free CPUs most balanced.
 */
export function takeByTopologyDistributed(
  topo: CPUTopology,
  available: CPUSet,
  numCPUs: number,
  groupSize: number,
): CPUSet {
  const free = cpuDetails(topo, available);
  if (numCPUs > available.size) throw notEnoughCpus(numCPUs, available.size);
  const nodes = free.numaNodes().list();
  if (nodes.some((n) => free.cpusInNUMANodes(n).size >= numCPUs)) return takeByTopology(topo, available, numCPUs);
  const groups = Math.ceil(numCPUs / groupSize);
  for (let count = 2; count <= nodes.length; count++) {
    let best: { set: CPUSet; variance: number } | undefined;
    for (const combo of combinations(nodes, count)) {
      const perNode = Math.floor(groups / count) * groupSize;
      let extra = numCPUs - perNode * count;
      let set = new CPUSet();
      let ok = true;
      // The remainder goes, a block at a time, to the nodes with the most free CPUs.
      const order = [...combo].sort((a, b) => free.cpusInNUMANodes(b).size - free.cpusInNUMANodes(a).size || a - b);
      for (const node of order) {
        const share = perNode + Math.min(extra, groupSize);
        extra -= Math.min(extra, groupSize);
        const cpus = free.cpusInNUMANodes(node);
        if (cpus.size < share) {
          ok = false;
          break;
        }
        set = set.union(takeByTopology(topo, cpus, share));
      }
      if (!ok || set.size !== numCPUs) continue;
      const left = combo.map((n) => free.cpusInNUMANodes(n).size - set.intersection(free.cpusInNUMANodes(n)).size);
      const mean = left.reduce((a, b) => a + b, 0) / left.length;
      const variance = left.reduce((a, b) => a + (b - mean) ** 2, 0) / left.length;
      if (!best || variance < best.variance) best = { set, variance };
    }
    if (best) return best.set;
  }
  throw new Error("failed to allocate cpus");
}
