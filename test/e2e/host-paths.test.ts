// Host paths by source against the compiled binary: a pushed pod asking for /etc/cron.d is refused
// with the path, the source and the setting; the same volume from the trusted file source runs.
import { afterAll, beforeAll, expect } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test } from "./harness-kubelet.ts";
import { baseFlags, removeDir, removePods, tempDir } from "./harness.ts";

describeWithServices("host paths by source", (services) => {
  const manifests = tempDir("host-paths-manifests");
  const rootDir = tempDir("host-paths-root");
  let kubelet: Kubelet;
  /** A pod mounting the host's /etc/cron.d read-only. */
  const cronPod = (name: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: "cron", hostPath: { path: "/etc/cron.d", type: "Directory" } }],
      containers: [
        {
          name: "app",
          image: services.busybox,
          command: ["sleep", "3600"],
          volumeMounts: [{ name: "cron", mountPath: "/host-cron", readOnly: true }],
        },
      ],
    },
  });

  beforeAll(async () => {
    mkdirSync("/etc/cron.d", { recursive: true });
    writeFileSync(join(manifests, "cron.json"), JSON.stringify(cronPod("e2e-hostpath-file")));
    kubelet = await startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--trusted_sources",
      "file",
    ]);
    await kubelet.healthy();
  });

  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, "e2e-hostpath-file", "e2e-hostpath-pushed");
    for (const dir of [manifests, rootDir]) removeDir(dir);
  });

  test("a pushed pod with a hostPath at /etc/cron.d is refused, naming the path, the http source and --trusted_sources", async () => {
    const response = await kubelet.admin("/pods", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(cronPod("e2e-hostpath-pushed")),
    });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain(
      'spec.volumes[0].hostPath.path: Forbidden: \\"/etc/cron.d\\": may not mount /etc or a path in or above it from the http source: only pods from --trusted_sources (file) may mount the node\'s system directories',
    );
    expect(await kubelet.pod("e2e-hostpath-pushed")).toBeUndefined();
  });

  test("the same volume from the file source, trusted, runs", async () => {
    await kubelet.waitForPod(
      "e2e-hostpath-file",
      "running",
      (pod) => pod.status?.containerStatuses?.[0]?.state?.running,
      60_000,
    );
  });
});
