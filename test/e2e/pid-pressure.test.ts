// PIDPressure end to end: a pid.available threshold above what the node has free (the pid limit
// itself, which any running task puts out of reach) sets the condition on /healthz?verbose, and
// evicts, of two pods of one priority, the one running more processes first (the Go kubelet's
// rankPIDPressure, each pod's process count read from its pids cgroup).
import { afterAll, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type ApiPod, killKubeletsAfterAll, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";
import { baseFlags, removeDir, tempDir } from "./harness.ts";

/** The node's pid limit: a pid.available threshold at it is always met. */
const pidLimit = () =>
  Math.min(
    Number(readFileSync("/proc/sys/kernel/pid_max", "utf8")),
    Number(readFileSync("/proc/sys/kernel/threads-max", "utf8")),
  );

describeWithServices("pid pressure", (services) => {
  killKubeletsAfterAll();
  const rootDir = tempDir("pid-root");
  afterAll(() => removeDir(rootDir));

  test("a pid.available threshold the node is below sets PIDPressure=True with the kubelet's reason", async () => {
    const kubelet = await startKubelet([
      "run",
      ...baseFlags(services, rootDir),
      "--eviction_hard",
      `pid.available<${pidLimit()}`,
    ]);
    const verbose = await kubelet.waitFor("PIDPressure=True", async () => {
      const text = await (await kubelet.api("/healthz?verbose")).text();
      return text.includes("PIDPressure=True") ? text : undefined;
    });
    expect(verbose).toContain("[!]PIDPressure=True KubeletHasInsufficientPID");
    await kubelet.stop();
  });
});

describeOnRuntimes("pid pressure ranking", (services, rt) => {
  const node = staticPodNode("pid", services, rt, ["e2e-pid-many", "e2e-pid-few"]);

  test("the pod running more processes is evicted before the one running fewer", async () => {
    const pod = (name: string, script: string) =>
      node.write(name, {
        terminationGracePeriodSeconds: 1,
        containers: [{ name: "app", image: services.busybox, command: ["sh", "-c", script] }],
      });
    pod("e2e-pid-many", "for i in $(seq 40); do sleep 3600 & done; wait");
    pod("e2e-pid-few", "exec sleep 3600");
    // A soft threshold met for 20 s: both pods are running and counted before the first eviction.
    const kubelet = await node.start([
      "--eviction_hard",
      "",
      "--eviction_soft",
      `pid.available<${pidLimit()}`,
      "--eviction_soft_grace_period",
      "pid.available=20s",
    ]);
    const status = (p: ApiPod) => p.status as { phase?: string; reason?: string; message?: string };
    const many = await kubelet.waitForPod("e2e-pid-many", "evicted", (p) => status(p).phase === "Failed", 90_000);
    expect(status(many)).toMatchObject({ phase: "Failed", reason: "Evicted" });
    expect(status(many).message).toStartWith("The node was low on resource: pids.");
    // Evictions are one per 10 s pass: when the first is seen, the other pod still runs.
    expect(status((await kubelet.pod("e2e-pid-few"))!).phase).toBe("Running");
  }, 120_000);
});
