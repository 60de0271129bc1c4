// kernelMemcgNotification end to end on this cgroup v1 host: with a memory.available threshold just below
// what is available, a pod filling a memory-backed emptyDir makes the kernel signal the crossing through
// the root memory cgroup's eventfd, and the kubelet evicts it on that signal (its log says so).
import { afterAll, expect } from "bun:test";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, removeDir, removePods, tempDir, writePodManifest } from "./harness.ts";

interface Summary {
  node: { memory: { availableBytes: number } };
}
interface PodItem {
  metadata: { name: string };
  status?: { phase?: string; reason?: string; message?: string };
}

describeWithServices("kernel memory threshold notification", (services) => {
  const manifests = tempDir("memcg-manifests");
  const rootDir = tempDir("memcg-root");
  let kubelet: Kubelet;
  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, "e2e-memcg-hog");
    removeDir(manifests);
    removeDir(rootDir);
  });
  const start = (...flags: string[]) =>
    startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--network_container_image",
      services.pause,
      ...flags,
    ]);

  test("the kernel's signal of memory.available crossing its threshold runs eviction, which evicts the pod", async () => {
    kubelet = await start("--eviction_hard", "");
    const summary = await waitFor("a summary", async () => {
      const response = await kubelet.api("/stats/summary");
      return response.ok ? ((await response.json()) as Summary) : undefined;
    });
    await kubelet.stop();
    // 300 MiB below what is available now: met only once the pod holds 1 GiB more (the machine is shared).
    const threshold = summary.node.memory.availableBytes - 300 * 2 ** 20;
    kubelet = await start(
      "--eviction_hard",
      `memory.available<${Math.round(threshold / 1024)}Ki`,
      "--kernel_memcg_notification",
    );
    writePodManifest(
      manifests,
      "e2e-memcg-hog",
      `  containers:
    - name: hog
      image: ${services.busybox}
      command: ["sh", "-c", "sleep 2; busybox dd if=/dev/zero of=/mem/blob bs=1048576 count=1024; exec sleep 3600"]
      volumeMounts: [{ name: mem, mountPath: /mem }]
  volumes: [{ name: mem, emptyDir: { medium: Memory, sizeLimit: 2Gi } }]
`,
    );
    await kubelet.waitFor(
      "the kernel's signal logged",
      () => kubelet.output.includes("the kernel signalled memory.available crossing"),
      90_000,
    );
    const evicted = await kubelet.waitFor(
      "the pod evicted",
      async () => {
        const pods = (await (await kubelet.api("/pods")).json()) as { items: PodItem[] };
        const s = pods.items.find((p) => p.metadata.name === "e2e-memcg-hog")?.status;
        return s?.reason === "Evicted" ? s : undefined;
      },
      60_000,
    );
    expect(evicted.message).toStartWith("The node was low on resource: memory.");
    expect(kubelet.output).not.toContain("no memory threshold notifications");
    await kubelet.stop();
  }, 240_000);
});
