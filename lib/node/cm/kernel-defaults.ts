// protectKernelDefaults, as the Go kubelet's container manager sets up the kernel at start
// (setupKernelTunables): the settings it expects are read from /proc/sys; with protectKernelDefaults a
// difference refuses the start, naming each setting, its value and the expected one; otherwise they are set.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KubeletError } from "../../api/types.ts";
import type { Logger } from "../../log.ts";

/** The settings and values the kubelet expects, as pkg/util/sysctl names them (paths under /proc/sys). */
export const KERNEL_DEFAULTS: ReadonlyArray<{ flag: string; value: number }> = [
  { flag: "vm/overcommit_memory", value: 1 }, // always overcommit: memory limits are the cgroups'
  { flag: "vm/panic_on_oom", value: 0 }, // call the OOM killer, do not panic
  { flag: "kernel/panic", value: 10 }, // reboot 10 s after a panic
  { flag: "kernel/panic_on_oops", value: 1 },
  { flag: "kernel/keys/root_maxkeys", value: 1_000_000 },
  { flag: "kernel/keys/root_maxbytes", value: 25_000_000 }, // root_maxkeys * 25
];

export interface KernelDefaultsOptions {
  /** protectKernelDefaults: refuse to start on a difference instead of setting the value. */
  protect: boolean;
  log: Logger;
  /** The /proc/sys to read and write; KUBELET_TEST_PROC_SYS names a stand-in (the tests never touch the machine's). */
  procSys?: string;
}

/** Checks the kernel settings; throws KernelDefaults (protect) or sets them, a failed write being a warning. */
export async function checkKernelDefaults(options: KernelDefaultsOptions): Promise<void> {
  const root = options.procSys ?? (process.env.KUBELET_TEST_PROC_SYS || "/proc/sys");
  const errors: string[] = [];
  const fixes: string[] = [];
  for (const { flag, value } of KERNEL_DEFAULTS) {
    const path = join(root, flag);
    let actual: number;
    try {
      actual = Number.parseInt((await readFile(path, "utf8")).trim(), 10);
    } catch (error) {
      const message = `cannot read kernel flag ${flag} (${path}): ${(error as Error).message}`;
      if (options.protect) errors.push(message);
      else options.log.warn(`${message}; not set`);
      continue;
    }
    if (actual === value) continue;
    if (options.protect) {
      errors.push(`invalid kernel flag: ${flag}, expected value: ${value}, actual value: ${actual}`);
      fixes.push(`${flag.replaceAll("/", ".")}=${value}`);
      continue;
    }
    options.log.info(`Updating kernel flag: ${flag}, expected value: ${value}, actual value: ${actual}`);
    await writeFile(path, `${value}\n`).catch((error: Error) =>
      options.log.warn(`cannot set kernel flag ${flag} to ${value} (${path}): ${error.message}; left at ${actual}`),
    );
  }
  if (errors.length)
    throw new KubeletError(
      "KernelDefaults",
      `protectKernelDefaults is true and the kernel settings differ from the kubelet's: [${errors.join(", ")}]; set them (${fixes.length ? `sysctl -w ${fixes.join(" ")}, and ` : ""}in /etc/sysctl.d/ to keep them) or set protectKernelDefaults: false (--protect_kernel_defaults=false) to let the kubelet set them`,
    );
}
