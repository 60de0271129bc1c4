// Stand-in sysfs trees (devices/system/cpu and devices/system/node) for the topology, CPU, memory and topology
// manager tests: this machine has one NUMA node, so multi-socket and multi-NUMA machines are written out here.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A machine's shape: CPUs are numbered as Linux numbers hyperthreads, each core's siblings numCores apart. */
export interface MachineShape {
  sockets: number;
  coresPerSocket: number;
  threadsPerCore: number;
  /** NUMA nodes, dividing the sockets' cores evenly (1 = every CPU on node 0). */
  numaNodes: number;
  /** Memory per NUMA node, bytes (default 4 GiB). */
  memoryPerNode?: number;
  /** Leave out node/ entirely (a kernel without NUMA). */
  noNodeDir?: boolean;
}

const list = (ids: number[]) => ids.join(",");

/** Writes the tree for `shape` into a new temporary directory and returns it (the root to read "/sys" from). */
export function writeStandInSysfs(shape: MachineShape): string {
  const root = mkdtempSync(join(tmpdir(), "sysfs-"));
  const cpuDir = join(root, "devices/system/cpu");
  const cores = shape.sockets * shape.coresPerSocket;
  const cpus = cores * shape.threadsPerCore;
  mkdirSync(cpuDir, { recursive: true });
  writeFileSync(join(cpuDir, "online"), `0-${cpus - 1}\n`);
  const coresPerNode = cores / shape.numaNodes;
  const nodeCpus: number[][] = Array.from({ length: shape.numaNodes }, () => []);
  for (let cpu = 0; cpu < cpus; cpu++) {
    const core = cpu % cores;
    const topo = join(cpuDir, `cpu${cpu}`, "topology");
    mkdirSync(topo, { recursive: true });
    const siblings = Array.from({ length: shape.threadsPerCore }, (_, t) => core + t * cores);
    writeFileSync(join(topo, "physical_package_id"), `${Math.floor(core / shape.coresPerSocket)}\n`);
    writeFileSync(join(topo, "core_id"), `${core % shape.coresPerSocket}\n`);
    writeFileSync(join(topo, "thread_siblings_list"), `${list(siblings)}\n`);
    nodeCpus[Math.floor(core / coresPerNode)]!.push(cpu);
  }
  if (shape.noNodeDir) return root;
  const memory = shape.memoryPerNode ?? 4 * 1024 ** 3;
  for (let node = 0; node < shape.numaNodes; node++) {
    const dir = join(root, "devices/system/node", `node${node}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "cpulist"), `${list(nodeCpus[node]!)}\n`);
    writeFileSync(
      join(dir, "meminfo"),
      `Node ${node} MemTotal:       ${memory / 1024} kB\nNode ${node} MemFree: 1 kB\n`,
    );
    const distance = Array.from({ length: shape.numaNodes }, (_, other) =>
      other === node ? 10 : 20 + 1 * Math.abs(other - node),
    );
    writeFileSync(join(dir, "distance"), `${distance.join(" ")}\n`);
  }
  return root;
}
