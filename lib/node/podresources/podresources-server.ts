// The pod resources API (pkg/kubelet/apis/podresources server_v1.go) on <root_dir>/pod-resources/kubelet.sock:
// List, GetAllocatableResources and Get, answered from narrow providers — devices from the device manager,
// exclusive CPUs and memory from the CPU and memory managers when they exist (none: empty lists).
import { mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { isSidecar, type Pod, type V1Container } from "../../api/types.ts";
import { serveUnixOnDemand } from "../../grpc.ts";
import { serviceDefinition } from "../cm/devicemanager/grpc-service.ts";
import { POD_RESOURCES_SCHEMA } from "./podresources-schema.ts";

/** A device with its NUMA nodes (none when the plugin reported none). */
export interface ResourceDevice {
  resource: string;
  id: string;
  numaNodes: number[];
}

/** The device manager's part (DevicesProvider). */
export interface DevicesProvider {
  updateAllocatedDevices(): void;
  containerDevices(podUid: string, container: string): ResourceDevice[];
  allocatableDevices(): ResourceDevice[];
}

/** The CPU manager's part (CPUsProvider): exclusive CPU ids of a container, and all allocatable ones. */
export interface CpusProvider {
  containerCpus(podUid: string, container: string): number[];
  allocatableCpus(): number[];
}

/** A block of memory or hugepages on its NUMA nodes. */
export interface MemoryBlock {
  /** "memory" or "hugepages-<size>". */
  memoryType: string;
  size: number;
  numaNodes: number[];
}

/** The memory manager's part (MemoryProvider). */
export interface MemoryProvider {
  containerMemory(podUid: string, container: string): MemoryBlock[];
  allocatableMemory(): MemoryBlock[];
}

export interface PodResourcesProviders {
  /** Pods admitted and not terminated (GetActivePods). */
  activePods(): Pod[];
  devices: DevicesProvider;
  cpus?: CpusProvider;
  memory?: MemoryProvider;
}

const topology = (nodes: number[]) => (nodes.length ? { nodes: nodes.map((ID) => ({ ID })) } : null);
const devicesOf = (list: ResourceDevice[]) =>
  list.map((d) => ({ resource_name: d.resource, device_ids: [d.id], topology: topology(d.numaNodes) }));
const memoryOf = (list: MemoryBlock[]) =>
  list.map((m) => ({ memory_type: m.memoryType, size: m.size, topology: topology(m.numaNodes) }));

/** The three methods as plain functions (the gRPC server below only encodes them). */
export function createPodResourcesService(p: PodResourcesProviders) {
  const container = (pod: Pod, c: V1Container) => ({
    name: c.name,
    devices: devicesOf(p.devices.containerDevices(pod.metadata.uid, c.name)),
    cpu_ids: p.cpus?.containerCpus(pod.metadata.uid, c.name) ?? [],
    memory: memoryOf(p.memory?.containerMemory(pod.metadata.uid, c.name) ?? []),
    dynamic_resources: [],
  });
  const resources = (pod: Pod) => ({
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    // Restartable init containers (sidecars) run beside the app containers, so they are listed; others are not.
    containers: [...(pod.spec.initContainers ?? []).filter(isSidecar), ...pod.spec.containers].map((c) =>
      container(pod, c),
    ),
  });
  return {
    list() {
      p.devices.updateAllocatedDevices();
      return { pod_resources: p.activePods().map(resources) };
    },
    getAllocatableResources() {
      return {
        devices: devicesOf(p.devices.allocatableDevices()),
        cpu_ids: p.cpus?.allocatableCpus() ?? [],
        memory: memoryOf(p.memory?.allocatableMemory() ?? []),
      };
    },
    get(request: { pod_name: string; pod_namespace: string }) {
      const pod = p
        .activePods()
        .find((x) => x.metadata.name === request.pod_name && x.metadata.namespace === request.pod_namespace);
      if (!pod) throw new Error(`pod ${request.pod_name} in namespace ${request.pod_namespace} not found`);
      return { pod_resources: resources(pod) };
    },
  };
}

/** Serves the API on `socketPath` (its directory made, a stale socket replaced) until the returned function is called;
 *  grpc-js loads when a client first connects. */
export async function servePodResources(
  socketPath: string,
  providers: PodResourcesProviders,
): Promise<() => Promise<void>> {
  const service = createPodResourcesService(providers);
  type Callback = (error: object | null, response?: object) => void;
  mkdirSync(dirname(socketPath), { recursive: true, mode: 0o750 });
  rmSync(socketPath, { force: true });
  return serveUnixOnDemand(socketPath, (grpc, server) => {
    const unary = (fn: (request: any) => object) => (call: { request: object }, callback: Callback) => {
      try {
        callback(null, fn(call.request));
      } catch (error) {
        callback({ code: grpc.status.UNKNOWN, details: (error as Error).message });
      }
    };
    server.addService(serviceDefinition(POD_RESOURCES_SCHEMA, "v1", "PodResourcesLister"), {
      List: unary(() => service.list()),
      GetAllocatableResources: unary(() => service.getAllocatableResources()),
      Get: unary((request) => service.get(request)),
    });
  });
}
