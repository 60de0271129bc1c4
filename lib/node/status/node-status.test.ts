// The Node record: identity, capacity, nodeInfo and conditions with their transition times.
import { expect, test } from "bun:test";
import {
  buildNode,
  nodeSignature,
  noPressure,
  readHostFacts,
  readinessFrom,
  runtimeCheck,
  type NodeInput,
} from "./node-status.ts";

const input = (overrides: Partial<NodeInput> = {}): NodeInput => ({
  name: "n1",
  hostIP: "10.0.0.1",
  port: 10250,
  kubeletVersion: "v0.1.0",
  maxPods: 110,
  allocatable: { milliCpu: 1500, memoryBytes: 3 * 1024 ** 3 },
  host: {
    hostname: "machine",
    cpus: 2,
    memoryBytes: 4 * 1024 ** 3,
    ephemeralStorageBytes: 100 * 1024 ** 3,
    kernelVersion: "6.1.0",
    osImage: "Debian GNU/Linux 12 (bookworm)",
    architecture: "amd64",
    machineID: "m",
    bootID: "b",
  },
  runtime: { runtimeName: "docker", runtimeVersion: "20.10.24", runtimeApiVersion: "1.41" },
  readiness: { ready: true, message: "" },
  pressure: noPressure.conditions(),
  now: "2026-01-01T00:00:00.000Z",
  ...overrides,
});

test("allocatable ephemeral-storage is what local storage isolation leaves of root_dir's filesystem", () => {
  const node = buildNode(
    input({ allocatable: { milliCpu: 2000, memoryBytes: 4 * 1024 ** 3, ephemeralStorageBytes: 90 * 1024 ** 3 } }),
  );
  expect(node.status!.capacity!["ephemeral-storage"]).toBe("104857600Ki");
  expect(node.status!.allocatable!["ephemeral-storage"]).toBe("94371840Ki");
});

test("a Node carries the well-known labels, capacity, nodeInfo, addresses and the kubelet's port", () => {
  const node = buildNode(input());
  expect(node.metadata!.labels).toEqual({
    "kubernetes.io/hostname": "n1",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
  });
  expect(node.status!.capacity).toEqual({
    cpu: "2",
    memory: "4194304Ki",
    pods: "110",
    "ephemeral-storage": "104857600Ki",
  });
  expect(node.status!.allocatable).toEqual({
    cpu: "1500m",
    memory: "3145728Ki",
    pods: "110",
    "ephemeral-storage": "104857600Ki",
  });
  expect(node.status!.nodeInfo).toMatchObject({
    containerRuntimeVersion: "docker://20.10.24",
    kubeletVersion: "v0.1.0",
  });
  expect(node.status!.addresses).toContainEqual({ type: "InternalIP", address: "10.0.0.1" });
  expect(node.status!.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
  expect(node.status!.conditions!.map((c) => `${c.type}=${c.status}:${c.reason}`)).toEqual([
    "MemoryPressure=False:KubeletHasSufficientMemory",
    "DiskPressure=False:KubeletHasNoDiskPressure",
    "PIDPressure=False:KubeletHasSufficientPID",
    "Ready=True:KubeletReady",
  ]);
});

test("Ready turns False with the reason, and lastTransitionTime moves only when a status changes", () => {
  const first = buildNode(input());
  const same = buildNode(input({ now: "2026-01-01T00:00:10.000Z", previous: first }));
  const ready = (n: typeof first) => n.status!.conditions!.find((c) => c.type === "Ready")!;
  expect(ready(same)).toMatchObject({
    lastHeartbeatTime: "2026-01-01T00:00:10.000Z",
    lastTransitionTime: "2026-01-01T00:00:00.000Z",
  });
  expect(nodeSignature(same)).toBe(nodeSignature(first));
  const down = buildNode(
    input({
      now: "2026-01-01T00:00:20.000Z",
      previous: same,
      readiness: { ready: false, message: "container runtime is down: connect ENOENT" },
      runtime: undefined,
    }),
  );
  expect(ready(down)).toMatchObject({
    status: "False",
    reason: "KubeletNotReady",
    message: "container runtime is down: connect ENOENT",
    lastTransitionTime: "2026-01-01T00:00:20.000Z",
  });
  expect(down.status!.conditions!.find((c) => c.type === "MemoryPressure")!.lastTransitionTime).toBe(
    "2026-01-01T00:00:00.000Z",
  );
  expect(nodeSignature(down)).not.toBe(nodeSignature(same));
});

test("the node is not Ready when Docker does not answer or the sync loop is stuck; waiting sources do not matter", () => {
  const check = (name: string, ok: boolean, message = "ok") => ({ name, ok, message });
  expect(readinessFrom([check("runtime", true), check("syncloop", true), check("sources", false, "waiting")])).toEqual({
    ready: true,
    message: "",
  });
  expect(
    readinessFrom([check("runtime", false, "connect ENOENT"), check("syncloop", false, "last sync 45s ago")]),
  ).toEqual({
    ready: false,
    message: "container runtime is down: connect ENOENT; sync loop is not healthy: last sync 45s ago",
  });
});

test("the runtime is ready with RuntimeReady and NetworkReady; a false one is the Ready condition's message, worded as the Go kubelet's", () => {
  const ready = (type: string, status: boolean, reason = "", message = "") => ({ type, status, reason, message });
  expect(runtimeCheck({ conditions: [ready("RuntimeReady", true), ready("NetworkReady", true)] })).toEqual({
    name: "runtime",
    ok: true,
    message: "ok",
  });
  const network = runtimeCheck({
    conditions: [
      ready("RuntimeReady", true),
      ready("NetworkReady", false, "NetworkPluginNotReady", "cni plugin not initialized"),
    ],
  });
  expect(network.ok).toBe(false);
  expect(readinessFrom([network]).message).toBe(
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized",
  );
  expect(readinessFrom([runtimeCheck({ conditions: [ready("NetworkReady", true)] })]).message).toBe(
    "container runtime not ready: RuntimeReady condition is missing",
  );
});

test("the machine's facts are read from the system", () => {
  const facts = readHostFacts("/");
  expect(facts.cpus).toBeGreaterThan(0);
  expect(facts.ephemeralStorageBytes).toBeGreaterThan(0);
  expect(facts.architecture).not.toBe("x64");
});

test("device plugin resources are in capacity and allocatable; an unhealthy device only in capacity", () => {
  const node = buildNode(
    input({ extended: { capacity: { "example.com/widget": "2" }, allocatable: { "example.com/widget": "1" } } }),
  );
  expect(node.status?.capacity?.["example.com/widget"]).toBe("2");
  expect(node.status?.allocatable?.["example.com/widget"]).toBe("1");
  expect(node.status?.capacity?.cpu).toBeDefined();
});
