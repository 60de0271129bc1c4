// The node's resource managers together, as the Go kubelet's container manager holds them: the topology read
// from sysfs, the topology manager with the device, CPU and memory managers as its hint providers (in upstream's
// order), admission through the topology manager, each container's cpusets at creation, the CPU and memory
// managers as the pod resources API's providers, and the CPU manager's reconcile loop.
import { existsSync } from "node:fs";
import { totalmem } from "node:os";
import { join } from "node:path";
import { every, type Clock } from "../../clock.ts";
import { KubeletError, type Pod } from "../../api/types.ts";
import type { Runtime } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import { nodeAllocatable } from "./cgroups.ts";
import { withReservedSystemCPUs } from "./cpuset.ts";
import { CPU_MANAGER_STATE_FILE } from "./cpumanager/cpu-manager-state.ts";
import { createCPUManager, type CPUManager } from "./cpumanager/cpu-manager.ts";
import { deviceHintProvider } from "./device-hint-provider.ts";
import type { DeviceManager } from "./devicemanager/manager.ts";
import { MEMORY_MANAGER_STATE_FILE } from "./memorymanager/memory-manager-state.ts";
import { createMemoryManager, type MemoryManager } from "./memorymanager/memory-manager.ts";
import { cpusProvider, memoryProvider } from "./pod-resources-providers.ts";
import { readTopology, type CPUTopology } from "./topology.ts";
import type { CpusProvider, MemoryProvider } from "../podresources/podresources-server.ts";
import { createTopologyManager, type TopologyManager } from "./topologymanager/topology-manager.ts";

/** The KubeletConfiguration fields the resource managers read (durations in ms). */
export interface ResourceManagerSettings {
  rootDir: string;
  cpuManagerPolicy: string;
  cpuManagerPolicyOptions: Record<string, string>;
  cpuManagerReconcilePeriod: number;
  /** reservedSystemCPUs. */
  reservedCpus: string;
  memoryManagerPolicy: string;
  reservedMemory: Array<{ numaNode: number; limits: Record<string, string> }>;
  topologyManagerPolicy: string;
  topologyManagerScope: string;
  topologyManagerPolicyOptions: Record<string, string>;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  evictionHard: Record<string, string>;
}

export interface ResourceManagers {
  topology: CPUTopology;
  topologyManager: TopologyManager;
  cpuManager: CPUManager;
  memoryManager: MemoryManager;
  /** The pod resources API's view of the CPU and memory managers. */
  podResources: { cpus: CpusProvider; memory: MemoryProvider };
  /** The pod's admission by the topology manager (holding devices, allocating CPUs and memory), or why not. */
  admit(pod: Pod): { reason: string; message: string } | undefined;
  /** A container's cpuset_cpus and cpuset_mems at creation. */
  cpusets(podUid: string, containerName: string): { cpus?: string; mems?: string };
  /** Reconciles every cpuManagerReconcilePeriod until the signal aborts; binds the pods for stale-state removal. */
  run(pods: { activePods(): Pod[]; allSourcesReady(): boolean }, clock: Clock, signal: AbortSignal): Promise<void>;
}

// In cpuset.ts, which the assembly and the placement import without the managers (a runonce loads none of them).
export { withReservedSystemCPUs } from "./cpuset.ts";

/** Whether anything is asked of the managers, or a state file of an earlier run must be checked against them. */
export function resourceManagersWanted(settings: ResourceManagerSettings): boolean {
  return (
    settings.cpuManagerPolicy !== "none" ||
    settings.memoryManagerPolicy !== "None" ||
    settings.topologyManagerPolicy !== "none" ||
    existsSync(join(settings.rootDir, CPU_MANAGER_STATE_FILE)) ||
    existsSync(join(settings.rootDir, MEMORY_MANAGER_STATE_FILE))
  );
}

/** What the resource managers need of the device manager. */
export type ResourceDevices = Pick<
  DeviceManager,
  "admit" | "release" | "getTopologyHints" | "getPodTopologyHints" | "setAffinityStore" | "setNumaNodes"
>;

/** Creates the managers and restores their state files; throws (upstream's words) what refuses the start. */
export function createResourceManagers(
  settings: ResourceManagerSettings,
  deps: {
    runtime: Pick<Runtime, "listContainers" | "updateContainerResources">;
    log: Logger;
    sysRoot?: string;
    /** The device manager: a hint provider here, its hints over this machine's NUMA nodes. */
    devices?: ResourceDevices;
  },
): ResourceManagers {
  const topology = readTopology(deps.sysRoot ?? "/sys");
  const log = deps.log;
  const numaNodes = [...new Set([...topology.details.values()].map((i) => i.numaNodeID))].sort((a, b) => a - b);
  const topologyManager = createTopologyManager({
    policy: settings.topologyManagerPolicy,
    scope: settings.topologyManagerScope,
    policyOptions: settings.topologyManagerPolicyOptions,
    numa: { nodes: numaNodes, distances: topology.distances },
  });
  // Devices first, as upstream's container manager adds them: a pod short of devices is refused before CPUs move.
  if (deps.devices) topologyManager.addHintProvider(deviceHintProvider(deps.devices, topologyManager, numaNodes));
  const reserved = withReservedSystemCPUs(settings);
  const capacity = { milliCpu: topology.numCPUs * 1000, memoryBytes: totalmem() };
  const allocatable = nodeAllocatable(capacity, { ...reserved, evictionHard: settings.evictionHard });
  const start = (what: string, create: () => CPUManager | MemoryManager) => {
    try {
      return create();
    } catch (error) {
      throw new KubeletError("ResourceManagerStart", `start ${what} error: ${(error as Error).message}`, {
        cause: error,
      });
    }
  };
  const cpuManager = start("cpu manager", () =>
    createCPUManager(
      {
        policy: settings.cpuManagerPolicy,
        policyOptions: settings.cpuManagerPolicyOptions,
        reservedSystemCPUs: settings.reservedCpus,
        reservedMilliCpu: capacity.milliCpu - allocatable.milliCpu,
        stateDir: settings.rootDir,
        topologyPolicy: settings.topologyManagerPolicy,
      },
      { topology, affinity: topologyManager, runtime: deps.runtime, log: log.child("cpumanager") },
    ),
  ) as CPUManager;
  const memoryManager = start("memory manager", () =>
    createMemoryManager(
      {
        policy: settings.memoryManagerPolicy,
        reservedMemory: settings.reservedMemory,
        nodeAllocatableReservation: capacity.memoryBytes - allocatable.memoryBytes,
        stateDir: settings.rootDir,
      },
      { topology, affinity: topologyManager, log: log.child("memorymanager") },
    ),
  ) as MemoryManager;
  topologyManager.addHintProvider(cpuManager);
  topologyManager.addHintProvider(memoryManager);
  return {
    topology,
    topologyManager,
    cpuManager,
    memoryManager,
    podResources: { cpus: cpusProvider(cpuManager, topology), memory: memoryProvider(memoryManager) },
    admit(pod) {
      const refusal = topologyManager.admit(pod);
      // A later container or provider refused: the devices held for the pod go back at once.
      if (refusal) deps.devices?.release(pod.metadata.uid);
      return refusal;
    },
    cpusets(uid, name) {
      const cpus = cpuManager.cpusetFor(uid, name);
      const mems = memoryManager.memoryNodesFor(uid, name);
      return { ...(cpus ? { cpus } : {}), ...(mems ? { mems } : {}) };
    },
    async run(pods, clock, signal) {
      cpuManager.bind(pods);
      memoryManager.bind(pods);
      await every(
        clock,
        settings.cpuManagerReconcilePeriod || 10_000,
        signal,
        async () => {
          memoryManager.removeStaleState(pods.activePods());
          await cpuManager.reconcile(pods.activePods());
        },
        (error) => log.warn(`CPU manager reconcile failed: ${error.message}`),
      );
    },
  };
}
