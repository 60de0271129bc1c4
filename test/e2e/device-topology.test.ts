// The device manager as the topology manager's hint provider, end to end on each runtime of the matrix: with
// cpuManagerPolicy static and topologyManagerPolicy single-numa-node, a widget the test plugin reports on NUMA
// node 1 (this machine has only node 0) cannot be aligned with the pod's CPUs, so the pod is rejected with
// TopologyAffinityError, while a widget on node 0 runs.
import { afterAll, beforeAll, expect } from "bun:test";
import { join } from "node:path";
import { podResourcesClient } from "../../lib/testing/podresources-client.ts";
import { startTestDevicePlugin, type TestDevicePlugin } from "../../lib/testing/test-device-plugin.ts";
import { type Kubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

describeOnRuntimes("devices aligned by the topology manager", (services, rt) => {
  const node = staticPodNode("dtopo", services, rt, ["e2e-numa-far", "e2e-numa-near"]);
  let kubelet: Kubelet;
  const plugins: TestDevicePlugin[] = [];
  const pod = (resource: string) => ({
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "app",
        image: services.busybox,
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
        resources: {
          requests: { cpu: "1", memory: "32Mi" },
          limits: { cpu: "1", memory: "32Mi", [resource]: "1" },
        },
      },
    ],
  });

  beforeAll(async () => {
    kubelet = await node.start([
      "--cpu_manager_policy",
      "static",
      "--reserved_cpus",
      "0",
      "--topology_manager_policy",
      "single-numa-node",
    ]);
    const dir = join(node.rootDir, "device-plugins");
    for (const [resource, numa] of [
      ["example.com/far", 1],
      ["example.com/near", 0],
    ] as const) {
      const plugin = await startTestDevicePlugin({
        dir,
        resource,
        count: 1,
        file: "/etc/hostname",
        socket: `${resource.split("/")[1]}.sock`,
        numaNodes: [numa],
      });
      plugins.push(plugin);
    }
    // Written before the kubelet has the devices, a pod would be refused as OutOf<resource> instead.
    const client = await podResourcesClient(join(node.rootDir, "pod-resources", "kubelet.sock"));
    try {
      await kubelet.waitFor(
        "both widgets allocatable",
        async () => (await client.getAllocatableResources()).devices.length === 2,
        30_000,
      );
    } finally {
      client.close();
    }
  });
  afterAll(async () => {
    for (const plugin of plugins) await plugin.stop();
  });

  test("a pod whose widget is on a NUMA node its CPUs are not is rejected with TopologyAffinityError", async () => {
    node.write("e2e-numa-far", pod("example.com/far"));
    const rejected = await kubelet.waitForPod("e2e-numa-far", "rejected", (p) => p.status?.phase === "Failed", 30_000);
    expect(rejected.status).toMatchObject({
      reason: "TopologyAffinityError",
      message: "Pod was rejected: Resources cannot be allocated with Topology locality",
    });
  });

  test("a pod whose widget shares the CPUs' NUMA node runs", async () => {
    node.write("e2e-numa-near", pod("example.com/near"));
    await kubelet.waitFor("e2e-numa-near running", () => rt.running("e2e-numa-near", "app"), 60_000);
  });
});
