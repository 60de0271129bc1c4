// A stand-in /proc/sys for every kubelet the tests and benches run (KUBELET_TEST_PROC_SYS): without
// protectKernelDefaults the kubelet sets the kernel settings it expects, and a test must not change the
// machine's. It holds the expected values, so those kubelets find nothing to set.
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { KERNEL_DEFAULTS } from "../node/cm/kernel-defaults.ts";

/** Writes the stand-in tree (again: a kubelet may have written it) and returns its root. */
export function standInProcSys(root = join(tmpdir(), "kubelet-test-proc-sys")): string {
  for (const { flag, value } of KERNEL_DEFAULTS) {
    mkdirSync(dirname(join(root, flag)), { recursive: true });
    writeFileSync(join(root, flag), `${value}\n`);
  }
  return root;
}
