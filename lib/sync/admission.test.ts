// Admission: the pod count, host-namespace sources, the order pods are admitted in, spec.nodeName.
import { describe, expect, test } from "bun:test";
import { admissionOrder, admitPod, boundToNode, rejectedStatus, type AdmissionPolicy } from "./admission.ts";
import { testPod } from "../testing/pods.ts";
import { silentLogger } from "../log.ts";
import { createResourceManagers } from "../node/cm/resource-managers.ts";
import { writeStandInSysfs } from "../testing/stand-in-sysfs.ts";
import { idleRuntime, testResourceManagerSettings } from "../testing/resource-manager-settings.ts";

const open: AdmissionPolicy = { maxPods: 110, hostNetworkSources: ["*"], hostPidSources: ["*"], hostIpcSources: ["*"] };

describe("admitPod", () => {
  test("admits a pod while fewer than maxPods are admitted and refuses the next with OutOfpods", () => {
    const pod = testPod("web");
    expect(admitPod(pod, 2, { ...open, maxPods: 3 })).toBeUndefined();
    expect(admitPod(pod, 3, { ...open, maxPods: 3 })).toEqual({
      reason: "OutOfpods",
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    });
  });

  for (const [field, flag, key, words] of [
    ["hostNetwork", "host_network_sources", "hostNetworkSources", "host networking"],
    ["hostPID", "host_pid_sources", "hostPidSources", "host PID"],
    ["hostIPC", "host_ipc_sources", "hostIpcSources", "host IPC"],
  ] as const) {
    test(`${field} from a source not in --${flag} is CapabilitiesForbidden; a listed source or * is admitted`, () => {
      const fromUrl = testPod("web", { [field]: true }, { source: "url" });
      const rejection = admitPod(fromUrl, 0, { ...open, [key]: ["file"] });
      expect(rejection?.reason).toBe("CapabilitiesForbidden");
      expect(rejection?.message).toBe(
        `pod with UID "${fromUrl.metadata.uid}" specified ${words}, but is disallowed: the url source is not in --${flag} (file)`,
      );
      expect(admitPod(fromUrl, 0, { ...open, [key]: ["file", "url"] })).toBeUndefined();
      expect(admitPod(fromUrl, 0, { ...open, [key]: ["*"] })).toBeUndefined();
      expect(admitPod(testPod("plain", {}, { source: "url" }), 0, { ...open, [key]: [] })).toBeUndefined();
    });
  }

  test("a forbidden host namespace is reported before a full node", () => {
    const pod = testPod("web", { hostNetwork: true }, { source: "http" });
    expect(admitPod(pod, 5, { ...open, maxPods: 5, hostNetworkSources: ["file"] })?.reason).toBe(
      "CapabilitiesForbidden",
    );
  });
});

describe("a node shutting down", () => {
  test("refuses every pod with NodeShutdown in the Go kubelet's words, and admits again once it is not", () => {
    let shuttingDown = true;
    const policy = { ...open, nodeShuttingDown: () => shuttingDown };
    expect(admitPod(testPod("web"), 0, policy)).toEqual({
      reason: "NodeShutdown",
      message: "Pod was rejected as the node is shutting down.",
    });
    expect(rejectedStatus(admitPod(testPod("web"), 0, policy)!, "10.0.0.1")).toMatchObject({
      phase: "Failed",
      reason: "NodeShutdown",
      message: "Pod was rejected: Pod was rejected as the node is shutting down.",
    });
    shuttingDown = false;
    expect(admitPod(testPod("web"), 0, policy)).toBeUndefined();
  });
});

describe("admissionOrder", () => {
  test("sorts by creationTimestamp, pods without one last, ties in arrival order", () => {
    const at = (name: string, time?: string) => {
      const pod = testPod(name);
      return time ? { ...pod, metadata: { ...pod.metadata, creationTimestamp: time } } : pod;
    };
    const order = admissionOrder([
      at("c"),
      at("b", "2026-01-02T00:00:00Z"),
      at("d"),
      at("a", "2026-01-01T00:00:00Z"),
      at("e", "2026-01-02T00:00:00Z"),
    ]);
    expect(order.map((p) => p.metadata.name)).toEqual(["a", "b", "e", "c", "d"]);
  });
});

describe("reports", () => {
  test("a rejected pod is Failed with the kubelet's reason and 'Pod was rejected:' message", () => {
    expect(rejectedStatus({ reason: "OutOfpods", message: "full" }, "10.0.0.1")).toMatchObject({
      phase: "Failed",
      reason: "OutOfpods",
      message: "Pod was rejected: full",
      hostIP: "10.0.0.1",
    });
  });

  test("boundToNode sets spec.nodeName to the node's name, overriding what the manifest said", () => {
    const pod = testPod("web", { nodeName: "elsewhere" });
    expect(boundToNode(pod, "node-1").spec.nodeName).toBe("node-1");
    expect(pod.spec.nodeName).toBe("elsewhere");
    const bound = boundToNode(pod, "node-1");
    expect(boundToNode(bound, "node-1")).toBe(bound);
  });
});

describe("what the node cannot or may not run", () => {
  const node = { name: "node-a", labels: { "kubernetes.io/os": "linux" } };
  const features = { appArmor: false, userNamespaces: false, seLinux: false };

  test("a pod for another OS is PodOSNotSupported; a nodeSelector mismatch is NodeAffinity", () => {
    expect(admitPod(testPod("win", { os: { name: "windows" } }), 0, { ...open, node })).toEqual({
      reason: "PodOSNotSupported",
      message: "Failed to admit pod as the OS field doesn't match node OS",
    });
    expect(admitPod(testPod("gpu", { nodeSelector: { gpu: "yes" } }), 0, { ...open, node })).toEqual({
      reason: "NodeAffinity",
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
    expect(
      admitPod(testPod("any", { nodeSelector: { "kubernetes.io/os": "linux" } }), 0, { ...open, node }),
    ).toBeUndefined();
  });

  test("AppArmor, hostUsers: false and seLinuxOptions are refused where unsupported, never dropped", () => {
    const apparmor = testPod("aa", { securityContext: { appArmorProfile: { type: "RuntimeDefault" } } });
    expect(admitPod(apparmor, 0, { ...open, features })?.reason).toBe("AppArmor");
    expect(admitPod(apparmor, 0, { ...open, features: { ...features, appArmor: true } })).toBeUndefined();
    const unconfined = testPod("aa", { securityContext: { appArmorProfile: { type: "Unconfined" } } });
    expect(admitPod(unconfined, 0, { ...open, features })).toBeUndefined();
    expect(admitPod(testPod("userns", { hostUsers: false }), 0, { ...open, features })?.reason).toBe(
      "UserNamespacesUnsupported",
    );
    expect(
      admitPod(testPod("se", { securityContext: { seLinuxOptions: { level: "s0:c1" } } }), 0, { ...open, features })
        ?.reason,
    ).toBe("SELinuxUnsupported");
    // supplementalGroupsPolicy is newer than the API types: the pods are built as a manifest would give them.
    const withPolicy = (name: string, policy: string) =>
      testPod(name, { securityContext: { supplementalGroupsPolicy: policy } as object });
    const strict = withPolicy("strict", "Strict");
    expect(admitPod(strict, 0, { ...open, features })).toEqual({
      reason: "SupplementalGroupsPolicyNotSupported",
      message: "SupplementalGroupsPolicy=Strict is not supported in this node",
    });
    expect(admitPod(withPolicy("merge", "Merge"), 0, { ...open, features })).toBeUndefined();
  });
});

test("a pod whose requests with overhead exceed what is left of allocatable is OutOfcpu / OutOfmemory", () => {
  const policy = { ...open, allocatable: { milliCpu: 2000, memoryBytes: 1024 } };
  const pod = testPod("big", {
    containers: [{ name: "app", image: "b", resources: { requests: { cpu: "1" } } }],
    overhead: { cpu: "500m" },
  });
  expect(admitPod(pod, 1, policy, { milliCpu: 1000, memoryBytes: 0 })).toEqual({
    reason: "OutOfcpu",
    message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
  });
  expect(admitPod(pod, 1, policy, { milliCpu: 0, memoryBytes: 0 })).toBeUndefined();
});

test("a pod the topology manager cannot align on the stand-in two-NUMA machine is rejected with TopologyAffinityError", () => {
  const managers = createResourceManagers(testResourceManagerSettings({ topologyManagerScope: "pod" }), {
    runtime: idleRuntime,
    log: silentLogger,
    sysRoot: writeStandInSysfs({ sockets: 2, coresPerSocket: 2, threadsPerCore: 2, numaNodes: 2 }),
  });
  const policy = { ...open, allocateResources: managers.admit };
  const app = (name: string, cpu: string) => ({
    name,
    image: "x",
    resources: { requests: { cpu, memory: "64Mi" }, limits: { cpu, memory: "64Mi" } },
  });
  // Scope pod: 2 + 3 CPUs together fit no single node of 4.
  const rejection = admitPod(testPod("wide", { containers: [app("a", "2"), app("b", "3")] }), 0, policy);
  expect(rejection).toEqual({
    reason: "TopologyAffinityError",
    message: "Resources cannot be allocated with Topology locality",
  });
  expect(rejectedStatus(rejection!, "127.0.0.1").message).toBe(
    "Pod was rejected: Resources cannot be allocated with Topology locality",
  );
  expect(admitPod(testPod("narrow", { containers: [app("a", "2"), app("b", "2")] }), 0, policy)).toBeUndefined();
});

describe("the resource allocator (device plugins)", () => {
  const refusal = {
    reason: "UnexpectedAdmissionError" as const,
    message: "Allocate failed due to no widgets, which is unexpected",
  };

  test("its refusal rejects the pod with its reason and message", () => {
    expect(admitPod(testPod("gpu"), 0, { ...open, allocateResources: () => refusal })).toEqual(refusal);
  });

  test("it is asked only once every other check passed, so a pod refused otherwise holds no devices", () => {
    const asked: string[] = [];
    const policy = {
      ...open,
      maxPods: 1,
      allocateResources: (pod: { metadata: { name: string } }) => void asked.push(pod.metadata.name),
    };
    expect(admitPod(testPod("late"), 1, policy)?.reason).toBe("OutOfpods");
    expect(admitPod(testPod("first"), 0, policy)).toBeUndefined();
    expect(asked).toEqual(["first"]);
  });
});

test("a pod requesting more ephemeral-storage than is left of allocatable is OutOfephemeral-storage, in the kubelet's words", () => {
  const Gi = 2 ** 30;
  const policy = { ...open, allocatable: { milliCpu: 2000, memoryBytes: Gi, ephemeralStorageBytes: 10 * Gi } };
  const pod = testPod("disk", {
    containers: [{ name: "app", image: "b", resources: { requests: { "ephemeral-storage": "8Gi" } } }],
  });
  expect(admitPod(pod, 1, policy, { milliCpu: 0, memoryBytes: 0, ephemeralStorageBytes: 3 * Gi })).toEqual({
    reason: "OutOfephemeral-storage",
    message: `Node didn't have enough resource: ephemeral-storage, requested: ${8 * Gi}, used: ${3 * Gi}, capacity: ${10 * Gi}`,
  });
  expect(admitPod(pod, 1, policy, { milliCpu: 0, memoryBytes: 0, ephemeralStorageBytes: 2 * Gi })).toBeUndefined();
  // Without localStorageCapacityIsolation the allocatable names no ephemeral-storage: nothing is checked.
  expect(
    admitPod(pod, 1, { ...open, allocatable: { milliCpu: 2000, memoryBytes: Gi } }, { milliCpu: 0, memoryBytes: 0 }),
  ).toBeUndefined();
});
