// podresources v1 (k8s.io/kubelet/pkg/apis/podresources/v1/api.proto) as tables for cri-codec.ts: names and
// field numbers as in the proto, so monitoring agents built against it read this kubelet's socket.
import type { CriSchema } from "../../container/cri/cri-codec.ts";

export const POD_RESOURCES_SCHEMA: CriSchema = {
  messages: {
    AllocatableResourcesRequest: [],
    AllocatableResourcesResponse: [
      [1, "devices", "repeated ContainerDevices"],
      [2, "cpu_ids", "repeated int64"],
      [3, "memory", "repeated ContainerMemory"],
    ],
    ListPodResourcesRequest: [],
    ListPodResourcesResponse: [[1, "pod_resources", "repeated PodResources"]],
    PodResources: [
      [1, "name", "string"],
      [2, "namespace", "string"],
      [3, "containers", "repeated ContainerResources"],
    ],
    ContainerResources: [
      [1, "name", "string"],
      [2, "devices", "repeated ContainerDevices"],
      [3, "cpu_ids", "repeated int64"],
      [4, "memory", "repeated ContainerMemory"],
      [5, "dynamic_resources", "repeated DynamicResource"],
    ],
    ContainerMemory: [
      [1, "memory_type", "string"],
      [2, "size", "uint64"],
      [3, "topology", "TopologyInfo"],
    ],
    ContainerDevices: [
      [1, "resource_name", "string"],
      [2, "device_ids", "repeated string"],
      [3, "topology", "TopologyInfo"],
    ],
    TopologyInfo: [[1, "nodes", "repeated NUMANode"]],
    NUMANode: [[1, "ID", "int64"]],
    DynamicResource: [
      [1, "class_name", "string"],
      [2, "claim_name", "string"],
      [3, "claim_namespace", "string"],
      [4, "claim_resources", "repeated ClaimResource"],
    ],
    ClaimResource: [[1, "cdi_devices", "repeated CDIDevice"]],
    CDIDevice: [[1, "name", "string"]],
    GetPodResourcesRequest: [
      [1, "pod_name", "string"],
      [2, "pod_namespace", "string"],
    ],
    GetPodResourcesResponse: [[1, "pod_resources", "PodResources"]],
  },
  enums: {},
  services: {
    PodResourcesLister: [
      ["List", "ListPodResourcesRequest", "ListPodResourcesResponse"],
      ["GetAllocatableResources", "AllocatableResourcesRequest", "AllocatableResourcesResponse"],
      ["Get", "GetPodResourcesRequest", "GetPodResourcesResponse"],
    ],
  },
};
