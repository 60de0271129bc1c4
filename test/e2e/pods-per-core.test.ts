// podsPerCore end to end: with --pods_per_core 1 the node takes one pod per CPU core, whatever
// --max_pods allows; the pod beyond is rejected with OutOfpods naming that capacity.
import { afterAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type ApiPod, killKubeletsAfterAll, startKubelet, test } from "./harness-kubelet.ts";
import { baseFlags, removeCgroupRoot, removeDir, removePods, tempDir } from "./harness.ts";

describeWithServices("pods per core", (services) => {
  killKubeletsAfterAll();
  const manifests = tempDir("ppc-manifests");
  const rootDir = tempDir("ppc-root");
  const cores = cpus().length;
  const pods = Array.from({ length: cores + 1 }, (_, i) => `e2e-ppc-${i}`);
  afterAll(() => {
    removePods(services, ...pods);
    removeCgroupRoot(rootDir);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("the pod beyond --pods_per_core × cores is rejected with OutOfpods at that capacity", async () => {
    pods.forEach((name, i) =>
      writeFileSync(
        join(manifests, `${name}.yaml`),
        `{ apiVersion: v1, kind: Pod, metadata: { name: ${name}, creationTimestamp: "2026-01-0${i + 1}T00:00:00Z" }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: app, image: "${services.busybox}", command: ["sleep", "3600"] }] } }\n`,
      ),
    );
    const kubelet = await startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--max_pods",
      "110",
      "--pods_per_core",
      "1",
    ]);
    const rejected = (p: ApiPod) => p.status as { reason?: string; message?: string } | undefined;
    const newest = await kubelet.waitForPod(
      pods[cores]!,
      "rejected",
      (p) => rejected(p)?.reason === "OutOfpods",
      60_000,
    );
    expect(rejected(newest)?.message).toBe(
      `Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: ${cores}, capacity: ${cores}`,
    );
    await kubelet.stop();
  });
});
