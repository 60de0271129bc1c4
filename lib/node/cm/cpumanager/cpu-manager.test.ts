import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod, V1Container } from "../../../api/types.ts";
import { LABEL, type ContainerSummary, type LinuxResources } from "../../../container/runtime.ts";
import { silentLogger } from "../../../log.ts";
import { testPod } from "../../../testing/pods.ts";
import { writeStandInSysfs } from "../../../testing/stand-in-sysfs.ts";
import { parseCPUSet } from "../cpuset.ts";
import { readTopology } from "../topology.ts";
import { createTopologyManager } from "../topologymanager/topology-manager.ts";
import { createCPUManager } from "./cpu-manager.ts";

const container = (name: string, cpu?: string, memory = "64Mi"): V1Container => ({
  name,
  image: "local/busybox:latest",
  ...(cpu ? { resources: { requests: { cpu, memory }, limits: { cpu, memory } } } : {}),
});
const guaranteed = (name: string, cpu: string, extra: Partial<Pod["spec"]> = {}) =>
  testPod(name, { containers: [container("app", cpu)], ...extra });

/** A runtime with running containers (pod UID, container name) that records each cpuset written. */
function recordingRuntime() {
  const running: ContainerSummary[] = [];
  const updates: Array<[string, LinuxResources]> = [];
  return {
    running,
    updates,
    run(pod: Pod, name: string) {
      running.push({
        id: `${pod.metadata.name}-${name}`,
        name,
        podSandboxId: "s",
        labels: { [LABEL.podUid]: pod.metadata.uid, [LABEL.containerName]: name },
        image: "",
        imageId: "",
        state: "CONTAINER_RUNNING",
        createdAt: 0,
      });
    },
    listContainers: async () => running,
    updateContainerResources: async (id: string, r: LinuxResources) => void updates.push([id, r]),
  };
}

function setUp(
  shape = { sockets: 1, coresPerSocket: 4, threadsPerCore: 2, numaNodes: 1 },
  options: {
    policyOptions?: Record<string, string>;
    reserved?: string;
    stateDir?: string;
    topologyPolicy?: string;
  } = {},
) {
  const topology = readTopology(writeStandInSysfs(shape));
  const nodes = [...new Set([...topology.details.values()].map((i) => i.numaNodeID))];
  const topologyManager = createTopologyManager({
    policy: options.topologyPolicy ?? "none",
    scope: "container",
    policyOptions: {},
    numa: { nodes, distances: new Map() },
  });
  const runtime = recordingRuntime();
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), "cpumgr-"));
  const manager = createCPUManager(
    {
      policy: "static",
      policyOptions: options.policyOptions ?? {},
      reservedSystemCPUs: options.reserved ?? "0",
      reservedMilliCpu: 0,
      stateDir,
      topologyPolicy: options.topologyPolicy ?? "none",
    },
    { topology, affinity: topologyManager, runtime, log: silentLogger },
  );
  topologyManager.addHintProvider(manager);
  return { manager, topologyManager, runtime, stateDir };
}

test("a Guaranteed container with an integer CPU request gets a whole core of its own, off the shared pool", () => {
  const { manager, topologyManager } = setUp();
  const pod = guaranteed("pinned", "2");
  expect(topologyManager.admit(pod)).toBeUndefined();
  // CPU 0 is reserved, so its core {0,4} stays shared: the next free whole core is {1,5}.
  expect(manager.cpusetFor(pod.metadata.uid, "app")).toBe("1,5");
  expect(manager.state!.defaultCPUSet().toString()).toBe("0,2-4,6-7");
});

test("fractional, Burstable and BestEffort containers run on the shared pool", () => {
  const { manager, topologyManager } = setUp();
  const pinned = guaranteed("pinned", "1");
  topologyManager.admit(pinned);
  const fractional = guaranteed("fractional", "1500m");
  const besteffort = testPod("besteffort");
  for (const pod of [fractional, besteffort]) {
    expect(topologyManager.admit(pod)).toBeUndefined();
    expect(manager.cpusetFor(pod.metadata.uid, "app")).toBe(manager.state!.defaultCPUSet().toString());
  }
  expect(manager.cpusetFor(pinned.metadata.uid, "app")).toBe("4");
});

test("full-pcpus-only refuses an odd request on two threads per core with SMTAlignmentError", () => {
  const { topologyManager } = setUp(undefined, { policyOptions: { "full-pcpus-only": "true" } });
  expect(topologyManager.admit(guaranteed("odd", "1"))).toEqual({
    reason: "SMTAlignmentError",
    message: "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2",
  });
  expect(topologyManager.admit(guaranteed("even", "2"))).toBeUndefined();
});

test("a request larger than the free CPUs is an UnexpectedAdmissionError in upstream's words", () => {
  const { topologyManager } = setUp();
  expect(topologyManager.admit(guaranteed("huge", "8"))).toEqual({
    reason: "UnexpectedAdmissionError",
    message:
      "Allocate failed due to not enough cpus available to satisfy request: requested=8, available=7, which is unexpected",
  });
});

test("an init container's CPUs are reused by the app container; a native sidecar's are not", () => {
  const { manager, topologyManager } = setUp();
  const pod = testPod("init", {
    initContainers: [container("setup", "2"), { ...container("sidecar", "1"), restartPolicy: "Always" }],
    containers: [container("app", "2")],
  });
  expect(topologyManager.admit(pod)).toBeUndefined();
  const uid = pod.metadata.uid;
  const [setup, sidecar, app] = ["setup", "sidecar", "app"].map((n) => manager.cpusetFor(uid, n));
  expect(app).toBe(setup);
  expect(sidecar).not.toBe(app);
  expect(manager.state!.defaultCPUSet().size).toBe(8 - 3);
  // A sidecar's core is never handed to the app container after it.
  const withSidecar = testPod("sidecar", {
    initContainers: [{ ...container("proxy", "2"), restartPolicy: "Always" }],
    containers: [container("app", "2")],
  });
  expect(topologyManager.admit(withSidecar)).toBeUndefined();
  const proxy = parseCPUSet(manager.cpusetFor(withSidecar.metadata.uid, "proxy")!);
  expect(proxy.intersection(parseCPUSet(manager.cpusetFor(withSidecar.metadata.uid, "app")!)).size).toBe(0);
});

test("the reconcile pass releases a deleted pod's CPUs and writes the grown shared pool into the others in place", async () => {
  const { manager, topologyManager, runtime } = setUp({
    sockets: 1,
    coresPerSocket: 2,
    threadsPerCore: 1,
    numaNodes: 1,
  });
  const pinned = guaranteed("pinned", "1");
  const shared = testPod("shared");
  topologyManager.admit(pinned);
  topologyManager.admit(shared);
  runtime.run(pinned, "app");
  runtime.run(shared, "app");
  await manager.reconcile([pinned, shared]);
  expect(runtime.updates.map(([id, r]) => [id, r.cpuset_cpus])).toEqual([
    ["pinned-app", "1"],
    ["shared-app", "0"],
  ]);
  // Nothing changed: nothing is written again.
  await manager.reconcile([pinned, shared]);
  expect(runtime.updates.length).toBe(2);
  runtime.running.splice(0, 1);
  await manager.reconcile([shared]);
  expect(manager.state!.defaultCPUSet().toString()).toBe("0-1");
  expect(runtime.updates.at(-1)).toEqual([
    "shared-app",
    { cpu_period: 0, cpu_quota: 0, cpu_shares: 0, memory_limit_in_bytes: 0, cpuset_cpus: "0-1" },
  ]);
});

test("assignments survive a restart through cpu_manager_state; a changed policy is refused", () => {
  const first = setUp({ sockets: 1, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 1 });
  const pod = guaranteed("pinned", "1");
  first.topologyManager.admit(pod);
  const again = setUp({ sockets: 1, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 1 }, { stateDir: first.stateDir });
  expect(again.manager.cpusetFor(pod.metadata.uid, "app")).toBe("1");
  const file = JSON.parse(readFileSync(join(first.stateDir, "cpu_manager_state"), "utf8"));
  expect(file).toMatchObject({
    policyName: "static",
    defaultCpuSet: "0",
    entries: { [pod.metadata.uid]: { app: "1" } },
  });
  const topology = readTopology(writeStandInSysfs({ sockets: 1, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 1 }));
  expect(() =>
    createCPUManager(
      {
        policy: "none",
        policyOptions: {},
        reservedSystemCPUs: "",
        reservedMilliCpu: 0,
        stateDir: first.stateDir,
        topologyPolicy: "none",
      },
      { topology, affinity: again.topologyManager, runtime: again.runtime, log: silentLogger },
    ),
  ).toThrow('configured policy "none" differs from state checkpoint policy "static"');
});

test("the static policy needs reserved CPUs, and reservedSystemCPUs must be CPUs of this machine", () => {
  expect(() => setUp(undefined, { reserved: "" })).toThrow(
    "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero",
  );
  expect(() => setUp(undefined, { reserved: "9" })).toThrow('reserved CPUs "9" are not all online CPUs ("0-7")');
});

test("align-by-socket is refused with single-numa-node and on more sockets than NUMA nodes", () => {
  expect(() =>
    setUp(undefined, { policyOptions: { "align-by-socket": "true" }, topologyPolicy: "single-numa-node" }),
  ).toThrow("Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option");
  expect(() =>
    setUp(
      { sockets: 2, coresPerSocket: 2, threadsPerCore: 1, numaNodes: 1 },
      { policyOptions: { "align-by-socket": "true" } },
    ),
  ).toThrow("Align by socket is not compatible with hardware where number of sockets are more than number of NUMA");
  expect(() => setUp(undefined, { policyOptions: { "strict-cpu-reservation": "true" } })).toThrow(
    'unknown CPU Manager Policy option: "strict-cpu-reservation"',
  );
});

test("CPU hints prefer the fewest NUMA nodes that can hold the request", () => {
  const { manager } = setUp({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 });
  const show = (pod: Pod) =>
    manager
      .getTopologyHints(pod, pod.spec.containers[0]!)
      ?.cpu?.map((h) => `${h.numaNodeAffinity}${h.preferred ? "+" : "-"}`);
  // CPU 0 reserved: node 0 has 3 free CPUs, node 1 has 4.
  expect(show(guaranteed("two", "2"))).toEqual(["0+", "1+", "01-"]);
  expect(show(guaranteed("four", "4"))).toEqual(["1+", "01-"]);
  expect(show(guaranteed("six", "6"))).toEqual(["01+"]);
  expect(manager.getTopologyHints(testPod("be"), testPod("be").spec.containers[0]!)).toBeUndefined();
});
