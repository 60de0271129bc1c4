// Eviction end to end on the real dockerd with the compiled binary: an emptyDir over its sizeLimit
// evicts its pod; a memory threshold set just above what is available evicts the BestEffort pod
// (which holds the memory) and leaves the Guaranteed one running.
import { afterAll, describe, expect } from "bun:test";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, podContainers, removeDir, removePods, tempDir, writePodManifest } from "./harness.ts";

interface PodItem {
  metadata: { name: string };
  status?: { phase?: string; reason?: string; message?: string };
}
interface Summary {
  node: { memory: { time: string; availableBytes: number } };
  pods: Array<{ podRef: { name: string }; memory: { workingSetBytes: number } }>;
}

describeWithServices("eviction", (services) => {
  const manifests = tempDir("evict-manifests");
  const rootDir = tempDir("evict-root");
  const pods = ["e2e-evict-disk", "e2e-evict-besteffort", "e2e-evict-guaranteed"];
  let kubelet: Kubelet;
  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, ...pods);
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
  const get = async <T>(path: string): Promise<T> => (await kubelet.api(path)).json() as Promise<T>;
  const status = async (name: string) =>
    (await get<{ items: PodItem[] }>("/pods")).items.find((p) => p.metadata.name === name)?.status;
  const manifest = (name: string, spec: string) => writePodManifest(manifests, name, spec);

  describe("local storage", () => {
    test("an emptyDir over its sizeLimit evicts its pod: Failed, reason Evicted, containers gone", async () => {
      manifest(
        "e2e-evict-disk",
        `  containers:
    - name: writer
      image: ${services.busybox}
      command: ["sh", "-c", "i=0; while [ $i -lt 12 ]; do cat /bin/busybox >> /data/blob; i=$((i+1)); done; exec sleep 3600"]
      volumeMounts: [{ name: data, mountPath: /data }]
  volumes: [{ name: data, emptyDir: { sizeLimit: 4Mi } }]
`,
      );
      kubelet = await start("--eviction_hard", "");
      const evicted = await waitFor(
        "the pod evicted",
        async () => {
          const s = await status("e2e-evict-disk");
          return s?.reason === "Evicted" ? s : undefined;
        },
        60_000,
      );
      expect(evicted).toMatchObject({
        phase: "Failed",
        message: 'Usage of EmptyDir volume "data" exceeds the limit "4Mi". ',
      });
      await waitFor("its containers removed", () => podContainers(services, "e2e-evict-disk").length === 0);
      const events = await get<{ items: Array<{ reason: string; involvedObject: { name: string } }> }>("/events");
      expect(events.items.some((e) => e.reason === "Evicted" && e.involvedObject.name === "e2e-evict-disk")).toBe(true);
      await kubelet.stop();
    }, 90_000);
  });

  describe("memory pressure", () => {
    test("a threshold just above available memory evicts the BestEffort pod holding it, not the Guaranteed one", async () => {
      removePods(services, "e2e-evict-disk");
      removeDir(join(manifests, "e2e-evict-disk.yaml"));
      // ~2 GiB held by the BestEffort pod in a memory-backed emptyDir (tmpfs pages count in the working set, and
      // eviction's teardown unmounts them); the Guaranteed pod sleeps within its limits.
      manifest(
        "e2e-evict-besteffort",
        `  containers:
    - name: hog
      image: ${services.busybox}
      command: ["sh", "-c", "i=0; while [ $i -lt 1040 ]; do cat /bin/busybox >> /mem/blob; i=$((i+1)); done; exec sleep 3600"]
      volumeMounts: [{ name: mem, mountPath: /mem }]
  volumes: [{ name: mem, emptyDir: { medium: Memory, sizeLimit: 3Gi } }]
`,
      );
      manifest(
        "e2e-evict-guaranteed",
        `  containers:
    - name: app
      image: ${services.busybox}
      command: ["sleep", "3600"]
      resources: { limits: { memory: 32Mi, cpu: 100m } }
`,
      );
      kubelet = await start("--eviction_hard", "");
      await waitFor(
        "both pods running",
        async () => (await Promise.all(pods.slice(1).map(status))).every((s) => s?.phase === "Running"),
        60_000,
      );
      // The same measurement the eviction manager makes, read from its own /stats/summary.
      const summary = await waitFor(
        "the hog's memory in the summary",
        async () => {
          const s = await get<Summary>("/stats/summary");
          const hog = s.pods.find((p) => p.podRef.name === "e2e-evict-besteffort");
          return hog && hog.memory.workingSetBytes > 1800 * 2 ** 20 ? s : undefined;
        },
        60_000,
      );
      // Half the hog above what is available: evicting the hog ends the pressure, even with other processes on this
      // shared machine moving up to 1 GiB meanwhile (more makes the kubelet right to evict the Guaranteed pod too).
      const threshold = summary.node.memory.availableBytes + 1024 * 2 ** 20;
      await kubelet.stop();
      kubelet = await start("--eviction_hard", `memory.available<${Math.round(threshold / 1024)}Ki`);
      const evicted = await waitFor(
        "the BestEffort pod evicted",
        async () => {
          const s = await status("e2e-evict-besteffort");
          return s?.reason === "Evicted" ? s : undefined;
        },
        60_000,
      );
      expect(evicted.phase).toBe("Failed");
      expect(evicted.message).toMatch(
        /^The node was low on resource: memory\. Threshold quantity: \d+(?:Ki|Mi|Gi), available: \d+(?:Ki|Mi|Gi)\. Container hog was using \d+(?:Ki|Mi|Gi), request is 0, has larger consumption of memory\. $/,
      );
      const verbose = await (await kubelet.api("/healthz?verbose")).text();
      expect(verbose).toContain("[!]MemoryPressure=True KubeletHasInsufficientMemory");
      // Two collections with memory back above the threshold: at least one full eviction pass saw no pressure.
      let recovered = 0;
      let last = "";
      await waitFor(
        "two collections above the threshold",
        async () => {
          const s = await get<Summary>("/stats/summary");
          if (s.node.memory.time !== last && s.node.memory.availableBytes > threshold) recovered++;
          last = s.node.memory.time;
          return recovered >= 2;
        },
        60_000,
      );
      expect(await status("e2e-evict-guaranteed")).toMatchObject({ phase: "Running" });
    }, 300_000);
  });
});
