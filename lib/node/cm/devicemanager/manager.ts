// The device manager (pkg/kubelet/cm/devicemanager/manager.go): plugins register on
// <root_dir>/device-plugins/kubelet.sock, their ListAndWatch lists become the node's extended resources, pods
// are admitted against the healthy devices, containers get their devices from the plugin's Allocate answer, and
// the record is kept in kubelet_internal_checkpoint. A plugin whose stream ends has its devices marked unhealthy
// and, five minutes later (endpointStopGracePeriod), its resource removed.
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { isSidecar, type Pod, type V1Container } from "../../../api/types.ts";
import { parseQuantity } from "../../../api/quantity.ts";
import { isExtendedResourceName } from "../../../api/validation.ts";
import type { Clock } from "../../../clock.ts";
import type { Logger } from "../../../log.ts";
import { CHECKPOINT_FILE, readCheckpoint, writeCheckpoint } from "./checkpoint.ts";
import {
  DEVICE_PLUGIN_SCHEMA,
  DEVICE_PLUGIN_VERSION,
  HEALTHY,
  type ContainerAllocateResponse,
  type PluginDevice,
  type PluginOptions,
} from "./deviceplugin-schema.ts";
import { createPodDevices, type DeviceRunContainerOptions, type DevicesPerNuma } from "./pod-devices.ts";
import { deviceTopologyHints, hasTopology, orderByAffinity, type DeviceTopologyHint } from "./topology-hints.ts";

/** endpointStopGracePeriod: how long a gone plugin's resource stays in capacity. */
export const STOP_GRACE_MS = 5 * 60_000;
export const KUBELET_SOCKET = "kubelet.sock";
const NO_TOPOLOGY = "-1";

/** A connected plugin (endpoint.go), over gRPC in the kubelet, hand-made in tests. */
export interface PluginEndpoint {
  options: PluginOptions;
  /** Runs ListAndWatch, handing each list to `onDevices`; settles when the stream ends. */
  watch(onDevices: (devices: PluginDevice[]) => void): Promise<void>;
  getPreferredAllocation(available: string[], mustInclude: string[], size: number): Promise<string[]>;
  allocate(ids: string[]): Promise<ContainerAllocateResponse>;
  preStartContainer(ids: string[]): Promise<void>;
  close(): void;
}

export interface RegisterRequest {
  version: string;
  endpoint: string;
  resource_name: string;
}

export interface DeviceManagerDeps {
  /** Dials the plugin's socket and asks for its options (GetDevicePluginOptions). */
  connect(resource: string, socketPath: string): Promise<PluginEndpoint>;
  /** Serves Registration on `socketPath`, handing each request to `register`; returns the stop function. */
  serve(socketPath: string, register: (request: RegisterRequest) => Promise<void>): Promise<() => Promise<void>>;
}

export interface DeviceManagerOptions {
  /** <root_dir>/device-plugins */
  dir: string;
  clock: Clock;
  log: Logger;
  /** The machine's NUMA nodes (the topology manager's); one node 0 when not given. */
  numaNodes?: number[];
}

/** The NUMA nodes the topology manager decided for a container (its affinity store); undefined = any. */
export type AffinityStore = (podUid: string, container: string) => number[] | undefined;

/** One device of a resource for the pod resources API, with its NUMA nodes. */
export interface ResourceDevice {
  resource: string;
  id: string;
  numaNodes: number[];
}

/** Why a pod could not get its devices, as upstream's admission.GetPodAdmitResult or the resource fit words it. */
export interface DeviceRejection {
  reason: "UnexpectedAdmissionError" | `OutOf${string}`;
  message: string;
}

interface EndpointInfo {
  endpoint?: PluginEndpoint;
  /** Set when the plugin went away (or is only known from the checkpoint). */
  stoppedAt?: number;
}

export function createDeviceManager(options: DeviceManagerOptions, deps: DeviceManagerDeps) {
  const { dir, clock, log } = options;
  const endpoints = new Map<string, EndpointInfo>();
  const allDevices = new Map<string, Map<string, PluginDevice>>();
  const healthy = new Map<string, Set<string>>();
  const unhealthy = new Map<string, Set<string>>();
  /** Resources once reported and since removed: the node keeps them at 0, as the Go kubelet's node status does. */
  const removed = new Set<string>();
  const podDevices = createPodDevices(DEVICE_PLUGIN_SCHEMA);
  /** Admitted pods' device counts per resource, held until their containers are allocated. */
  const reserved = new Map<string, Map<string, number>>();
  let activePods: () => Pod[] = () => [];
  let affinity: AffinityStore = () => undefined;
  let numaNodes = options.numaNodes ?? [0];
  let stopServer: (() => Promise<void>) | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  /** Allocations one at a time: two containers must not pick the same free device across an await. */
  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work, work);
    queue = run.catch(() => {});
    return run;
  };

  const save = () => {
    try {
      writeCheckpoint(dir, {
        PodDeviceEntries: podDevices.toCheckpoint(),
        RegisteredDevices: Object.fromEntries([...healthy].map(([r, ids]) => [r, [...ids]])),
      });
    } catch (error) {
      log.error("cannot write the device checkpoint", { dir, error: (error as Error).message });
    }
  };

  const isDevicePluginResource = (resource: string) => healthy.has(resource) || podDevices.devices().has(resource);

  const updateDevices = (resource: string, devices: PluginDevice[]) => {
    const ok = new Set<string>();
    const bad = new Set<string>();
    allDevices.set(resource, new Map(devices.map((d) => [d.ID, d])));
    for (const d of devices) (d.health === HEALTHY ? ok : bad).add(d.ID);
    healthy.set(resource, ok);
    unhealthy.set(resource, bad);
    removed.delete(resource);
    save();
    log.info("device plugin updated its devices", { resource, total: devices.length, healthy: ok.size });
  };

  const markUnhealthy = (resource: string) => {
    const ok = healthy.get(resource) ?? new Set<string>();
    healthy.set(resource, new Set());
    unhealthy.set(resource, new Set([...(unhealthy.get(resource) ?? []), ...ok]));
  };

  const register = async (request: RegisterRequest) => {
    const resource = request.resource_name;
    if (request.version !== DEVICE_PLUGIN_VERSION)
      throw new Error(
        `requested API version "${request.version}" is not supported by kubelet. Supported versions are ["${DEVICE_PLUGIN_VERSION}"]`,
      );
    if (!isExtendedResourceName(resource)) throw new Error(`the ResourceName "${resource}" is invalid`);
    const endpoint = await deps.connect(resource, join(dir, request.endpoint));
    const old = endpoints.get(resource)?.endpoint;
    endpoints.set(resource, { endpoint });
    old?.close();
    log.info("device plugin registered", { resource, endpoint: request.endpoint });
    void endpoint
      .watch((devices) => {
        if (endpoints.get(resource)?.endpoint === endpoint) updateDevices(resource, devices);
      })
      .catch((error) => log.warn("device plugin stream failed", { resource, error: (error as Error).message }))
      .finally(() => {
        const info = endpoints.get(resource);
        if (info?.endpoint !== endpoint) return;
        markUnhealthy(resource);
        info.stoppedAt = clock.now();
        endpoint.close();
        log.warn("device plugin went away: its devices are unhealthy", { resource });
      });
  };

  /** Frees the devices and reservations of pods no longer active (UpdateAllocatedDevices). */
  const updateAllocatedDevices = () => {
    const active = new Set(activePods().map((p) => p.metadata.uid));
    const gone = [...podDevices.podUids()].filter((uid) => !active.has(uid));
    for (const uid of reserved.keys()) if (!active.has(uid)) reserved.delete(uid);
    if (gone.length === 0) return;
    podDevices.delete(gone);
    save();
  };

  /** Devices `pod` asks of each device-plugin resource: its largest init container or its app containers and sidecars together. */
  const podNeeds = (pod: Pod): Map<string, number> => {
    const needs = new Map<string, number>();
    const limits = (c: V1Container) =>
      Object.entries(c.resources?.limits ?? {})
        .filter(([name]) => isDevicePluginResource(name))
        .map(([name, q]) => [name, Math.trunc(parseQuantity(q as string) ?? 0)] as const);
    const running = new Map<string, number>();
    for (const c of [...(pod.spec.initContainers ?? []).filter(isSidecar), ...pod.spec.containers])
      for (const [name, n] of limits(c)) running.set(name, (running.get(name) ?? 0) + n);
    for (const c of (pod.spec.initContainers ?? []).filter((c) => !isSidecar(c)))
      for (const [name, n] of limits(c)) needs.set(name, Math.max(needs.get(name) ?? 0, n));
    for (const [name, n] of running) needs.set(name, Math.max(needs.get(name) ?? 0, n));
    for (const [name, n] of needs) if (n <= 0) needs.delete(name);
    return needs;
  };

  /** An extended resource the pod asks for that no plugin offers: the node has none of it (the predicate's fit). */
  const unknownExtended = (pod: Pod): { resource: string; requested: number } | undefined => {
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
      for (const [name, q] of Object.entries({ ...c.resources?.requests, ...c.resources?.limits })) {
        const requested = Math.trunc(parseQuantity(q as string) ?? 0);
        if (requested > 0 && isExtendedResourceName(name) && !isDevicePluginResource(name))
          return { resource: name, requested };
      }
    return undefined;
  };

  const heldBy = (podUid: string, resource: string): Set<string> => {
    const held = new Set<string>();
    for (const resources of podDevices.podContainers(podUid).values())
      for (const id of resources.get(resource) ?? []) held.add(id);
    return held;
  };

  /** Devices reserved at admission and not yet allocated, by resource, over pods other than `except`. */
  const outstanding = (resource: string, except: string) => {
    let count = 0;
    for (const [uid, needs] of reserved)
      if (uid !== except) count += Math.max(0, (needs.get(resource) ?? 0) - heldBy(uid, resource).size);
    return count;
  };

  const unexpected = (message: string): DeviceRejection => ({
    reason: "UnexpectedAdmissionError",
    message: `Allocate failed due to ${message}, which is unexpected`,
  });

  /** Picks `needed` devices for a container: reusable ones (the pod's finished init containers') first, then the plugin's preference. */
  const pick = async (podUid: string, container: string, resource: string, needed: number): Promise<string[]> => {
    const held = podDevices.podContainers(podUid);
    const reusable = new Set<string>();
    const pod = activePods().find((p) => p.metadata.uid === podUid);
    const inits = new Set((pod?.spec.initContainers ?? []).filter((c) => !isSidecar(c)).map((c) => c.name));
    for (const [name, resources] of held)
      if (inits.has(name)) for (const id of resources.get(resource) ?? []) reusable.add(id);
    for (const [name, resources] of held)
      if (!inits.has(name)) for (const id of resources.get(resource) ?? []) reusable.delete(id);
    const chosen: string[] = [];
    const take = (ids: Iterable<string>) => {
      for (const id of ids) {
        if (chosen.length === needed) return;
        if (!chosen.includes(id)) chosen.push(id);
      }
    };
    take([...reusable].filter((id) => healthy.get(resource)?.has(id)));
    if (chosen.length === needed) return chosen;
    const inUse = podDevices.devices().get(resource) ?? new Set<string>();
    const available = [...(healthy.get(resource) ?? [])].filter((id) => !inUse.has(id) && !chosen.includes(id));
    if (available.length < needed - chosen.length)
      throw new Error(
        `requested number of devices unavailable for ${resource}. Requested: ${needed - chosen.length}, Available: ${available.length}`,
      );
    const decided = affinity(podUid, container);
    if (decided && hasTopology(allDevices.get(resource))) {
      // The topology manager's alignment comes before the plugin's preference (filterByAffinity).
      take(orderByAffinity(allDevices.get(resource)!, available, decided));
      return chosen;
    }
    const endpoint = endpoints.get(resource)?.endpoint;
    if (endpoint?.options.get_preferred_allocation_available) {
      const preferred = await endpoint.getPreferredAllocation([...available, ...chosen], [...chosen], needed);
      take(preferred.filter((id) => available.includes(id)));
    }
    take(available);
    return chosen;
  };

  const hintsFor = (podUid: string, container: string | undefined, asks: ReadonlyArray<readonly [string, number]>) => {
    const hints: Record<string, DeviceTopologyHint[] | undefined> = {};
    for (const [resource, requested] of asks) {
      if (requested <= 0 || !isDevicePluginResource(resource)) continue;
      const devices = allDevices.get(resource);
      if (!devices || !hasTopology(devices)) {
        hints[resource] = undefined;
        continue;
      }
      const held = container
        ? podDevices.containerDevices(podUid, container, resource)
        : heldBy(podUid, resource).size
          ? heldBy(podUid, resource)
          : undefined;
      if (held) {
        // Already allocated (a restart, a second pass): hints for exactly those devices, or none when they differ.
        hints[resource] = held.size === requested ? deviceTopologyHints(numaNodes, devices, held, [], requested) : [];
        continue;
      }
      const inUse = podDevices.devices().get(resource) ?? new Set<string>();
      const available = [...(healthy.get(resource) ?? [])].filter((id) => !inUse.has(id));
      hints[resource] =
        available.length < requested ? [] : deviceTopologyHints(numaNodes, devices, available, [], requested);
    }
    return hints;
  };

  const allocateContainer = (pod: Pod, container: V1Container) =>
    serialized(async () => {
      const uid = pod.metadata.uid;
      for (const [resource, quantity] of Object.entries(container.resources?.limits ?? {})) {
        const needed = Math.trunc(parseQuantity(quantity as string) ?? 0);
        if (needed <= 0 || !isDevicePluginResource(resource)) continue;
        if (podDevices.containerDevices(uid, container.name, resource)) continue;
        const info = endpoints.get(resource);
        if (!info?.endpoint || info.stoppedAt !== undefined) throw new Error(`endpoint ${resource} has been stopped`);
        const ids = await pick(uid, container.name, resource, needed);
        const response = await info.endpoint.allocate(ids);
        const perNuma: DevicesPerNuma = {};
        for (const id of ids) {
          const nodes = allDevices.get(resource)?.get(id)?.topology?.nodes ?? [];
          for (const node of nodes.length ? nodes.map((n) => String(n.ID)) : [NO_TOPOLOGY])
            (perNuma[node] ??= []).push(id);
        }
        podDevices.insert(uid, container.name, resource, perNuma, response);
        save();
      }
    });

  return {
    /** Reads the checkpoint, removes stale sockets and serves kubelet.sock (Start). */
    async start(deps2: { activePods: () => Pod[] }) {
      activePods = deps2.activePods;
      mkdirSync(dir, { recursive: true, mode: 0o750 });
      try {
        const data = readCheckpoint(dir);
        podDevices.fromCheckpoint(data?.PodDeviceEntries ?? []);
        for (const resource of Object.keys(data?.RegisteredDevices ?? {})) {
          // Zero until the plugin registers again; gone after the grace period if it never does.
          healthy.set(resource, new Set());
          unhealthy.set(resource, new Set());
          endpoints.set(resource, { stoppedAt: clock.now() });
        }
      } catch (error) {
        log.error("Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date", {
          error: (error as Error).message,
        });
      }
      // A plugin sees its socket gone and registers again with this kubelet (CleanupPluginDirectory).
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (name === CHECKPOINT_FILE) continue;
        try {
          if (statSync(path).isSocket()) rmSync(path, { force: true });
        } catch {}
      }
      stopServer = await deps.serve(join(dir, KUBELET_SOCKET), register);
    },
    async stop() {
      for (const info of endpoints.values()) info.endpoint?.close();
      await stopServer?.();
    },
    /** The node's capacity and allocatable of each device resource (GetCapacity); expired ones are removed. */
    capacity(): { capacity: Record<string, string>; allocatable: Record<string, string> } {
      const capacity: Record<string, string> = {};
      const allocatable: Record<string, string> = {};
      let changed = false;
      for (const resource of new Set([...healthy.keys(), ...unhealthy.keys()])) {
        const info = endpoints.get(resource);
        if (!info || (info.stoppedAt !== undefined && clock.now() - info.stoppedAt > STOP_GRACE_MS)) {
          endpoints.delete(resource);
          healthy.delete(resource);
          unhealthy.delete(resource);
          removed.add(resource);
          changed = true;
          continue;
        }
        const ok = healthy.get(resource)?.size ?? 0;
        capacity[resource] = String(ok + (unhealthy.get(resource)?.size ?? 0));
        allocatable[resource] = String(ok);
      }
      for (const resource of removed) {
        capacity[resource] ??= "0";
        allocatable[resource] ??= "0";
      }
      if (changed) save();
      return { capacity, allocatable };
    },
    /**
     * Admission (the resource allocator's admit handler): the devices the pod asks for are held for it, or it is
     * refused in upstream's words. Devices already recorded for the pod (a restart) are its own.
     */
    admit(pod: Pod): DeviceRejection | undefined {
      const uid = pod.metadata.uid;
      const unknown = unknownExtended(pod);
      if (unknown)
        return {
          reason: `OutOf${unknown.resource}`,
          message: `Node didn't have enough resource: ${unknown.resource}, requested: ${unknown.requested}, used: 0, capacity: 0`,
        };
      const needs = podNeeds(pod);
      if (needs.size === 0) return undefined;
      updateAllocatedDevices();
      for (const [resource, need] of needs) {
        const needed = need - heldBy(uid, resource).size;
        if (needed <= 0) continue;
        if (!healthy.has(resource)) return unexpected(`cannot allocate unregistered device ${resource}`);
        const ok = healthy.get(resource)!;
        if (ok.size === 0)
          return unexpected(`no healthy devices present; cannot allocate unhealthy devices ${resource}`);
        const inUse = podDevices.devices().get(resource) ?? new Set<string>();
        const available = [...ok].filter((id) => !inUse.has(id)).length - outstanding(resource, uid);
        if (available < needed)
          return unexpected(
            `requested number of devices unavailable for ${resource}. Requested: ${needed}, Available: ${Math.max(0, available)}`,
          );
      }
      reserved.set(uid, needs);
      return undefined;
    },
    /**
     * What the container is created with (GetDeviceRunContainerOptions): its devices are allocated by the plugin
     * on first start, PreStartContainer is called when the plugin asks for it.
     */
    async runContainerOptions(pod: Pod, container: V1Container): Promise<DeviceRunContainerOptions | undefined> {
      const asks = Object.entries(container.resources?.limits ?? {}).filter(
        ([name, q]) => isDevicePluginResource(name) && (parseQuantity(q as string) ?? 0) > 0,
      );
      if (asks.length === 0) return undefined;
      await allocateContainer(pod, container);
      for (const [resource] of asks) {
        const endpoint = endpoints.get(resource)?.endpoint;
        if (!endpoint?.options.pre_start_required) continue;
        const ids = podDevices.containerDevices(pod.metadata.uid, container.name, resource);
        if (!ids)
          throw new Error(
            `no devices found allocated in local cache for pod ${pod.metadata.uid}, container ${container.name}, resource ${resource}`,
          );
        await endpoint
          .preStartContainer([...ids])
          .catch((error) =>
            Promise.reject(
              new Error(`device plugin PreStartContainer rpc failed with err: ${(error as Error).message}`),
            ),
          );
      }
      return podDevices.runContainerOptions(pod.metadata.uid, container.name);
    },
    /** The devices a container holds, one entry per device and NUMA node (pod resources API). */
    containerDevices(podUid: string, container: string): ResourceDevice[] {
      return podDevices
        .containerResources(podUid, container)
        .flatMap(({ resource, devices }) =>
          Object.entries(devices).flatMap(([node, ids]) =>
            ids.map((id) => ({ resource, id, numaNodes: node === NO_TOPOLOGY ? [] : [Number(node)] })),
          ),
        );
    },
    /** Every healthy device known (GetAllocatableDevices). */
    allocatableDevices(): ResourceDevice[] {
      return [...healthy].flatMap(([resource, ids]) =>
        [...ids].sort().map((id) => ({
          resource,
          id,
          numaNodes: (allDevices.get(resource)?.get(id)?.topology?.nodes ?? []).map((n) => n.ID),
        })),
      );
    },
    updateAllocatedDevices,
    /** Reads the topology manager's decisions (its Store) when allocating. */
    setAffinityStore(store: AffinityStore) {
      affinity = store;
    },
    /** The machine's NUMA nodes, once the topology is read (hints range over them). */
    setNumaNodes(nodes: number[]) {
      numaNodes = nodes.length ? [...nodes] : [0];
    },
    /** Lets go of what admission held for a pod another admit handler then refused. */
    release(podUid: string) {
      reserved.delete(podUid);
    },
    /** The container's hints per device resource (GetTopologyHints); undefined = no preference for it. */
    getTopologyHints(pod: Pod, container: V1Container): Record<string, DeviceTopologyHint[] | undefined> {
      const asks = Object.entries(container.resources?.limits ?? {}).map(
        ([name, q]) => [name, Math.trunc(parseQuantity(q as string) ?? 0)] as const,
      );
      return hintsFor(pod.metadata.uid, container.name, asks);
    },
    /** The same for the whole pod (scope pod): its largest init container or its app containers together. */
    getPodTopologyHints(pod: Pod): Record<string, DeviceTopologyHint[] | undefined> {
      return hintsFor(pod.metadata.uid, undefined, [...podNeeds(pod)]);
    },
  };
}

export type DeviceManager = ReturnType<typeof createDeviceManager>;
