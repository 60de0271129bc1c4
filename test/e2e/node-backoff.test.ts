// A kubelet restart in the middle of a crash loop keeps the back-off (state in root_dir), on the
// real dockerd with the compiled binary.
import { afterAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, podContainers, removeDir, removePods, tempDir } from "./harness.ts";

interface Status {
  metadata: { name: string };
  status?: {
    containerStatuses?: Array<{ restartCount: number; state?: { waiting?: { reason: string; message: string } } }>;
  };
}

describeWithServices("crash-loop back-off across a kubelet restart", (services) => {
  const manifests = tempDir("backoff-manifests");
  const rootDir = tempDir("backoff-root");
  let kubelet: Kubelet;
  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, "e2e-crashloop");
    removeDir(manifests);
    removeDir(rootDir);
  });
  const start = () =>
    startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--network_container_image",
      services.pause,
    ]);
  const waiting = async () => {
    const list = (await (await kubelet.api("/pods")).json()) as { items: Status[] };
    const status = list.items.find((p) => p.metadata.name === "e2e-crashloop")?.status?.containerStatuses?.[0];
    return status?.state?.waiting?.reason === "CrashLoopBackOff" ? status : undefined;
  };
  const attempts = () =>
    Math.max(
      ...podContainers(services, "e2e-crashloop")
        .filter((c) => c.labels["io.kubernetes.container.name"] === "app")
        .map((c) => Number(c.labels["io.kubernetes.container.restartCount"])),
    );

  test("a restarted kubelet keeps the crash-loop delay instead of restarting the container at once", async () => {
    writeFileSync(
      join(manifests, "crash.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-crashloop }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["sh", "-c", "exit 3"] }]
`,
    );
    kubelet = await start();
    const before = await waitFor(
      "a 20s back-off",
      async () => {
        const s = await waiting();
        return s?.state?.waiting?.message.startsWith("back-off 20s") ? s : undefined;
      },
      60_000,
    );
    const attempt = attempts();
    expect(before.restartCount).toBe(attempt);
    await kubelet.stop();
    kubelet = await start();
    const after = await waitFor("the pod's status after the restart", waiting, 30_000);
    // A fresh back-off would have restarted the container at once and then waited 10s.
    expect(after.state!.waiting!.message).toStartWith(
      "back-off 20s restarting failed container=app pod=e2e-crashloop_default",
    );
    expect(attempts()).toBe(attempt);
  }, 120_000);
});
