// failSwapOn end to end: with swap on (a stand-in /proc/swaps through KUBELET_TEST_PROC_SWAPS, since
// turning real swap on would change the machine for everything else on it) the kubelet refuses to
// start, naming the setting; with --fail_swap_on=false it starts.
import { afterAll, afterEach, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { killKubeletsAfterAll, startKubelet, test } from "./harness-kubelet.ts";
import { baseFlags, removeDir, runBinary, tempDir } from "./harness.ts";

describeWithServices("swap", (services) => {
  killKubeletsAfterAll();
  const dir = tempDir("swap");
  const rootDir = tempDir("swap-root");
  const swaps = join(dir, "swaps");
  writeFileSync(
    swaps,
    "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/swapfile                               file\t\t1048572\t\t0\t\t-2\n",
  );
  afterEach(() => delete process.env.KUBELET_TEST_PROC_SWAPS);
  afterAll(() => {
    removeDir(dir);
    removeDir(rootDir);
  });

  test("with swap on the kubelet refuses to start, naming failSwapOn and the swap area", () => {
    process.env.KUBELET_TEST_PROC_SWAPS = swaps;
    const run = runBinary(["run", ...baseFlags(services, rootDir)], { timeoutMs: 30_000 });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "running with swap on is not supported, please disable swap or set --fail_swap_on=false (failSwapOn: false in the config file)",
    );
    expect(run.stderr).toContain("/swapfile");
  });

  test("with --fail_swap_on=false it starts with swap on", async () => {
    process.env.KUBELET_TEST_PROC_SWAPS = swaps;
    const kubelet = await startKubelet(["run", ...baseFlags(services, rootDir), "--fail_swap_on=false"]);
    expect((await kubelet.api("/healthz")).status).toBe(200);
    expect(kubelet.output).not.toContain("running with swap on is not supported");
    expect(await kubelet.stop()).toBe(0);
  });
});
