// A container that dies is restarted on the Docker Engine's die event, on the real dockerd with the
// compiled binary: the full sync is an hour away, so only the event can bring the container back.
// (dockerd 20.10 still lists a container as running right after its die event; bench/crash.bench.ts
// measures how fast the restart begins.)
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import {
  baseFlags,
  docker,
  killKubeletsAfterAll,
  podContainers,
  removeDir,
  removePods,
  startKubelet,
  tempDir,
  waitFor,
} from "./harness.ts";

describeWithServices("crash reaction", (services) => {
  const manifests = tempDir("crash-manifests");
  const rootDir = tempDir("crash-root");
  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, "e2e-crash");
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("a container killed outside the kubelet runs again without waiting for the periodic sync", async () => {
    writeFileSync(
      join(manifests, "crash.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-crash }
spec:
  terminationGracePeriodSeconds: 0
  containers: [{ name: app, image: ${services.busybox}, command: ["sleep", "3600"] }]
`,
    );
    await startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--network_container_image",
      services.pause,
      "--sync_frequency",
      "1h",
    ]);
    const app = (attempt: string) =>
      podContainers(services, "e2e-crash").find(
        (c) =>
          c.labels["io.kubernetes.container.name"] === "app" &&
          c.labels["io.kubernetes.container.restartCount"] === attempt &&
          c.state === "running",
      );
    const first = await waitFor("the app container running", () => app("0"), 60_000);
    const pid = Number(docker(services, "inspect", "-f", "{{.State.Pid}}", first.id).trim());
    process.kill(pid, "SIGKILL");
    const second = await waitFor("the app container running again", () => app("1"), 30_000);
    expect(second.id).not.toBe(first.id);
  }, 120_000);
});
