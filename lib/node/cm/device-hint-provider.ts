// The device manager as one of the topology manager's hint providers (container_manager_linux.go's
// AddHintProvider(deviceManager)): its NUMA-id hints become BitMask hints, its admission runs as the provider's
// allocate, and it reads the affinity the topology manager decided when it picks devices.
import type { Pod, V1Container } from "../../api/types.ts";
import type { DeviceManager } from "./devicemanager/manager.ts";
import type { DeviceTopologyHint } from "./devicemanager/topology-hints.ts";
import { BitMask } from "./topologymanager/bitmask.ts";
import type { ProviderHints } from "./topologymanager/policy.ts";
import { AdmissionError, type HintProvider, type TopologyAffinityStore } from "./topologymanager/topology-manager.ts";

type Devices = Pick<
  DeviceManager,
  "admit" | "getTopologyHints" | "getPodTopologyHints" | "setAffinityStore" | "setNumaNodes"
>;

const toBitMasks = (hints: Record<string, DeviceTopologyHint[] | undefined>): ProviderHints =>
  Object.fromEntries(
    Object.entries(hints).map(([resource, list]) => [
      resource,
      list?.map((h) => ({ numaNodeAffinity: BitMask.of(...h.nodes), preferred: h.preferred })),
    ]),
  );

/**
 * Connects `devices` to the topology manager `store` on a machine with `numaNodes`, and returns the provider to
 * register. Allocation of the devices themselves stays at container start (the plugin's Allocate is a gRPC call);
 * here they are held for the pod, or the pod is refused in the device manager's words.
 */
export function deviceHintProvider(devices: Devices, store: TopologyAffinityStore, numaNodes: number[]): HintProvider {
  devices.setNumaNodes(numaNodes);
  devices.setAffinityStore((uid, name) => store.getAffinity(uid, name).numaNodeAffinity?.getBits());
  return {
    getTopologyHints: (pod: Pod, container: V1Container) => toBitMasks(devices.getTopologyHints(pod, container)),
    getPodTopologyHints: (pod: Pod) => toBitMasks(devices.getPodTopologyHints(pod)),
    allocate(pod: Pod) {
      // admit holds the whole pod's devices and is idempotent, so each container may ask.
      const refusal = devices.admit(pod);
      if (refusal) throw new AdmissionError(refusal.reason, refusal.message);
    },
  };
}
