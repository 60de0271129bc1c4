// Which devices each pod's containers hold, with the plugins' Allocate answers (pod_devices.go): the
// manager's record, its checkpoint entries, and what a container is created with.
import type { ContainerDeviceOptions } from "../../../container/container-config.ts";
import type { CriSchema } from "../../../container/cri/cri-codec.ts";
import type { PodDevicesEntry } from "./checkpoint.ts";
import type { ContainerAllocateResponse } from "./deviceplugin-schema.ts";
import { messageCodec } from "./grpc-service.ts";

/** NUMA node id (-1: the plugin gave none) → device ids. */
export type DevicesPerNuma = Record<string, string[]>;

/** What the container is created with, merged over its resources (DeviceRunContainerOptions). */
export type DeviceRunContainerOptions = ContainerDeviceOptions;

interface Allocation {
  devices: DevicesPerNuma;
  response: ContainerAllocateResponse;
}

/** The pod → container → resource record of allocated devices. */
export function createPodDevices(schema: CriSchema) {
  const pods = new Map<string, Map<string, Map<string, Allocation>>>();
  const codec = () => messageCodec(schema, "ContainerAllocateResponse");
  const ids = (devices: DevicesPerNuma) => new Set(Object.values(devices).flat());

  return {
    insert(
      podUid: string,
      container: string,
      resource: string,
      devices: DevicesPerNuma,
      response: ContainerAllocateResponse,
    ) {
      let containers = pods.get(podUid);
      if (!containers) pods.set(podUid, (containers = new Map()));
      let resources = containers.get(container);
      if (!resources) containers.set(container, (resources = new Map()));
      resources.set(resource, { devices, response });
    },
    /** The device ids `container` holds of `resource`, undefined when none were allocated. */
    containerDevices(podUid: string, container: string, resource: string): Set<string> | undefined {
      const found = pods.get(podUid)?.get(container)?.get(resource);
      return found ? ids(found.devices) : undefined;
    },
    /** Each resource's devices of the container, by NUMA node. */
    containerResources(podUid: string, container: string): Array<{ resource: string; devices: DevicesPerNuma }> {
      return [...(pods.get(podUid)?.get(container) ?? new Map<string, Allocation>())]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([resource, a]) => ({ resource, devices: a.devices }));
    },
    /** Devices held by each container of the pod, by container name. */
    podContainers(podUid: string): Map<string, Map<string, Set<string>>> {
      const out = new Map<string, Map<string, Set<string>>>();
      for (const [container, resources] of pods.get(podUid) ?? [])
        out.set(container, new Map([...resources].map(([r, a]) => [r, ids(a.devices)])));
      return out;
    },
    hasPod: (podUid: string) => pods.has(podUid),
    podUids: () => new Set(pods.keys()),
    delete(podUids: Iterable<string>) {
      for (const uid of podUids) pods.delete(uid);
    },
    /** Every allocated device id, by resource. */
    devices(): Map<string, Set<string>> {
      const out = new Map<string, Set<string>>();
      for (const containers of pods.values())
        for (const resources of containers.values())
          for (const [resource, a] of resources) {
            let set = out.get(resource);
            if (!set) out.set(resource, (set = new Set()));
            for (const id of ids(a.devices)) set.add(id);
          }
      return out;
    },
    /**
     * The container's envs, mounts, devices, annotations and CDI devices over all its resources (in resource
     * name order); a later resource never overrides an earlier one's env, path or annotation, as upstream.
     */
    runContainerOptions(podUid: string, container: string): DeviceRunContainerOptions | undefined {
      const resources = pods.get(podUid)?.get(container);
      if (!resources) return undefined;
      const envs = new Map<string, string>();
      const mounts = new Map<string, DeviceRunContainerOptions["mounts"][number]>();
      const devices = new Map<string, DeviceRunContainerOptions["devices"][number]>();
      const annotations: Record<string, string> = {};
      const cdi = new Set<string>();
      for (const [, { response }] of [...resources].sort(([a], [b]) => a.localeCompare(b))) {
        for (const [key, value] of Object.entries(response.envs ?? {})) if (!envs.has(key)) envs.set(key, value);
        for (const m of response.mounts ?? [])
          if (!mounts.has(m.container_path))
            mounts.set(m.container_path, {
              container_path: m.container_path,
              host_path: m.host_path,
              readonly: m.read_only,
            });
        for (const d of response.devices ?? [])
          if (!devices.has(d.container_path))
            devices.set(d.container_path, {
              container_path: d.container_path,
              host_path: d.host_path,
              permissions: d.permissions || "mrw",
            });
        for (const [key, value] of Object.entries(response.annotations ?? {})) annotations[key] ??= value;
        for (const d of response.cdi_devices ?? []) cdi.add(d.name);
      }
      return {
        envs: [...envs].map(([key, value]) => ({ key, value })),
        mounts: [...mounts.values()],
        devices: [...devices.values()],
        annotations,
        cdiDevices: [...cdi],
      };
    },
    toCheckpoint(): PodDevicesEntry[] {
      const entries: PodDevicesEntry[] = [];
      for (const [PodUID, containers] of pods)
        for (const [ContainerName, resources] of containers)
          for (const [ResourceName, a] of resources)
            entries.push({
              PodUID,
              ContainerName,
              ResourceName,
              DeviceIDs: a.devices,
              AllocResp: codec().encode(a.response).toString("base64"),
            });
      return entries;
    },
    fromCheckpoint(entries: PodDevicesEntry[]) {
      for (const e of entries) {
        const devices: DevicesPerNuma = {};
        for (const [node, list] of Object.entries(e.DeviceIDs ?? {})) devices[node] = list ?? [];
        const response = codec().decode(Buffer.from(e.AllocResp ?? "", "base64")) as ContainerAllocateResponse;
        this.insert(e.PodUID, e.ContainerName, e.ResourceName, devices, response);
      }
    },
  };
}

export type PodDevices = ReturnType<typeof createPodDevices>;
