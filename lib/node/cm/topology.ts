// The machine's CPU and NUMA topology read from sysfs (/sys/devices/system/cpu and /sys/devices/system/node),
// under a root path so tests read stand-in trees: the facts the CPU, memory and topology managers share
// (upstream builds them from cAdvisor's MachineInfo in cpumanager/topology and topologymanager's NUMAInfo).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CPUSet, parseCPUSet } from "./cpuset.ts";

/** Where one logical CPU sits. CoreID is the lowest CPU id of its core, as upstream's getUniqueCoreID. */
export interface CPUInfo {
  numaNodeID: number;
  socketID: number;
  coreID: number;
}

/** The CPU topology: counts and every CPU's place (upstream's topology.CPUTopology). */
export interface CPUTopology {
  numCPUs: number;
  numCores: number;
  numSockets: number;
  numNUMANodes: number;
  details: Map<number, CPUInfo>;
  /** NUMA node → its memory in bytes (MemTotal of node<N>/meminfo). */
  numaMemory: Map<number, number>;
  /** NUMA node → its distances to every node, in node order (node<N>/distance); empty when unknown. */
  distances: Map<number, number[]>;
}

const read = (path: string) => readFileSync(path, "utf8").trim();

/**
 * Reads the topology under `root` (normally "/sys"): online CPUs, each one's package, core siblings and NUMA
 * node. A kernel without NUMA (no devices/system/node) is one node 0. Throws naming the file it could not read.
 */
export function readTopology(root = "/sys"): CPUTopology {
  const cpuDir = join(root, "devices/system/cpu");
  const nodeDir = join(root, "devices/system/node");
  const online = parseCPUSet(read(join(cpuDir, "online")));
  const numaOf = new Map<number, number>();
  const numaMemory = new Map<number, number>();
  const distances = new Map<number, number[]>();
  const nodes = existsSync(nodeDir)
    ? readdirSync(nodeDir)
        .filter((name) => /^node\d+$/.test(name))
        .map((name) => Number(name.slice(4)))
        .sort((a, b) => a - b)
    : [];
  for (const node of nodes) {
    const dir = join(nodeDir, `node${node}`);
    for (const cpu of parseCPUSet(read(join(dir, "cpulist"))).list()) numaOf.set(cpu, node);
    const meminfo = join(dir, "meminfo");
    if (existsSync(meminfo)) {
      const kb = /MemTotal:\s+(\d+) kB/.exec(readFileSync(meminfo, "utf8"));
      if (kb) numaMemory.set(node, Number(kb[1]) * 1024);
    }
    const distance = join(dir, "distance");
    if (existsSync(distance)) distances.set(node, read(distance).split(/\s+/).map(Number));
  }
  const details = new Map<number, CPUInfo>();
  for (const cpu of online.list()) {
    const topo = join(cpuDir, `cpu${cpu}`, "topology");
    const socketID = Number(read(join(topo, "physical_package_id")));
    const siblingsFile = join(topo, "thread_siblings_list");
    const coreID = existsSync(siblingsFile)
      ? parseCPUSet(read(siblingsFile)).intersection(online).list()[0]!
      : coreBySocketAndId(cpuDir, online, cpu, socketID, Number(read(join(topo, "core_id"))));
    details.set(cpu, { numaNodeID: numaOf.get(cpu) ?? 0, socketID, coreID });
  }
  if (nodes.length === 0) numaMemory.set(0, 0);
  const distinct = (pick: (info: CPUInfo) => number) => new Set([...details.values()].map(pick)).size;
  return {
    numCPUs: details.size,
    numCores: distinct((i) => i.coreID),
    numSockets: distinct((i) => i.socketID),
    numNUMANodes: Math.max(
      1,
      distinct((i) => i.numaNodeID),
    ),
    details,
    numaMemory,
    distances,
  };
}

/** Without thread_siblings_list: the lowest online CPU with the same package and core_id. */
function coreBySocketAndId(cpuDir: string, online: CPUSet, cpu: number, socket: number, coreId: number): number {
  for (const other of online.list()) {
    if (other >= cpu) break;
    const topo = join(cpuDir, `cpu${other}`, "topology");
    if (Number(read(join(topo, "physical_package_id"))) === socket && Number(read(join(topo, "core_id"))) === coreId)
      return other;
  }
  return cpu;
}

/** Queries over a topology's CPU details, as upstream's CPUDetails methods. */
export function cpuDetails(topology: CPUTopology, only?: CPUSet) {
  const entries = [...topology.details].filter(([cpu]) => !only || only.has(cpu));
  const select = (keep: (info: CPUInfo) => boolean) => new CPUSet(entries.filter(([, i]) => keep(i)).map(([c]) => c));
  const ids = (pick: (info: CPUInfo) => number, keep: (info: CPUInfo) => boolean = () => true) =>
    new CPUSet(entries.filter(([, i]) => keep(i)).map(([, i]) => pick(i)));
  return {
    cpus: () => new CPUSet(entries.map(([cpu]) => cpu)),
    numaNodes: () => ids((i) => i.numaNodeID),
    sockets: () => ids((i) => i.socketID),
    cores: () => ids((i) => i.coreID),
    cpusInNUMANodes: (...nodes: number[]) => select((i) => nodes.includes(i.numaNodeID)),
    cpusInSockets: (...sockets: number[]) => select((i) => sockets.includes(i.socketID)),
    cpusInCores: (...cores: number[]) => select((i) => cores.includes(i.coreID)),
    socketsInNUMANodes: (...nodes: number[]) =>
      ids(
        (i) => i.socketID,
        (i) => nodes.includes(i.numaNodeID),
      ),
    numaNodesInSockets: (...sockets: number[]) =>
      ids(
        (i) => i.numaNodeID,
        (i) => sockets.includes(i.socketID),
      ),
    coresInSockets: (...sockets: number[]) =>
      ids(
        (i) => i.coreID,
        (i) => sockets.includes(i.socketID),
      ),
    coresInNUMANodes: (...nodes: number[]) =>
      ids(
        (i) => i.coreID,
        (i) => nodes.includes(i.numaNodeID),
      ),
  };
}

/** CPUs per core, socket and NUMA node on a uniform machine (upstream's CPUsPerCore, CPUsPerSocket). */
export const cpusPerCore = (t: CPUTopology) => (t.numCores ? t.numCPUs / t.numCores : 0);
export const cpusPerSocket = (t: CPUTopology) => (t.numSockets ? t.numCPUs / t.numSockets : 0);
