// deviceplugin v1beta1 (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto) as tables for cri-codec.ts:
// names and field numbers as in the proto, so any plugin built against it talks to this kubelet.
import type { CriSchema } from "../../../container/cri/cri-codec.ts";

/** The API version the kubelet and its plugins speak (api.SupportedVersions). */
export const DEVICE_PLUGIN_VERSION = "v1beta1";

/** A response type written `stream X` is a server stream (ListAndWatch). */
export const DEVICE_PLUGIN_SCHEMA: CriSchema = {
  messages: {
    Empty: [],
    DevicePluginOptions: [
      [1, "pre_start_required", "bool"],
      [2, "get_preferred_allocation_available", "bool"],
    ],
    RegisterRequest: [
      [1, "version", "string"],
      [2, "endpoint", "string"],
      [3, "resource_name", "string"],
      [4, "options", "DevicePluginOptions"],
    ],
    ListAndWatchResponse: [[1, "devices", "repeated Device"]],
    TopologyInfo: [[1, "nodes", "repeated NUMANode"]],
    NUMANode: [[1, "ID", "int64"]],
    Device: [
      [1, "ID", "string"],
      [2, "health", "string"],
      [3, "topology", "TopologyInfo"],
    ],
    PreStartContainerRequest: [[1, "devices_ids", "repeated string"]],
    PreStartContainerResponse: [],
    PreferredAllocationRequest: [[1, "container_requests", "repeated ContainerPreferredAllocationRequest"]],
    ContainerPreferredAllocationRequest: [
      [1, "available_deviceIDs", "repeated string"],
      [2, "must_include_deviceIDs", "repeated string"],
      [3, "allocation_size", "int32"],
    ],
    PreferredAllocationResponse: [[1, "container_responses", "repeated ContainerPreferredAllocationResponse"]],
    ContainerPreferredAllocationResponse: [[1, "deviceIDs", "repeated string"]],
    AllocateRequest: [[1, "container_requests", "repeated ContainerAllocateRequest"]],
    ContainerAllocateRequest: [[1, "devices_ids", "repeated string"]],
    CDIDevice: [[1, "name", "string"]],
    AllocateResponse: [[1, "container_responses", "repeated ContainerAllocateResponse"]],
    ContainerAllocateResponse: [
      [1, "envs", "map<string, string>"],
      [2, "mounts", "repeated Mount"],
      [3, "devices", "repeated DeviceSpec"],
      [4, "annotations", "map<string, string>"],
      [5, "cdi_devices", "repeated CDIDevice"],
    ],
    Mount: [
      [1, "container_path", "string"],
      [2, "host_path", "string"],
      [3, "read_only", "bool"],
    ],
    DeviceSpec: [
      [1, "container_path", "string"],
      [2, "host_path", "string"],
      [3, "permissions", "string"],
    ],
  },
  enums: {},
  services: {
    Registration: [["Register", "RegisterRequest", "Empty"]],
    DevicePlugin: [
      ["GetDevicePluginOptions", "Empty", "DevicePluginOptions"],
      ["ListAndWatch", "Empty", "stream ListAndWatchResponse"],
      ["GetPreferredAllocation", "PreferredAllocationRequest", "PreferredAllocationResponse"],
      ["Allocate", "AllocateRequest", "AllocateResponse"],
      ["PreStartContainer", "PreStartContainerRequest", "PreStartContainerResponse"],
    ],
  },
};

/** A device as ListAndWatch reports it (decoded: every field present). */
export interface PluginDevice {
  ID: string;
  /** "Healthy" or "Unhealthy". */
  health: string;
  topology: { nodes: Array<{ ID: number }> } | null;
}

export interface PluginOptions {
  pre_start_required: boolean;
  get_preferred_allocation_available: boolean;
}

/** One container's part of an AllocateResponse. */
export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: Array<{ container_path: string; host_path: string; read_only: boolean }>;
  devices: Array<{ container_path: string; host_path: string; permissions: string }>;
  annotations: Record<string, string>;
  cdi_devices: Array<{ name: string }>;
}

export const HEALTHY = "Healthy";
export const UNHEALTHY = "Unhealthy";
