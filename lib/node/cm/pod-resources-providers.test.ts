import { expect, test } from "bun:test";
import type { V1Container } from "../../api/types.ts";
import { silentLogger } from "../../log.ts";
import { testPod } from "../../testing/pods.ts";
import { idleRuntime, testResourceManagerSettings } from "../../testing/resource-manager-settings.ts";
import { writeStandInSysfs } from "../../testing/stand-in-sysfs.ts";
import { createPodResourcesService } from "../podresources/podresources-server.ts";
import { createResourceManagers } from "./resource-managers.ts";

const twoNuma = () => writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 });
const container = (name: string, cpu: string): V1Container => ({
  name,
  image: "x",
  resources: { requests: { cpu, memory: "64Mi" }, limits: { cpu, memory: "64Mi" } },
});
/** Static CPU and memory managers on the stand-in, 100Mi of node 0 reserved. */
const staticManagers = () =>
  createResourceManagers(
    testResourceManagerSettings({
      memoryManagerPolicy: "Static",
      reservedMemory: [{ numaNode: 0, limits: { memory: "100Mi" } }],
      evictionHard: { "memory.available": "100Mi" },
    }),
    { runtime: idleRuntime, log: silentLogger, sysRoot: twoNuma() },
  );
const noDevices = { updateAllocatedDevices() {}, containerDevices: () => [], allocatableDevices: () => [] };

test("the pod resources List shows a Guaranteed container's exclusive CPUs and memory, and none for a shared one", () => {
  const managers = staticManagers();
  const pod = testPod("pinned", { containers: [container("app", "2"), container("half", "500m")] });
  expect(managers.admit(pod)).toBeUndefined();
  const service = createPodResourcesService({ activePods: () => [pod], devices: noDevices, ...managers.podResources });
  const [app, half] = service.list().pod_resources[0]!.containers;
  expect(app!.cpu_ids).toEqual([1, 5]);
  expect(app!.memory).toEqual([{ memory_type: "memory", size: 64 * 1024 ** 2, topology: { nodes: [{ ID: 0 }] } }]);
  expect(half!.cpu_ids).toEqual([]);
});

test("GetAllocatableResources lists every CPU but the reserved ones, and each NUMA node's allocatable memory", () => {
  const managers = staticManagers();
  const service = createPodResourcesService({ activePods: () => [], devices: noDevices, ...managers.podResources });
  const { cpu_ids, memory } = service.getAllocatableResources();
  expect(cpu_ids).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(memory).toEqual([
    { memory_type: "memory", size: 4 * 1024 ** 3 - 100 * 1024 ** 2, topology: { nodes: [{ ID: 0 }] } },
    { memory_type: "memory", size: 4 * 1024 ** 3, topology: { nodes: [{ ID: 1 }] } },
  ]);
});
