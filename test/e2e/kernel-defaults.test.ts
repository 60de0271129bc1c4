// protectKernelDefaults end to end, on the built kubelet: with it, the machine's real /proc/sys is only
// read and a difference stops the start naming each setting; without it, the settings are written, to
// a stand-in tree (KUBELET_TEST_PROC_SYS), so this machine's kernel is never changed.
import { afterAll, describe, expect } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KERNEL_DEFAULTS } from "../../lib/node/cm/kernel-defaults.ts";
import { freePortNumber } from "../../lib/testing/ports.ts";
import { standInProcSys } from "../../lib/testing/proc-sys.ts";
import { Kubelet, killKubeletsAfterAll, test } from "./harness-kubelet.ts";
import { removeDir, runBinary, tempDir } from "./harness.ts";

const dir = tempDir("kernel-defaults");
afterAll(() => removeDir(dir));

const fakeNode = (root: string) =>
  ["run", "--container_runtime", "fake", "--root_dir", root, "--cgroups_per_qos=false"].concat([
    "--enforce_node_allocatable",
    "none",
    "--healthz_port",
    "0",
  ]);

/** The machine's values of the settings, read from the real /proc/sys. */
const machine = () => KERNEL_DEFAULTS.map(({ flag }) => readFileSync(join("/proc/sys", flag), "utf8").trim());

describe("protectKernelDefaults", () => {
  killKubeletsAfterAll();

  test("with protectKernelDefaults the real /proc/sys is read only, and each difference is named in the refusal", () => {
    const before = machine();
    const standIn = process.env.KUBELET_TEST_PROC_SYS;
    delete process.env.KUBELET_TEST_PROC_SYS;
    let result: ReturnType<typeof runBinary>;
    let after: string[];
    try {
      result = runBinary([...fakeNode(join(dir, "protect")), "--port", "0", "--protect_kernel_defaults"], {
        timeoutMs: 5_000,
      });
    } finally {
      process.env.KUBELET_TEST_PROC_SYS = standIn;
      // A kubelet that wrote anyway (a broken check) fails below; the machine gets its values back first.
      after = machine();
      KERNEL_DEFAULTS.forEach(({ flag }, i) => {
        if (after[i] !== before[i]) writeFileSync(join("/proc/sys", flag), `${before[i]}\n`);
      });
    }
    expect(after).toEqual(before);
    const differing = KERNEL_DEFAULTS.filter(({ value }, i) => String(value) !== before[i]);
    if (differing.length === 0) return console.warn("this machine already has the kubelet's kernel settings");
    expect(result.code).not.toBe(0);
    const output = result.stdout + result.stderr;
    expect(output).toContain("protectKernelDefaults is true and the kernel settings differ");
    for (const { flag, value } of differing)
      expect(output).toContain(
        `invalid kernel flag: ${flag}, expected value: ${value}, actual value: ${before[KERNEL_DEFAULTS.findIndex((d) => d.flag === flag)]}`,
      );
  }, 30_000);

  test("without it the differing settings are set (in the stand-in tree) and the kubelet starts", async () => {
    const root = standInProcSys(join(dir, "proc-sys"));
    writeFileSync(join(root, "vm/overcommit_memory"), "0\n");
    writeFileSync(join(root, "kernel/panic"), "0\n");
    const standIn = process.env.KUBELET_TEST_PROC_SYS;
    process.env.KUBELET_TEST_PROC_SYS = root;
    let kubelet: Kubelet;
    try {
      kubelet = new Kubelet(fakeNode(join(dir, "modify")), await freePortNumber());
    } finally {
      process.env.KUBELET_TEST_PROC_SYS = standIn;
    }
    await kubelet.healthy();
    expect(readFileSync(join(root, "vm/overcommit_memory"), "utf8")).toBe("1\n");
    expect(readFileSync(join(root, "kernel/panic"), "utf8")).toBe("10\n");
    expect(kubelet.output).toContain("Updating kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0");
    expect(kubelet.output).toContain("Updating kernel flag: kernel/panic, expected value: 10, actual value: 0");
    await kubelet.stop("SIGKILL");
  }, 30_000);
});
