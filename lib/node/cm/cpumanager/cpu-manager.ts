// The CPU manager (pkg/kubelet/cm/cpumanager/cpu_manager.go): its policy (none or static), the state file, the
// topology hints and allocation the topology manager asks for at admission, each container's cpuset at creation,
// and the reconcile loop that writes the shared pool into every other running container as it shrinks or grows
// (UpdateContainerResources), after releasing the CPUs of pods that are gone.
import type { Pod, V1Container } from "../../../api/types.ts";
import { LABEL, type Runtime } from "../../../container/runtime.ts";
import type { Logger } from "../../../log.ts";
import { CPUSet, parseCPUSet } from "../cpuset.ts";
import type { CPUTopology } from "../topology.ts";
import type { HintProvider, TopologyAffinityStore } from "../topologymanager/topology-manager.ts";
import { createCPUManagerState, type CPUManagerState } from "./cpu-manager-state.ts";
import { staticPolicyOptions, validateStaticPolicyOptions } from "./policy-options.ts";
import { createStaticPolicy, type StaticPolicy } from "./policy-static.ts";

export const CPU_POLICY_NONE = "none";
export const CPU_POLICY_STATIC = "static";

export interface CPUManagerOptions {
  /** cpuManagerPolicy: none or static. */
  policy: string;
  /** cpuManagerPolicyOptions. */
  policyOptions: Record<string, string>;
  /** reservedSystemCPUs ("" = none): these CPUs, never exclusive. */
  reservedSystemCPUs: string;
  /** kubeReserved.cpu + systemReserved.cpu in millicores: its ceiling in CPUs is reserved (without reservedSystemCPUs). */
  reservedMilliCpu: number;
  /** The state file's directory (root_dir). */
  stateDir: string;
  /** The topology manager's policy name (align-by-socket is refused with single-numa-node). */
  topologyPolicy: string;
}

export interface CPUManagerDeps {
  topology: CPUTopology;
  affinity: TopologyAffinityStore;
  runtime: Pick<Runtime, "listContainers" | "updateContainerResources">;
  log: Logger;
}

export interface CPUManager extends HintProvider {
  policyName: string;
  /** The cpuset a container is created with (its own CPUs or the shared pool); undefined = unpinned (none). */
  cpusetFor(podUid: string, containerName: string): string | undefined;
  /** Releases the CPUs of containers no active pod has (not before every source has been read). */
  removeStaleState(activePods: Pod[], except?: Pod): void;
  /** One reconcile pass: stale state released, then every running container's cpuset brought to its assignment. */
  reconcile(activePods: Pod[]): Promise<void>;
  /** Binds what removeStaleState needs at allocation time (the sync loop is made after the manager). */
  bind(pods: { activePods(): Pod[]; allSourcesReady(): boolean }): void;
  /** The state, for tests and the pod resources API. */
  state?: CPUManagerState;
  /** The reserved CPUs (static), shared pool only. */
  reserved: CPUSet;
}

/** Creates the CPU manager and restores its state; throws upstream's messages for what cannot start. */
export function createCPUManager(options: CPUManagerOptions, deps: CPUManagerDeps): CPUManager {
  const { log } = deps;
  if (options.policy === CPU_POLICY_NONE) {
    if (Object.keys(options.policyOptions).length)
      throw new Error(
        `new none policy error: None policy: received unsupported options=map[${Object.entries(options.policyOptions)
          .map(([k, v]) => `${k}:${v}`)
          .join(" ")}]`,
      );
    return noneManager(createCPUManagerState(options.stateDir, CPU_POLICY_NONE));
  }
  if (options.policy !== CPU_POLICY_STATIC) throw new Error(`unknown policy: "${options.policy}"`);
  let reservedSet: CPUSet;
  try {
    reservedSet = parseCPUSet(options.reservedSystemCPUs);
  } catch (error) {
    throw new Error(`reservedSystemCPUs "${options.reservedSystemCPUs}": ${(error as Error).message}`);
  }
  const numReserved = reservedSet.size || Math.ceil(options.reservedMilliCpu / 1000);
  if (numReserved === 0)
    throw new Error(
      "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero",
    );
  const policyOptions = staticPolicyOptions(options.policyOptions);
  validateStaticPolicyOptions(policyOptions, deps.topology, options.topologyPolicy);
  let policy: StaticPolicy;
  try {
    policy = createStaticPolicy(deps.topology, numReserved, reservedSet, deps.affinity, policyOptions);
  } catch (error) {
    throw new Error(`new static policy error: ${(error as Error).message}`);
  }
  const state = createCPUManagerState(options.stateDir, CPU_POLICY_STATIC);
  policy.start(state);
  log.info(
    `CPU manager: static policy, ${deps.topology.numCPUs} CPUs (${deps.topology.numSockets} sockets, ${deps.topology.numCores} cores, ${deps.topology.numNUMANodes} NUMA nodes), reserved ${policy.reserved}, shared pool ${state.defaultCPUSet()}`,
  );
  /** Container id → the cpuset last written into it. */
  const lastUpdate = new Map<string, string>();
  let pods: { activePods(): Pod[]; allSourcesReady(): boolean } | undefined;

  const removeStaleState = (activePods: Pod[], except?: Pod) => {
    if (pods && !pods.allSourcesReady()) return;
    const active = new Map<string, Set<string>>();
    for (const pod of except ? [...activePods, except] : activePods)
      active.set(
        pod.metadata.uid,
        new Set([...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name)),
      );
    for (const [uid, containers] of [...state.assignments()])
      for (const name of [...containers.keys()])
        if (!active.get(uid)?.has(name)) {
          log.info(`CPU manager: releasing the CPUs of container "${name}" of pod ${uid}, which is gone`);
          policy.removeContainer(state, uid, name);
        }
  };

  return {
    policyName: CPU_POLICY_STATIC,
    state,
    reserved: policy.reserved,
    bind: (p) => void (pods = p),
    getTopologyHints: (pod, container) => policy.topologyHints(state, pod, container),
    getPodTopologyHints: (pod) => policy.podTopologyHints(state, pod),
    allocate(pod: Pod, container: V1Container) {
      if (pods) removeStaleState(pods.activePods(), pod);
      policy.allocate(state, pod, container);
    },
    cpusetFor(uid, name) {
      const set = state.cpuSetOrDefault(uid, name);
      return set.isEmpty() ? undefined : set.toString();
    },
    removeStaleState,
    async reconcile(activePods) {
      removeStaleState(activePods);
      const active = new Set(activePods.map((p) => p.metadata.uid));
      const running = (await deps.runtime.listContainers()).filter((c) => c.state === "CONTAINER_RUNNING");
      const seen = new Set<string>();
      for (const container of running) {
        const uid = container.labels[LABEL.podUid];
        const name = container.labels[LABEL.containerName];
        if (!uid || !name || !active.has(uid)) continue;
        seen.add(container.id);
        const cpus = state.cpuSetOrDefault(uid, name).toString();
        if (!cpus || lastUpdate.get(container.id) === cpus) continue;
        try {
          await deps.runtime.updateContainerResources(container.id, {
            cpu_period: 0,
            cpu_quota: 0,
            cpu_shares: 0,
            memory_limit_in_bytes: 0,
            cpuset_cpus: cpus,
          });
          lastUpdate.set(container.id, cpus);
        } catch (error) {
          log.warn(
            `CPU manager: cannot set the cpuset of container "${name}" of pod ${uid} to ${cpus}: ${(error as Error).message}; retried next reconcile`,
          );
        }
      }
      for (const id of [...lastUpdate.keys()]) if (!seen.has(id)) lastUpdate.delete(id);
    },
  };
}

/** The none policy: no pinning; its state file names the policy, so a later change of policy is caught. */
function noneManager(state: CPUManagerState): CPUManager {
  return {
    policyName: CPU_POLICY_NONE,
    state,
    reserved: new CPUSet(),
    bind: () => {},
    getTopologyHints: () => undefined,
    getPodTopologyHints: () => undefined,
    allocate: () => {},
    cpusetFor: () => undefined,
    removeStaleState: () => {},
    reconcile: async () => {},
  };
}
