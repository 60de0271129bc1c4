// `kubelet runonce --container_runtime remote` end to end: the compiled binary runs the example pods
// on the private containerd through the CRI, and a second run adopts them (same ids, no restart).
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { createCriClient } from "../../lib/container/cri-client.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { removeDir, runBinary, tempDir, waitFor } from "./harness.ts";

const PODS = ["web", "worker", "legacy-sleeper"];

describeWithServices("kubelet runonce on containerd", (services) => {
  const rootDir = tempDir("runonce-cri");
  const client = createCriClient({ runtimeEndpoint: services.containerd, requestTimeoutMs: 30_000 });
  const flags = [
    "--container_runtime",
    "remote",
    "--container_runtime_endpoint",
    services.containerd,
    "--pod_logs_dir",
    join(rootDir, "logs"),
    "--root_dir",
    rootDir,
    "--log_format",
    "json",
  ];
  const ours = async () =>
    (await client.listContainers()).filter((c) => PODS.includes(c.labels["io.kubernetes.pod.name"] ?? ""));
  afterAll(async () => {
    for (const s of await client.listPodSandbox())
      if (PODS.includes(s.labels["io.kubernetes.pod.name"] ?? "")) {
        await client.stopPodSandbox(s.id);
        await waitFor("sandbox removed", () =>
          client.removePodSandbox(s.id).then(
            () => true,
            () => false,
          ),
        );
      }
    client.close();
    removeDir(rootDir);
  });

  test("runs the example pods on containerd, prints the table, and a second run adopts them", async () => {
    const first = runBinary(["runonce", "-c", "testdata/pods", ...flags, "--runonce_timeout", "90s"]);
    expect(first.stdout).toMatch(/^RUNTIME containerd \S+ \(CRI runtime at unix:\/\//m);
    expect(first.stdout).toContain("default/web");
    expect(first.stdout).toContain("3 pods running or completed");
    expect(first.code).toBe(0);
    const running = (await ours()).filter((c) => c.state === "CONTAINER_RUNNING");
    expect(running.map((c) => c.metadata.name).sort()).toEqual(["httpd", "sleeper", "worker"]);

    const second = runBinary(["runonce", "-c", "testdata/pods", ...flags, "--runonce_timeout", "90s"]);
    expect(second.code).toBe(0);
    const after = (await ours()).filter((c) => c.state === "CONTAINER_RUNNING");
    expect(after.map((c) => c.id).sort()).toEqual(running.map((c) => c.id).sort());
  });
});
