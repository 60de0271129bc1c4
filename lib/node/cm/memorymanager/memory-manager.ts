// The memory manager (pkg/kubelet/cm/memorymanager), policies None and Static: with Static, containers of
// Guaranteed pods get their memory from a group of NUMA nodes chosen with the topology manager (hints from the
// nodes' free memory), kept in the machine state and the state file, and reach the runtime as cpuset_mems.
import { podQosClass } from "../../../api/qos.ts";
import { parseQuantity } from "../../../api/quantity.ts";
import { isSidecar, type Pod, type V1Container } from "../../../api/types.ts";
import type { Logger } from "../../../log.ts";
import type { CPUTopology } from "../topology.ts";
import { BitMask, iterateBitMasks } from "../topologymanager/bitmask.ts";
import type { TopologyHint } from "../topologymanager/policy.ts";
import type { HintProvider, TopologyAffinityStore } from "../topologymanager/topology-manager.ts";
import {
  type Block,
  createMemoryManagerState,
  type MemoryManagerState,
  type NUMANodeMap,
} from "./memory-manager-state.ts";

export const MEMORY_POLICY_NONE = "None";
export const MEMORY_POLICY_STATIC = "Static";

export interface MemoryManagerOptions {
  policy: string;
  /** reservedMemory: NUMA node → resource → quantity. */
  reservedMemory: Array<{ numaNode: number; limits: Record<string, string> }>;
  /** kubeReserved + systemReserved + evictionHard memory.available, bytes: what reservedMemory must add up to. */
  nodeAllocatableReservation: number;
  stateDir: string;
}

export interface MemoryManager extends HintProvider {
  policyName: string;
  /** The NUMA nodes a container's memory comes from ("0,1"), for cpuset_mems; undefined = any. */
  memoryNodesFor(podUid: string, containerName: string): string | undefined;
  removeStaleState(activePods: Pod[], except?: Pod): void;
  bind(pods: { activePods(): Pod[]; allSourcesReady(): boolean }): void;
  state: MemoryManagerState;
}

const HUGEPAGES = /^hugepages-/;
const isMemoryType = (name: string) => name === "memory" || HUGEPAGES.test(name);
const bytes = (quantity: string) => Math.round(parseQuantity(quantity) ?? Number.NaN);

/** The memory and hugepages a container asks for (requests, defaulted to limits). */
function requestedResources(container: V1Container): Record<string, number> {
  const requested: Record<string, number> = {};
  const all = { ...(container.resources?.limits ?? {}), ...(container.resources?.requests ?? {}) };
  for (const [name, quantity] of Object.entries(all)) if (isMemoryType(name)) requested[name] = bytes(String(quantity));
  return requested;
}

/** The machine state a fresh start computes: each node's memory less what reservedMemory keeps there. */
function initialMachineState(topology: CPUTopology, reserved: Record<number, Record<string, number>>): NUMANodeMap {
  const machine: NUMANodeMap = {};
  for (const [node, total] of [...topology.numaMemory].sort(([a], [b]) => a - b)) {
    const systemReserved = reserved[node]?.memory ?? 0;
    const allocatable = Math.max(0, total - systemReserved);
    machine[node] = {
      numberOfAssignments: 0,
      memoryMap: { memory: { total, systemReserved, allocatable, reserved: 0, free: allocatable } },
      cells: [node],
    };
  }
  return machine;
}

/** Creates the memory manager; throws upstream's messages for a configuration it cannot start with. */
export function createMemoryManager(
  options: MemoryManagerOptions,
  deps: { topology: CPUTopology; affinity: TopologyAffinityStore; log: Logger },
): MemoryManager {
  const { topology, affinity } = deps;
  if (options.policy === MEMORY_POLICY_NONE) {
    const state = createMemoryManagerState(options.stateDir, MEMORY_POLICY_NONE);
    return {
      policyName: MEMORY_POLICY_NONE,
      state,
      getTopologyHints: () => undefined,
      getPodTopologyHints: () => undefined,
      allocate: () => {},
      memoryNodesFor: () => undefined,
      removeStaleState: () => {},
      bind: () => {},
    };
  }
  if (options.policy !== MEMORY_POLICY_STATIC) throw new Error(`unknown policy: "${options.policy}"`);
  const reserved: Record<number, Record<string, number>> = {};
  let total = 0;
  for (const r of options.reservedMemory) {
    if (!topology.numaMemory.has(r.numaNode))
      throw new Error(
        `reservedMemory: NUMA node ${r.numaNode} does not exist here (nodes: ${[...topology.numaMemory.keys()].join(", ")})`,
      );
    for (const [name, quantity] of Object.entries(r.limits)) {
      if (!isMemoryType(name)) continue;
      if (HUGEPAGES.test(name))
        throw new Error(
          `reservedMemory: ${name}: hugepages are not managed by this kubelet's memory manager; remove it`,
        );
      (reserved[r.numaNode] ??= {})[name] = bytes(quantity);
      total += bytes(quantity);
    }
  }
  if (total !== options.nodeAllocatableReservation)
    throw new Error(
      `the total amount "${total}" of type "memory" is not equal to the value "${options.nodeAllocatableReservation}" determined by Node Allocatable feature`,
    );
  if (total <= 0) throw new Error("[memorymanager] you should specify the system reserved memory");
  const state = createMemoryManagerState(options.stateDir, MEMORY_POLICY_STATIC);
  validateState(state, initialMachineState(topology, reserved));
  deps.log.info(
    `memory manager: Static policy over NUMA nodes ${[...topology.numaMemory.keys()].join(",")}, reserved ${JSON.stringify(reserved)}`,
  );
  /** Pod UID → NUMA nodes (joined) → type → bytes that init containers hold and the next containers reuse. */
  const reusable = new Map<string, Map<string, Record<string, number>>>();
  let pods: { activePods(): Pod[]; allSourcesReady(): boolean } | undefined;

  const podReusable = (pod: Pod, mask: BitMask, type: string) =>
    reusable.get(pod.metadata.uid)?.get(mask.getBits().join(","))?.[type] ?? 0;
  const updateReusable = (pod: Pod, container: V1Container, blocks: Block[]) => {
    const uid = pod.metadata.uid;
    for (const other of reusable.keys()) if (other !== uid) reusable.delete(other);
    const byMask = reusable.get(uid) ?? reusable.set(uid, new Map()).get(uid)!;
    const init = (pod.spec.initContainers ?? []).find((c) => c.name === container.name);
    for (const block of blocks) {
      const key = block.numaAffinity.join(",");
      const sizes = byMask.get(key) ?? byMask.set(key, {}).get(key)!;
      sizes[block.type] =
        init && !isSidecar(init)
          ? Math.max(sizes[block.type] ?? 0, block.size)
          : Math.max(0, (sizes[block.type] ?? 0) - block.size);
    }
  };

  const calculateHints = (machine: NUMANodeMap, pod: Pod, requested: Record<string, number>) => {
    const nodes = Object.keys(machine)
      .map(Number)
      .sort((a, b) => a - b);
    let minAffinitySize = nodes.length;
    const hints: Record<string, TopologyHint[]> = {};
    iterateBitMasks(nodes, (mask) => {
      const bits = mask.getBits();
      const single = bits.length === 1;
      const sum = (type: string, field: "free" | "allocatable") =>
        bits.reduce((n, id) => n + (machine[id]!.memoryMap[type]?.[field] ?? 0), 0);
      for (const [type, size] of Object.entries(requested)) if (sum(type, "allocatable") < size) return;
      if (mask.count() < minAffinitySize) minAffinitySize = mask.count();
      if (single && machine[bits[0]!]!.cells.length > 1) return;
      for (const id of bits)
        if (!single && machine[id]!.numberOfAssignments > 0) {
          if (machine[id]!.cells.length === 1) return;
          if (machine[id]!.cells.join(",") !== bits.join(",")) return;
        }
      for (const [type, size] of Object.entries(requested))
        if (sum(type, "free") + podReusable(pod, mask, type) < size) return;
      for (const type of Object.keys(requested))
        (hints[type] ??= []).push({ numaNodeAffinity: mask, preferred: false });
    });
    for (const list of Object.values(hints))
      for (const h of list) h.preferred = h.numaNodeAffinity!.count() === minAffinitySize;
    return hints;
  };
  const regenerateHints = (blocks: Block[], requested: Record<string, number>) => {
    const hints: Record<string, TopologyHint[]> = {};
    for (const block of blocks) {
      if (requested[block.type] !== block.size) return Object.fromEntries(blocks.map((b) => [b.type, []]));
      hints[block.type] = [{ numaNodeAffinity: BitMask.of(...block.numaAffinity), preferred: true }];
    }
    return hints;
  };
  const findBestHint = (hints: TopologyHint[] | undefined) =>
    (hints ?? []).reduce<TopologyHint | undefined>((best, h) => {
      if (!best) return h;
      if (h.preferred !== best.preferred) return h.preferred ? h : best;
      return h.numaNodeAffinity!.isNarrowerThan(best.numaNodeAffinity!) ? h : best;
    }, undefined);

  const removeContainer = (uid: string, name: string) => {
    const blocks = state.memoryBlocks(uid, name);
    if (!blocks) return;
    state.delete(uid, name);
    const machine = state.machineState();
    release(machine, blocks);
    state.setMachineState(machine);
  };
  const removeStaleState = (activePods: Pod[], except?: Pod) => {
    if (pods && !pods.allSourcesReady()) return;
    const active = new Map(
      (except ? [...activePods, except] : activePods).map((p) => [
        p.metadata.uid,
        new Set([...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.name)),
      ]),
    );
    for (const [uid, containers] of Object.entries(state.assignments()))
      for (const name of Object.keys(containers)) if (!active.get(uid)?.has(name)) removeContainer(uid, name);
  };

  return {
    policyName: MEMORY_POLICY_STATIC,
    state,
    bind: (p) => void (pods = p),
    removeStaleState,
    getTopologyHints(pod, container) {
      if (podQosClass(pod) !== "Guaranteed") return undefined;
      const requested = requestedResources(container);
      const blocks = state.memoryBlocks(pod.metadata.uid, container.name);
      if (blocks) return regenerateHints(blocks, requested);
      return calculateHints(state.machineState(), pod, requested);
    },
    getPodTopologyHints(pod) {
      if (podQosClass(pod) !== "Guaranteed") return undefined;
      const requested: Record<string, number> = {};
      const add = (c: V1Container) => {
        for (const [type, size] of Object.entries(requestedResources(c)))
          requested[type] = (requested[type] ?? 0) + size;
      };
      pod.spec.containers.forEach(add);
      (pod.spec.initContainers ?? []).filter(isSidecar).forEach(add);
      return calculateHints(state.machineState(), pod, requested);
    },
    allocate(pod, container) {
      if (podQosClass(pod) !== "Guaranteed") return;
      if (pods) removeStaleState(pods.activePods(), pod);
      const uid = pod.metadata.uid;
      const existing = state.memoryBlocks(uid, container.name);
      if (existing) return updateReusable(pod, container, existing);
      const requested = requestedResources(container);
      if (Object.keys(requested).length === 0) return;
      const machine = state.machineState();
      let best: TopologyHint = affinity.getAffinity(uid, container.name);
      if (!best.numaNodeAffinity) {
        const fallback = findBestHint(calculateHints(machine, pod, requested).memory);
        if (!fallback)
          throw new Error(
            "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available",
          );
        if (!fallback.preferred && best.preferred)
          throw new Error("[memorymanager] failed to find the default preferred hint");
        best = fallback;
      }
      const bits = best.numaNodeAffinity!.getBits();
      const free = (type: string) => bits.reduce((n, id) => n + (machine[id]?.memoryMap[type]?.free ?? 0), 0);
      if (
        Object.entries(requested).some(
          ([type, size]) => free(type) + podReusable(pod, best.numaNodeAffinity!, type) < size,
        )
      )
        throw new Error("[memorymanager] failed to find NUMA nodes to extend the current topology hint");
      const blocks: Block[] = [];
      for (const [type, size] of Object.entries(requested)) {
        blocks.push({ numaAffinity: bits, type, size });
        const reuse = podReusable(pod, best.numaNodeAffinity!, type);
        reserve(machine, bits, type, reuse >= size ? 0 : size - reuse);
      }
      updateReusable(pod, container, blocks);
      state.setMachineState(machine);
      state.setMemoryBlocks(uid, container.name, blocks);
    },
    memoryNodesFor(uid, name) {
      const blocks = state.memoryBlocks(uid, name);
      if (!blocks?.length) return undefined;
      return [...new Set(blocks.flatMap((b) => b.numaAffinity))].sort((a, b) => a - b).join(",");
    },
  };
}

/** updateMachineState: counts the assignment on every node of the group and takes the memory in node order. */
function reserve(machine: NUMANodeMap, bits: number[], type: string, requested: number) {
  for (const id of bits) {
    const node = machine[id]!;
    node.numberOfAssignments++;
    node.cells = bits;
    const table = node.memoryMap[type];
    if (requested === 0 || !table || table.free <= 0) continue;
    const taken = Math.min(table.free, requested);
    table.reserved += taken;
    table.free -= taken;
    requested -= taken;
  }
}

/** The reverse of reserve (upstream's RemoveContainer). */
function release(machine: NUMANodeMap, blocks: Block[]) {
  for (const block of blocks) {
    let released = block.size;
    for (const id of block.numaAffinity) {
      const node = machine[id];
      if (!node) continue;
      node.numberOfAssignments--;
      if (node.numberOfAssignments === 0) node.cells = [id];
      const table = node.memoryMap[block.type];
      if (released === 0 || !table || table.reserved === 0) continue;
      const back = Math.min(table.reserved, released);
      released -= back;
      table.free += back;
      table.reserved -= back;
    }
  }
}

/** validateState: the restored machine state must be the fresh one with the restored assignments applied. */
function validateState(state: MemoryManagerState, fresh: NUMANodeMap) {
  const assignments = state.assignments();
  if (Object.keys(state.machineState()).length === 0) {
    if (Object.keys(assignments).length)
      throw new Error("[memorymanager] machine state can not be empty when it has memory assignments");
    state.setMachineState(fresh);
    return;
  }
  const expected = structuredClone(fresh);
  for (const containers of Object.values(assignments))
    for (const blocks of Object.values(containers))
      for (const b of blocks) reserve(expected, b.numaAffinity, b.type, b.size);
  const normalize = (m: NUMANodeMap) => JSON.stringify(Object.entries(m).sort(([a], [b]) => Number(a) - Number(b)));
  if (normalize(expected) !== normalize(state.machineState()))
    throw new Error(
      "[memorymanager] the expected machine state is different from the real one: drain the node and remove the memory manager state file",
    );
}
