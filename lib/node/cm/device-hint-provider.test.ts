import { afterEach, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod, V1Container } from "../../api/types.ts";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testPod } from "../../testing/pods.ts";
import { idleRuntime, testResourceManagerSettings } from "../../testing/resource-manager-settings.ts";
import { writeStandInSysfs } from "../../testing/stand-in-sysfs.ts";
import { startTestDevicePlugin } from "../../testing/test-device-plugin.ts";
import { connectPlugin } from "./devicemanager/endpoint.ts";
import { createDeviceManager } from "./devicemanager/manager.ts";
import { serveRegistration } from "./devicemanager/registration-server.ts";
import { createResourceManagers, type ResourceDevices, type ResourceManagerSettings } from "./resource-managers.ts";

const RESOURCE = "example.com/widget";
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

// Two NUMA nodes of 4 CPUs each (node 0: 0,1,4,5; node 1: 2,3,6,7).
const twoNuma = () => writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 });
const app = (cpu: string, widgets: number): V1Container => ({
  name: "app",
  image: "x",
  resources: {
    requests: { cpu, memory: "64Mi" },
    limits: { cpu, memory: "64Mi", ...(widgets ? { [RESOURCE]: String(widgets) } : {}) },
  },
});

/** A device manager served in a fresh directory, the test plugin's devices on `numa` registered with it. */
async function devicesOn(numa: number[], activePods: () => Pod[]) {
  const dir = mkdtempSync(join(tmpdir(), "cm-glue-"));
  const devices = createDeviceManager(
    { dir, clock: new FakeClock(), log: silentLogger },
    { connect: connectPlugin, serve: serveRegistration },
  );
  await devices.start({ activePods });
  stops.push(() => devices.stop());
  const plugin = await startTestDevicePlugin({
    dir,
    resource: RESOURCE,
    count: numa.length,
    file: "/etc/hostname",
    numaNodes: numa,
  });
  stops.push(() => plugin.stop());
  for (let i = 0; i < 500 && devices.capacity().allocatable[RESOURCE] !== String(numa.length); i++)
    await new Promise((r) => setTimeout(r, 10));
  return devices;
}

/** The resource managers on the stand-in two-NUMA machine with `devices` as a hint provider. */
const managersWith = (devices: ResourceDevices, settings: ResourceManagerSettings) =>
  createResourceManagers(settings, { runtime: idleRuntime, log: silentLogger, sysRoot: twoNuma(), devices });

test("single-numa-node rejects a pod whose devices are on NUMA node 1 and whose CPUs only node 0 has free", async () => {
  const devices = await devicesOn([1], () => []);
  // CPU 2 reserved: node 1 has 3 CPUs left, so 4 exclusive CPUs fit node 0 only.
  const managers = managersWith(devices, testResourceManagerSettings({ reservedCpus: "2" }));
  expect(managers.admit(testPod("apart", { containers: [app("4", 1)] }))).toEqual({
    reason: "TopologyAffinityError",
    message: "Resources cannot be allocated with Topology locality",
  });
});

test("a pod refused by the topology manager lets go of the devices it was holding", async () => {
  const refused = testPod("refused", { containers: [{ ...app("1", 1), name: "first" }, app("4", 0)] });
  const next = testPod("next", { containers: [app("1", 1)] });
  // Both listed as active: only the refusal itself may free the device, not the pod's absence.
  const devices = await devicesOn([1], () => [refused, next]);
  // CPUs 0 and 2 reserved: each node has 3 left.
  const managers = managersWith(devices, testResourceManagerSettings({ reservedCpus: "0,2" }));
  // "first" is given the device and a node-1 CPU; "app" then needs 4 CPUs on one node and none has them.
  expect(managers.admit(refused)?.reason).toBe("TopologyAffinityError");
  expect(managers.admit(next)).toBeUndefined();
});

test("the device picked at container start is on the NUMA node the topology manager decided", async () => {
  const pod = testPod("aligned", { containers: [app("4", 1)] });
  const devices = await devicesOn([0, 1], () => [pod]);
  // CPU 0 reserved: 4 exclusive CPUs fit node 1 only, so the device must be widget-1.
  const managers = managersWith(devices, testResourceManagerSettings());
  expect(managers.admit(pod)).toBeUndefined();
  expect(managers.cpusets(pod.metadata.uid, "app")).toEqual({ cpus: "2-3,6-7" });
  await devices.runContainerOptions(pod, pod.spec.containers[0]!);
  expect(devices.containerDevices(pod.metadata.uid, "app")).toEqual([
    { resource: RESOURCE, id: "widget-1", numaNodes: [1] },
  ]);
});

test("a pod short of devices is refused before the CPU manager gives it any CPU", async () => {
  const devices = await devicesOn([1], () => []);
  // Topology policy none: no hint refuses it, so the providers' allocation order decides.
  const managers = managersWith(devices, testResourceManagerSettings({ topologyManagerPolicy: "none" }));
  const greedy = testPod("greedy", { containers: [app("2", 2)] });
  expect(managers.admit(greedy)).toEqual({
    reason: "UnexpectedAdmissionError",
    message:
      "Allocate failed due to requested number of devices unavailable for example.com/widget. Requested: 2, Available: 1, which is unexpected",
  });
  expect(managers.cpuManager.state?.cpuSet(greedy.metadata.uid, "app")).toBeUndefined();
});
