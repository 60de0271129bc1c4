import { afterEach, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod, V1Container } from "../../api/types.ts";
import { podResourcesClient } from "../../testing/podresources-client.ts";
import { testPod } from "../../testing/pods.ts";
import { createPodResourcesService, servePodResources, type PodResourcesProviders } from "./podresources-server.ts";

const stops: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

function providers(pods: Pod[], withManagers = false): PodResourcesProviders {
  return {
    activePods: () => pods,
    devices: {
      updateAllocatedDevices() {},
      containerDevices: (uid, name) =>
        uid === pods[0]?.metadata.uid && name === "app"
          ? [{ resource: "example.com/widget", id: "widget-1", numaNodes: [0] }]
          : [],
      allocatableDevices: () => [
        { resource: "example.com/widget", id: "widget-0", numaNodes: [] },
        { resource: "example.com/widget", id: "widget-1", numaNodes: [0] },
      ],
    },
    ...(withManagers
      ? {
          cpus: { containerCpus: () => [2, 3], allocatableCpus: () => [1, 2, 3] },
          memory: {
            containerMemory: () => [{ memoryType: "memory", size: 1 << 30, numaNodes: [0] }],
            allocatableMemory: () => [{ memoryType: "memory", size: 4 << 30, numaNodes: [0] }],
          },
        }
      : {}),
  };
}

function pod(): Pod {
  const p = testPod("gpu", {
    initContainers: [
      { name: "setup", image: "busybox" } as V1Container,
      { name: "sidecar", image: "busybox", restartPolicy: "Always" } as V1Container,
    ],
  });
  p.metadata.uid ||= "uid-gpu";
  return p;
}

test("List names each running pod's app containers and sidecars with their devices, none for plain init containers", () => {
  const service = createPodResourcesService(providers([pod()]));
  expect(service.list()).toEqual({
    pod_resources: [
      {
        name: "gpu",
        namespace: "default",
        containers: [
          { name: "sidecar", devices: [], cpu_ids: [], memory: [], dynamic_resources: [] },
          {
            name: "app",
            devices: [
              { resource_name: "example.com/widget", device_ids: ["widget-1"], topology: { nodes: [{ ID: 0 }] } },
            ],
            cpu_ids: [],
            memory: [],
            dynamic_resources: [],
          },
        ],
      },
    ],
  });
});

test("CPU ids and memory come from the CPU and memory managers when they are wired", () => {
  const service = createPodResourcesService(providers([pod()], true));
  const app = service.list().pod_resources[0]!.containers[1]!;
  expect(app.cpu_ids).toEqual([2, 3]);
  expect(app.memory).toEqual([{ memory_type: "memory", size: 1 << 30, topology: { nodes: [{ ID: 0 }] } }]);
  expect(service.getAllocatableResources().cpu_ids).toEqual([1, 2, 3]);
});

test("Get of a pod the node does not run is refused in upstream's words", () => {
  const service = createPodResourcesService(providers([pod()]));
  expect(() => service.get({ pod_name: "nope", pod_namespace: "default" })).toThrow(
    "pod nope in namespace default not found",
  );
});

test("a gRPC client on the socket lists the pod's devices, gets it by name and reads the allocatable devices", async () => {
  const socket = join(mkdtempSync(join(tmpdir(), "podres-")), "pod-resources", "kubelet.sock");
  const stop = await servePodResources(socket, providers([pod()]));
  stops.push(stop);
  const client = await podResourcesClient(socket);
  stops.push(() => client.close());
  const list = await client.list();
  expect(list.pod_resources[0].containers[1].devices[0].device_ids).toEqual(["widget-1"]);
  expect((await client.get("gpu", "default")).pod_resources.name).toBe("gpu");
  // (.catch, not expect().rejects: under bun the latter left this call unanswered until its deadline)
  const refused = await client.get("nope", "default").catch((error: Error) => error);
  expect(refused.message).toBe("pod nope in namespace default not found");
  const allocatable = await client.getAllocatableResources();
  expect(allocatable.devices).toEqual([
    { resource_name: "example.com/widget", device_ids: ["widget-0"], topology: null },
    { resource_name: "example.com/widget", device_ids: ["widget-1"], topology: { nodes: [{ ID: 0 }] } },
  ]);
});
