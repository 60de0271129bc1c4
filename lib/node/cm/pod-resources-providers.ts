// The CPU and memory managers as the pod resources API's CpusProvider and MemoryProvider (container_manager_linux.go's
// GetCPUs/GetAllocatableCPUs and GetMemory/GetAllocatableMemory): a container's exclusive CPUs and memory blocks,
// and what the node can hand out.
import type { CpusProvider, MemoryBlock, MemoryProvider } from "../podresources/podresources-server.ts";
import { CPUSet } from "./cpuset.ts";
import { CPU_POLICY_STATIC, type CPUManager } from "./cpumanager/cpu-manager.ts";
import { MEMORY_POLICY_STATIC, type MemoryManager } from "./memorymanager/memory-manager.ts";
import type { CPUTopology } from "./topology.ts";

/** Exclusive CPUs only (the shared pool is nobody's); allocatable = every CPU but the reserved ones (static only). */
export function cpusProvider(cpuManager: CPUManager, topology: CPUTopology): CpusProvider {
  return {
    containerCpus: (uid, name) => cpuManager.state?.cpuSet(uid, name)?.list() ?? [],
    allocatableCpus: () =>
      cpuManager.policyName === CPU_POLICY_STATIC
        ? new CPUSet(topology.details.keys()).difference(cpuManager.reserved).list()
        : [],
  };
}

/** The container's blocks as the state file has them; allocatable per NUMA node and memory type (Static only). */
export function memoryProvider(memoryManager: MemoryManager): MemoryProvider {
  return {
    containerMemory: (uid, name) =>
      (memoryManager.state.memoryBlocks(uid, name) ?? []).map((b) => ({
        memoryType: b.type,
        size: b.size,
        numaNodes: [...b.numaAffinity],
      })),
    allocatableMemory: () => {
      if (memoryManager.policyName !== MEMORY_POLICY_STATIC) return [];
      const blocks: MemoryBlock[] = [];
      for (const [node, state] of Object.entries(memoryManager.state.machineState()))
        for (const [memoryType, table] of Object.entries(state.memoryMap))
          blocks.push({ memoryType, size: table.allocatable, numaNodes: [Number(node)] });
      return blocks;
    },
  };
}
