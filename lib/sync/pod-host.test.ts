// A pod's host setup: its context, the node's capacity asked until answered, volumes set up again only when changed.
import { describe, expect, test } from "bun:test";
import { noConfigs } from "../api/config-objects.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testPod } from "../testing/pods.ts";
import { createPodHost } from "./pod-host.ts";

const options = { hostname: "node", hostIP: "10.0.0.1", networkMode: "none", allowPrivileged: false };

/** A pod host whose volumes hold `content` (their version) and count their setups. */
function harness() {
  const runtime = new FakeRuntime(new FakeClock());
  const volumes = { content: "v1", setups: 0 };
  const host = createPodHost(options, {
    runtime,
    volumes: {
      version: () => volumes.content,
      setup: async () => (volumes.setups++, new Map([["config", { hostPath: `/pods/${volumes.content}` }]])),
    },
    configs: noConfigs,
    cgroups: { ensurePod: async () => "/kubepods/pod" },
    dns: { resolvConfFor: async () => "/run/resolv.conf", clusterDomain: "cluster.local" },
  });
  return { runtime, volumes, host };
}

describe("pod host", () => {
  test("a pod's context carries its volumes, pod cgroup, resolv.conf and the node's capacity", async () => {
    const h = harness();
    const ctx = await h.host.prepare(testPod("web"));
    expect(ctx).toMatchObject({
      nodeName: "node",
      hostIP: "10.0.0.1",
      podIP: "",
      cgroupParent: "/kubepods/pod",
      resolvConfPath: "/run/resolv.conf",
      clusterDomain: "cluster.local",
      node: { cpus: 2 },
    });
    expect([...ctx.volumePaths.keys()]).toEqual(["config"]);
  });

  test("the node's capacity is asked of the runtime until it answers, then never again", async () => {
    const h = harness();
    h.runtime.failNext("machineInfo", new Error("Docker is restarting"));
    await expect(h.host.nodeInfo()).rejects.toThrow("cannot read the node's capacity: Docker is restarting");
    await h.host.nodeInfo();
    await h.host.nodeInfo();
    expect(h.runtime.calls.filter((c) => c.method === "machineInfo")).toHaveLength(2);
  });

  test("volumes are set up again only when what they hold changed, and afresh after the pod is forgotten", async () => {
    const h = harness();
    const pod = testPod("web");
    await h.host.mountVolumes(pod);
    await h.host.mountVolumes(pod);
    expect(h.volumes.setups).toBe(1);
    h.volumes.content = "v2";
    expect((await h.host.mountVolumes(pod)).paths.get("config")).toEqual({ hostPath: "/pods/v2" });
    h.host.forget(pod.metadata.uid);
    await h.host.mountVolumes(pod);
    expect(h.volumes.setups).toBe(3);
  });
});
