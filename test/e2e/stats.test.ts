// /stats/summary end to end: the resource analyzer's node filesystems, image filesystem, memory
// working set, a pod's emptyDir usage (its hostPath not counted) and a container's rootfs and logs.
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { baseFlags, freePort, KubeletProcess, removeDir, removePods, tempDir, waitFor } from "./harness.ts";

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

describeWithServices("stats summary", (services) => {
  const manifests = tempDir("stats-manifests");
  const rootDir = tempDir("stats-root");
  const hostDir = tempDir("stats-host");
  let kubelet: KubeletProcess | undefined;
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    removePods(services, "e2e-stats");
    removeDir(manifests);
    removeDir(rootDir);
    removeDir(hostDir);
  });

  test("reports node fs and imagefs, memory working set, emptyDir usage (not hostPath), container rootfs and logs", async () => {
    const port = await freePort();
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
    kubelet = new KubeletProcess([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--port",
      String(port),
      "--network_container_image",
      services.pause,
    ]);
    const pod = await waitFor(
      "the pod's volume and container measured",
      async () => {
        const response = await fetch(`http://127.0.0.1:${port}/stats/summary`);
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
