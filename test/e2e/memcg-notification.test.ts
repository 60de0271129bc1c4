// kernelMemcgNotification end to end on this cgroup v1 host: with a memory.available threshold just below
// what is available, a pod filling a memory-backed emptyDir makes the kernel signal the crossing through
// the root memory cgroup's eventfd, and the kubelet evicts it on that signal (its log says so).
import { expect } from "bun:test";
import { type ApiPod, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

interface Summary {
  node: { memory: { availableBytes: number } };
}

describeOnRuntimes("kernel memory threshold notification", (services, rt) => {
  const node = staticPodNode("memcg", services, rt, ["e2e-memcg-hog"]);

  test("the kernel's signal of memory.available crossing its threshold runs eviction, which evicts the pod", async () => {
    let kubelet = await node.start(["--eviction_hard", ""]);
    const summary = await kubelet.waitFor("a summary", async () => {
      const response = await kubelet.api("/stats/summary");
      return response.ok ? ((await response.json()) as Summary) : undefined;
    });
    await kubelet.stop();
    // 300 MiB below what is available now: met only once the pod holds 1 GiB more (the machine is shared).
    const threshold = summary.node.memory.availableBytes - 300 * 2 ** 20;
    kubelet = await node.start([
      "--eviction_hard",
      `memory.available<${Math.round(threshold / 1024)}Ki`,
      "--kernel_memcg_notification",
    ]);
    node.write("e2e-memcg-hog", {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "hog",
          image: services.busybox,
          command: ["sh", "-c", "busybox dd if=/dev/zero of=/mem/blob bs=1048576 count=1024; exec sleep 3600"],
          volumeMounts: [{ name: "mem", mountPath: "/mem" }],
        },
      ],
      volumes: [{ name: "mem", emptyDir: { medium: "Memory", sizeLimit: "2Gi" } }],
    });
    await kubelet.waitFor(
      "the kernel's signal logged",
      () => kubelet.output.includes("the kernel signalled memory.available crossing"),
      90_000,
    );
    const status = (p: ApiPod) => p.status as { reason?: string; message?: string };
    const evicted = await kubelet.waitForPod("e2e-memcg-hog", "evicted", (p) => status(p).reason === "Evicted", 60_000);
    expect(status(evicted).message).toStartWith("The node was low on resource: memory.");
    expect(kubelet.output).not.toContain("no memory threshold notifications");
    await kubelet.stop();
  }, 240_000);
});
