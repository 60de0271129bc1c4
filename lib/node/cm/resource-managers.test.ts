import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { V1Container } from "../../api/types.ts";
import { silentLogger } from "../../log.ts";
import { testPod } from "../../testing/pods.ts";
import { idleRuntime, testResourceManagerSettings } from "../../testing/resource-manager-settings.ts";
import { writeStandInSysfs } from "../../testing/stand-in-sysfs.ts";
import { createResourceManagers, resourceManagersWanted, withReservedSystemCPUs } from "./resource-managers.ts";

const settings = testResourceManagerSettings;
const runtime = idleRuntime;
const cpus = (n: string): V1Container => ({
  name: "app",
  image: "x",
  resources: { requests: { cpu: n, memory: "64Mi" }, limits: { cpu: n, memory: "64Mi" } },
});
// Two sockets, two NUMA nodes of 4 CPUs each (node 0: 0,1,4,5; node 1: 2,3,6,7).
const twoNuma = () => writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 });

test("on two NUMA nodes, single-numa-node admits what one node holds and pins it there, with its cpusets", () => {
  const managers = createResourceManagers(settings(), { runtime, log: silentLogger, sysRoot: twoNuma() });
  const pod = testPod("fits", { containers: [cpus("4")] });
  expect(managers.admit(pod)).toBeUndefined();
  expect(managers.cpusets(pod.metadata.uid, "app")).toEqual({ cpus: "2-3,6-7" });
});

test("on two NUMA nodes, single-numa-node rejects CPUs no one node has free with TopologyAffinityError", () => {
  const managers = createResourceManagers(settings(), { runtime, log: silentLogger, sysRoot: twoNuma() });
  expect(managers.admit(testPod("wide", { containers: [cpus("5")] }))).toEqual({
    reason: "TopologyAffinityError",
    message: "Resources cannot be allocated with Topology locality",
  });
});

test("the memory manager's nodes reach the container as cpuset_mems beside its CPUs", () => {
  const managers = createResourceManagers(
    settings({
      memoryManagerPolicy: "Static",
      reservedMemory: [{ numaNode: 1, limits: { memory: "100Mi" } }],
      evictionHard: { "memory.available": "100Mi" },
    }),
    { runtime, log: silentLogger, sysRoot: twoNuma() },
  );
  const pod = testPod("both", { containers: [cpus("2")] });
  expect(managers.admit(pod)).toBeUndefined();
  const { cpus: set, mems } = managers.cpusets(pod.metadata.uid, "app");
  expect([set, mems]).toEqual(["1,5", "0"]);
});

test("a start error names the manager, as the container manager's start does", () => {
  expect(() =>
    createResourceManagers(settings({ cpuManagerPolicy: "dynamic" }), {
      runtime,
      log: silentLogger,
      sysRoot: twoNuma(),
    }),
  ).toThrow('start cpu manager error: unknown policy: "dynamic"');
});

test("the managers are made when a policy is set or a state file of an earlier run exists", () => {
  const quiet = settings({ cpuManagerPolicy: "none", topologyManagerPolicy: "none" });
  expect(resourceManagersWanted(quiet)).toBe(false);
  expect(resourceManagersWanted(settings())).toBe(true);
  createResourceManagers(settings({ rootDir: quiet.rootDir }), { runtime, log: silentLogger, sysRoot: twoNuma() });
  expect(existsSync(join(quiet.rootDir, "cpu_manager_state"))).toBe(true);
  expect(resourceManagersWanted(quiet)).toBe(true);
});

test("reservedSystemCPUs replaces kube and system reserved cpu by its CPU count", () => {
  expect(
    withReservedSystemCPUs({
      kubeReserved: { cpu: "500m", memory: "1Gi" },
      systemReserved: { cpu: "1" },
      reservedCpus: "0,2",
    }),
  ).toEqual({ kube: { memory: "1Gi" }, system: { cpu: "2" } });
});
