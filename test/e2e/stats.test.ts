// /stats/summary end to end: the resource analyzer's node filesystems, image filesystem, memory
// working set, a pod's emptyDir usage (its hostPath not counted) and a container's rootfs and logs, on
// each runtime of the matrix.
import { afterAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Kubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

interface Fs {
  usedBytes: number;
  capacityBytes?: number;
  availableBytes?: number;
  inodes?: number;
  inodesFree?: number;
}
interface Summary {
  node: { memory: { workingSetBytes: number; availableBytes: number }; fs: Fs; runtime: { imageFs?: Fs } };
  pods: Array<{
    podRef: { name: string };
    volume: Array<Fs & { name: string }>;
    containers: Array<{ name: string; rootfs?: Fs; logs?: Fs }>;
    "ephemeral-storage": Fs;
  }>;
}

describeOnRuntimes("stats summary", (services, rt) => {
  const pods = staticPodNode("stats", services, rt, ["e2e-stats"]);
  const { manifests } = pods;
  const hostDir = tempDir("stats-host");
  let kubelet: Kubelet;
  afterAll(() => removeDir(hostDir));

  test("reports node fs and imagefs, memory working set, emptyDir usage (not hostPath), container rootfs and logs", async () => {
    writeFileSync(join(hostDir, "big"), Buffer.alloc(4 * 2 ** 20));
    writeFileSync(
      join(manifests, "stats.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-stats }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "cat /bin/busybox > /scratch/copy; cat /bin/busybox > /tmp/rootfs-copy; echo hello; exec sleep 3600"]
      volumeMounts: [{ name: scratch, mountPath: /scratch }, { name: host, mountPath: /host }]
  volumes:
    - { name: scratch, emptyDir: {} }
    - { name: host, hostPath: { path: ${hostDir} } }
`,
    );
    kubelet = await pods.start([
      // containerd measures a writable layer every stats_collect_period (10 s): a first walk may find it still empty,
      // so walk again well within the wait below rather than a minute later.
      ...(rt.kind === "remote" ? ["--volume_stats_agg_period", "10s"] : []),
    ]);
    const pod = await kubelet.waitFor(
      "the pod's volume and container measured",
      async () => {
        const response = await kubelet.api("/stats/summary");
        if (response.status !== 200) return undefined;
        const summary = (await response.json()) as Summary;
        const pod = summary.pods.find((p) => p.podRef.name === "e2e-stats");
        const app = pod?.containers.find((c) => c.name === "app");
        return pod && pod.volume[0]?.usedBytes > 2 ** 20 && app?.rootfs && app.rootfs.usedBytes > 2 ** 20 && app.logs
          ? { summary, pod, app }
          : undefined;
      },
      60_000,
    );
    const { node } = pod.summary;
    expect(node.fs.capacityBytes).toBeGreaterThan(node.fs.availableBytes!);
    expect(node.fs.inodes).toBeGreaterThan(0);
    expect(node.runtime.imageFs?.capacityBytes).toBeGreaterThan(0);
    expect(node.memory.workingSetBytes).toBeGreaterThan(0);
    expect(pod.pod.volume.map((v) => v.name)).toEqual(["scratch"]);
    expect(pod.app.logs!.usedBytes).toBeGreaterThan(0);
    expect(pod.pod["ephemeral-storage"].usedBytes).toBe(
      pod.pod.volume[0]!.usedBytes + pod.app.rootfs!.usedBytes + pod.app.logs!.usedBytes,
    );
  }, 90_000);
});
