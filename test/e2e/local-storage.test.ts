// Local ephemeral storage end to end, on Docker and on containerd: containers that really write past
// their ephemeral-storage limits are evicted with the Go kubelet's messages (a container's own limit,
// the pod's sum), a pod requesting more ephemeral-storage than the node has is rejected at admission,
// and crashLoopBackOff.maxContainerRestartPeriod caps the crash-loop back-off the kubelet reports.
import { expect } from "bun:test";
import { type ApiPod, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

interface PodStatus {
  phase?: string;
  reason?: string;
  message?: string;
}
const status = (pod: ApiPod) => pod.status as PodStatus;

describeOnRuntimes("local ephemeral storage", (services, rt) => {
  const pods = ["e2e-ls-writer", "e2e-ls-pod", "e2e-ls-huge"];
  const node = staticPodNode("ls", services, rt, pods);
  /** Writes 60 MB into the container's writable layer, then idles. */
  const idle = ["sleep", "3600"];
  /** A container that writes 60 MB into its writable layer, then idles, under an ephemeral-storage limit of 20Mi. */
  const writer = {
    name: "writer",
    image: services.busybox,
    command: ["sh", "-c", "busybox dd if=/dev/zero of=/big bs=1048576 count=60 && exec sleep 3600"],
    resources: { limits: { "ephemeral-storage": "20Mi" } },
  };

  test("writing 60 MB under an ephemeral-storage limit of 20Mi evicts the pod with the kubelet's message", async () => {
    // Two containers: the writer is over its own 20Mi while the pod stays within 20Mi + 1Gi.
    node.write("e2e-ls-writer", {
      terminationGracePeriodSeconds: 1,
      containers: [
        writer,
        { name: "idle", image: services.busybox, command: idle, resources: { limits: { "ephemeral-storage": "1Gi" } } },
      ],
    });
    // One container: the pod's sum (20Mi) is checked first, as upstream does.
    node.write("e2e-ls-pod", { terminationGracePeriodSeconds: 1, containers: [writer] });
    const kubelet = await node.start(["--eviction_hard", "", "--volume_stats_agg_period", "1s"]);
    // containerd's writable_layer figure lags the writes on a loaded machine (73 s once, beside seven other suites).
    const evicted = async (name: string) =>
      status(await kubelet.waitForPod(name, "evicted", (p) => status(p).reason === "Evicted", 150_000));
    expect(await evicted("e2e-ls-writer")).toMatchObject({
      phase: "Failed",
      reason: "Evicted",
      message: 'Container writer exceeded its local ephemeral storage limit "20Mi". ',
    });
    expect(await evicted("e2e-ls-pod")).toMatchObject({
      phase: "Failed",
      reason: "Evicted",
      message: "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ",
    });
    await kubelet.waitFor("the evicted pods' containers stopped", async () => {
      const containers = [...(await rt.podContainers("e2e-ls-writer")), ...(await rt.podContainers("e2e-ls-pod"))];
      return containers.every((c) => c.state !== "CONTAINER_RUNNING");
    });
    await kubelet.stop();
  }, 240_000);

  test("a pod requesting more ephemeral-storage than the node has is rejected at admission, and never started", async () => {
    node.write("e2e-ls-huge", {
      containers: [
        {
          name: "app",
          image: services.busybox,
          command: idle,
          resources: { requests: { "ephemeral-storage": "1000Ti" } },
        },
      ],
    });
    const kubelet = await node.start(["--eviction_hard", ""]);
    const rejected = status(
      await kubelet.waitForPod("e2e-ls-huge", "rejected", (p) => status(p).phase === "Failed", 60_000),
    );
    expect(rejected.reason).toBe("OutOfephemeral-storage");
    expect(rejected.message).toMatch(
      /^Pod was rejected: Node didn't have enough resource: ephemeral-storage, requested: 1099511627776000, used: \d+, capacity: \d+$/,
    );
    expect(await rt.podContainers("e2e-ls-huge")).toEqual([]);
    await kubelet.stop();
  }, 90_000);
});

describeOnRuntimes("crash-loop back-off cap", (services, rt) => {
  const node = staticPodNode("crashcap", services, rt, ["e2e-crash-cap"]);

  test("maxContainerRestartPeriod 2s caps the back-off the kubelet reports, where the default would reach 40s", async () => {
    node.write("e2e-crash-cap", {
      containers: [{ name: "app", image: services.busybox, command: ["sh", "-c", "exit 3"] }],
    });
    const kubelet = await node.start(["--eviction_hard", "", "--max_container_restart_period", "2s"]);
    // By the third restart the default back-off says 40s (10s, 20s, 40s); capped at 2s it stays "back-off 2s".
    const looping = await kubelet.waitForPod(
      "e2e-crash-cap",
      "three restarts",
      (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 3,
      90_000,
    );
    const waitingMessages = new Set<string>();
    await kubelet.waitFor("a CrashLoopBackOff message after the third restart", async () => {
      const waiting = (await kubelet.pod("e2e-crash-cap"))?.status?.containerStatuses?.[0]?.state?.waiting;
      if (waiting?.reason === "CrashLoopBackOff" && waiting.message) waitingMessages.add(waiting.message);
      return waitingMessages.size > 0;
    });
    expect(looping.status?.containerStatuses?.[0]?.restartCount).toBeGreaterThanOrEqual(3);
    for (const message of waitingMessages) expect(message).toStartWith("back-off 2s restarting failed container=app");
    expect(await rt.podContainers("e2e-crash-cap")).not.toEqual([]);
    await kubelet.stop();
  }, 120_000);
});
