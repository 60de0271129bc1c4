// The static CPU manager policy (pkg/kubelet/cm/cpumanager/policy_static.go): containers of Guaranteed pods with
// an integer CPU request get CPUs of their own, taken from the shared pool (the state's default set) by
// topology within the topology manager's NUMA affinity; every other container runs on the shared pool, which
// keeps the reserved CPUs.
import { podQosClass } from "../../../api/qos.ts";
import { isSidecar, type Pod, type V1Container } from "../../../api/types.ts";
import { milliCpu } from "../../../api/quantity.ts";
import { CPUSet } from "../cpuset.ts";
import { type CPUTopology, cpuDetails, cpusPerCore } from "../topology.ts";
import { BitMask, iterateBitMasks } from "../topologymanager/bitmask.ts";
import type { TopologyHint } from "../topologymanager/policy.ts";
import { AdmissionError, type TopologyAffinityStore } from "../topologymanager/topology-manager.ts";
import { takeByTopology, takeByTopologyDistributed } from "./cpu-assignment.ts";
import type { CPUManagerState } from "./cpu-manager-state.ts";
import type { StaticPolicyOptions } from "./policy-options.ts";

/** SMTAlignmentError, worded as upstream. */
export const smtAlignmentError = (requested: number, cpusPerCore: number) =>
  new AdmissionError(
    "SMTAlignmentError",
    `SMT Alignment Error: requested ${requested} cpus not multiple cpus per core = ${cpusPerCore}`,
  );

/** The exclusive CPUs a container asks for: its integer request in a Guaranteed pod, else 0. */
export function guaranteedCPUs(pod: Pod, container: V1Container): number {
  if (podQosClass(pod) !== "Guaranteed") return 0;
  const request = container.resources?.requests?.cpu ?? container.resources?.limits?.cpu;
  if (request === undefined) return 0;
  const milli = milliCpu(request) ?? 0;
  return milli % 1000 === 0 ? milli / 1000 : 0;
}

/** The most CPUs the pod holds at once: init containers one at a time beside its sidecars, or its app containers. */
export function podGuaranteedCPUs(pod: Pod): number {
  let sidecars = 0;
  let init = 0;
  for (const c of pod.spec.initContainers ?? []) {
    const n = guaranteedCPUs(pod, c);
    if (isSidecar(c)) sidecars += n;
    else init = Math.max(init, sidecars + n);
  }
  const app = pod.spec.containers.reduce((sum, c) => sum + guaranteedCPUs(pod, c), 0);
  return Math.max(init, sidecars + app);
}

export interface StaticPolicy {
  name: "static";
  reserved: CPUSet;
  /** Checks a restored state against this machine, or fills an empty one with every CPU. */
  start(state: CPUManagerState): void;
  allocate(state: CPUManagerState, pod: Pod, container: V1Container): void;
  removeContainer(state: CPUManagerState, podUid: string, containerName: string): void;
  topologyHints(state: CPUManagerState, pod: Pod, container: V1Container): Record<string, TopologyHint[]> | undefined;
  podTopologyHints(state: CPUManagerState, pod: Pod): Record<string, TopologyHint[]> | undefined;
}

/** NewStaticPolicy: `numReserved` CPUs (the given set, else the lowest cores by topology) never exclusive. */
export function createStaticPolicy(
  topo: CPUTopology,
  numReserved: number,
  reservedCPUs: CPUSet,
  affinity: TopologyAffinityStore,
  options: StaticPolicyOptions,
): StaticPolicy {
  const details = cpuDetails(topo);
  const all = details.cpus();
  const take = (available: CPUSet, n: number) =>
    options.distributeCPUsAcrossNUMA
      ? takeByTopologyDistributed(topo, available, n, options.fullPhysicalCPUsOnly ? cpusPerCore(topo) : 1)
      : takeByTopology(topo, available, n);
  let reserved = reservedCPUs;
  if (reserved.isEmpty() && numReserved > 0) reserved = takeByTopology(topo, all, numReserved);
  if (reserved.size !== numReserved)
    throw new Error(
      `[cpumanager] unable to reserve the required amount of CPUs (size of ${reserved} did not equal ${numReserved})`,
    );
  if (!reserved.isSubsetOf(all))
    throw new Error(`[cpumanager] reserved CPUs "${reserved}" are not all online CPUs ("${all}")`);
  const cpusToReuse = new Map<string, CPUSet>();
  const available = (state: CPUManagerState) => state.defaultCPUSet().difference(reserved);

  const updateCPUsToReuse = (pod: Pod, container: V1Container, set: CPUSet) => {
    const uid = pod.metadata.uid;
    for (const other of cpusToReuse.keys()) if (other !== uid) cpusToReuse.delete(other);
    const reuse = cpusToReuse.get(uid) ?? new CPUSet();
    const init = (pod.spec.initContainers ?? []).find((c) => c.name === container.name);
    // A sidecar keeps running beside the app's containers: its CPUs cannot be handed on.
    cpusToReuse.set(uid, init && !isSidecar(init) ? reuse.union(set) : reuse.difference(set));
  };

  /** CPUs of the sockets of `mask`'s NUMA nodes (align-by-socket), else of the nodes themselves. */
  const alignedCPUs = (mask: BitMask, from: CPUSet) => {
    const nodes = mask.getBits();
    const within = options.alignBySocket
      ? details.cpusInSockets(...details.socketsInNUMANodes(...nodes).list())
      : details.cpusInNUMANodes(...nodes);
    return from.intersection(within);
  };

  const allocateCPUs = (state: CPUManagerState, n: number, mask: BitMask | undefined, reusable: CPUSet) => {
    const allocatable = available(state).union(reusable);
    let result = new CPUSet();
    if (mask) {
      const aligned = alignedCPUs(mask, allocatable);
      result = take(aligned, Math.min(n, aligned.size));
    }
    result = result.union(take(allocatable.difference(result), n - result.size));
    state.setDefaultCPUSet(state.defaultCPUSet().difference(result));
    return result;
  };

  const generateHints = (availableCPUs: CPUSet, reusable: CPUSet, request: number): TopologyHint[] => {
    const nodes = details.numaNodes().list();
    let minAffinitySize = nodes.length;
    const hints: TopologyHint[] = [];
    iterateBitMasks(nodes, (mask) => {
      const inMask = details.cpusInNUMANodes(...mask.getBits()).size;
      if (inMask >= request && mask.count() < minAffinitySize) minAffinitySize = mask.count();
      let matching = 0;
      for (const cpu of reusable.list()) {
        if (!mask.isSet(topo.details.get(cpu)!.numaNodeID)) return;
        matching++;
      }
      for (const cpu of availableCPUs.list()) if (mask.isSet(topo.details.get(cpu)!.numaNodeID)) matching++;
      if (matching >= request) hints.push({ numaNodeAffinity: mask, preferred: false });
    });
    const socketAligned = (mask: BitMask) => {
      // align-by-socket: a hint is preferred when its nodes are exactly whole sockets' nodes.
      const sockets = details.socketsInNUMANodes(...mask.getBits());
      return (
        sockets.size <= minAffinitySize &&
        details.numaNodesInSockets(...sockets.list()).equals(new CPUSet(mask.getBits()))
      );
    };
    return hints.map((h) => ({
      ...h,
      preferred:
        (options.alignBySocket && socketAligned(h.numaNodeAffinity!)) ||
        h.numaNodeAffinity!.count() === minAffinitySize,
    }));
  };

  return {
    name: "static",
    reserved,
    start(state) {
      const assignments = state.assignments();
      const shared = state.defaultCPUSet();
      if (shared.isEmpty()) {
        if (assignments.size) throw new Error("default cpuset cannot be empty");
        state.setDefaultCPUSet(all);
        return;
      }
      if (!reserved.intersection(shared).equals(reserved))
        throw new Error(`not all reserved cpus: "${reserved}" are present in defaultCpuSet: "${shared}"`);
      let known = shared;
      for (const [pod, containers] of assignments)
        for (const [container, set] of containers) {
          if (!shared.intersection(set).isEmpty())
            throw new Error(
              `pod: ${pod}, container: ${container} cpuset: "${set}" overlaps with default cpuset "${shared}"`,
            );
          known = known.union(set);
        }
      if (!known.equals(all))
        throw new Error(`current set of available CPUs "${all}" doesn't match with CPUs in state "${known}"`);
    },
    allocate(state, pod, container) {
      const n = guaranteedCPUs(pod, container);
      if (n === 0) return;
      if (options.fullPhysicalCPUsOnly && n % cpusPerCore(topo) !== 0) throw smtAlignmentError(n, cpusPerCore(topo));
      const existing = state.cpuSet(pod.metadata.uid, container.name);
      if (existing) return updateCPUsToReuse(pod, container, existing);
      const hint = affinity.getAffinity(pod.metadata.uid, container.name);
      const set = allocateCPUs(state, n, hint.numaNodeAffinity, cpusToReuse.get(pod.metadata.uid) ?? new CPUSet());
      state.setCPUSet(pod.metadata.uid, container.name, set);
      updateCPUsToReuse(pod, container, set);
    },
    removeContainer(state, podUid, containerName) {
      const release = state.cpuSet(podUid, containerName);
      if (!release) return;
      let inUse = new CPUSet();
      for (const [name, set] of state.assignments().get(podUid) ?? [])
        if (name !== containerName) inUse = inUse.union(set);
      state.delete(podUid, containerName);
      state.setDefaultCPUSet(state.defaultCPUSet().union(release.difference(inUse)));
    },
    topologyHints(state, pod, container) {
      const request = guaranteedCPUs(pod, container);
      if (request === 0) return undefined;
      const allocated = state.cpuSet(pod.metadata.uid, container.name);
      if (allocated) return { cpu: allocated.size !== request ? [] : generateHints(allocated, new CPUSet(), request) };
      return { cpu: generateHints(available(state), cpusToReuse.get(pod.metadata.uid) ?? new CPUSet(), request) };
    },
    podTopologyHints(state, pod) {
      const request = podGuaranteedCPUs(pod);
      if (request === 0) return undefined;
      const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
      let assigned = new CPUSet();
      let any = false;
      for (const c of containers) {
        const set = state.cpuSet(pod.metadata.uid, c.name);
        if (set) {
          any = true;
          assigned = assigned.union(set);
        }
      }
      if (any) return { cpu: assigned.size < request ? [] : generateHints(assigned, new CPUSet(), request) };
      return { cpu: generateHints(available(state), cpusToReuse.get(pod.metadata.uid) ?? new CPUSet(), request) };
    },
  };
}
