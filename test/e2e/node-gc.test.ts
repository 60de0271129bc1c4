// Keeping the node alive, end to end on the real dockerd: dead containers beyond
// --maximum_dead_containers are removed oldest first by the container GC's own timer.
import { afterAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, podContainers, removeDir, removePods, tempDir } from "./harness.ts";

describeWithServices("container garbage collection", (services) => {
  const manifests = tempDir("gc-manifests");
  const rootDir = tempDir("gc-root");
  const pods = ["e2e-gc-0", "e2e-gc-1", "e2e-gc-2"];
  let kubelet: Kubelet | undefined;
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
  const deadApps = () =>
    pods.flatMap((p) =>
      podContainers(services, p).filter(
        (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "exited",
      ),
    );

  test("dead containers beyond --maximum_dead_containers are removed oldest first", async () => {
    // Three pods whose one container exits and is never restarted, written one after another.
    for (const name of pods) {
      writeFileSync(
        join(manifests, `${name}.yaml`),
        `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["true"] }]
`,
      );
      kubelet ??= await start();
      await waitFor(`${name} exited`, () => deadApps().some((c) => c.labels["io.kubernetes.pod.name"] === name));
    }
    await kubelet!.stop();
    expect(deadApps()).toHaveLength(3);
    // The container GC runs at start and then once a minute: a restart with a limit of 1 collects at once.
    kubelet = await start("--maximum_dead_containers", "1");
    const left = await waitFor("two dead containers collected", () => {
      const dead = deadApps();
      return dead.length === 1 ? dead : undefined;
    });
    expect(left[0]!.labels["io.kubernetes.pod.name"]).toBe("e2e-gc-2");
    await waitFor("the collection logged", () =>
      kubelet!.output.includes("container garbage collection removed 2 dead containers"),
    );
  });
});
