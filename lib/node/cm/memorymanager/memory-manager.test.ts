import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Container } from "../../../api/types.ts";
import { silentLogger } from "../../../log.ts";
import { testPod } from "../../../testing/pods.ts";
import { writeStandInSysfs } from "../../../testing/stand-in-sysfs.ts";
import { readTopology } from "../topology.ts";
import { createTopologyManager } from "../topologymanager/topology-manager.ts";
import { createMemoryManager } from "./memory-manager.ts";

const GiB = 1024 ** 3;
const guaranteed = (name: string, memory: string) =>
  testPod(name, {
    containers: [
      {
        name: "app",
        image: "x",
        resources: { requests: { cpu: "100m", memory }, limits: { cpu: "100m", memory } },
      } as V1Container,
    ],
  });

function setUp(policy = "single-numa-node", stateDir = mkdtempSync(join(tmpdir(), "memmgr-"))) {
  // Two NUMA nodes of 4 GiB each, 1 GiB reserved on node 0.
  const topology = readTopology(writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 2 }));
  const topologyManager = createTopologyManager({
    policy,
    scope: "container",
    policyOptions: {},
    numa: { nodes: [0, 1], distances: new Map() },
  });
  const manager = createMemoryManager(
    {
      policy: "Static",
      reservedMemory: [{ numaNode: 0, limits: { memory: "1Gi" } }],
      nodeAllocatableReservation: GiB,
      stateDir,
    },
    { topology, affinity: topologyManager, log: silentLogger },
  );
  topologyManager.addHintProvider(manager);
  return { manager, topologyManager, stateDir };
}

test("a Guaranteed container's memory comes from one NUMA node, named in its cpuset_mems", () => {
  const { manager, topologyManager } = setUp();
  const pod = guaranteed("small", "2Gi");
  expect(topologyManager.admit(pod)).toBeUndefined();
  expect(manager.memoryNodesFor(pod.metadata.uid, "app")).toBe("0");
  expect(manager.state.machineState()[0]!.memoryMap.memory).toMatchObject({
    allocatable: 3 * GiB,
    reserved: 2 * GiB,
    free: GiB,
  });
});

test("memory no single node holds is rejected with TopologyAffinityError under single-numa-node", () => {
  const { topologyManager } = setUp();
  expect(topologyManager.admit(guaranteed("big", "5Gi"))).toEqual({
    reason: "TopologyAffinityError",
    message: "Resources cannot be allocated with Topology locality",
  });
});

test("best-effort spreads memory over both nodes when one cannot hold it", () => {
  const { manager, topologyManager } = setUp("best-effort");
  const pod = guaranteed("big", "5Gi");
  expect(topologyManager.admit(pod)).toBeUndefined();
  expect(manager.memoryNodesFor(pod.metadata.uid, "app")).toBe("0,1");
  // Nodes grouped for that allocation are no longer offered one at a time.
  const next = guaranteed("next", "1Gi");
  const hints = manager
    .getTopologyHints(next, next.spec.containers[0]!)
    ?.memory?.map((h) => h.numaNodeAffinity?.toString());
  expect(hints).toEqual(["01"]);
});

test("a removed pod's memory returns to its node, and the state survives a restart", () => {
  const { manager, topologyManager, stateDir } = setUp();
  const pod = guaranteed("small", "2Gi");
  topologyManager.admit(pod);
  expect(setUp("single-numa-node", stateDir).manager.memoryNodesFor(pod.metadata.uid, "app")).toBe("0");
  manager.removeStaleState([]);
  expect(manager.state.machineState()[0]!.memoryMap.memory!.free).toBe(3 * GiB);
});

test("reservedMemory must add up to node allocatable's reservation, as upstream checks", () => {
  const topology = readTopology(writeStandInSysfs({ sockets: 1, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 1 }));
  const affinity = { getAffinity: () => ({ preferred: false }) };
  const stateDir = mkdtempSync(join(tmpdir(), "memmgr-"));
  expect(() =>
    createMemoryManager(
      {
        policy: "Static",
        reservedMemory: [{ numaNode: 0, limits: { memory: "100Mi" } }],
        nodeAllocatableReservation: 200 * 1024 ** 2,
        stateDir,
      },
      { topology, affinity, log: silentLogger },
    ),
  ).toThrow(
    'the total amount "104857600" of type "memory" is not equal to the value "209715200" determined by Node Allocatable feature',
  );
  expect(() =>
    createMemoryManager(
      { policy: "Static", reservedMemory: [], nodeAllocatableReservation: 0, stateDir },
      { topology, affinity, log: silentLogger },
    ),
  ).toThrow("[memorymanager] you should specify the system reserved memory");
});
