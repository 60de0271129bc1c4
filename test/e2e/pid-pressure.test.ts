// PIDPressure end to end: a pid.available hard threshold above what the node has free (the pid limit
// itself, which any running task puts out of reach) sets the condition on /healthz?verbose.
import { afterAll, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { describeWithServices } from "../../lib/testing/services.ts";
import { killKubeletsAfterAll, startKubelet, test } from "./harness-kubelet.ts";
import { baseFlags, removeDir, tempDir } from "./harness.ts";

describeWithServices("pid pressure", (services) => {
  killKubeletsAfterAll();
  const rootDir = tempDir("pid-root");
  afterAll(() => removeDir(rootDir));

  test("a pid.available threshold the node is below sets PIDPressure=True with the kubelet's reason", async () => {
    const limit = Math.min(
      Number(readFileSync("/proc/sys/kernel/pid_max", "utf8")),
      Number(readFileSync("/proc/sys/kernel/threads-max", "utf8")),
    );
    const kubelet = await startKubelet([
      "run",
      ...baseFlags(services, rootDir),
      "--eviction_hard",
      `pid.available<${limit}`,
    ]);
    const verbose = await kubelet.waitFor("PIDPressure=True", async () => {
      const text = await (await kubelet.api("/healthz?verbose")).text();
      return text.includes("PIDPressure=True") ? text : undefined;
    });
    expect(verbose).toContain("[!]PIDPressure=True KubeletHasInsufficientPID");
    await kubelet.stop();
  });
});
