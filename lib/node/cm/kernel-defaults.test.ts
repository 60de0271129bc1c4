import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Logger } from "../../log.ts";
import { checkKernelDefaults, KERNEL_DEFAULTS } from "./kernel-defaults.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A stand-in /proc/sys holding the expected values, with `overrides` (flag → value; undefined = missing). */
function procSys(overrides: Record<string, string | undefined> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "kubelet-proc-sys-"));
  dirs.push(root);
  for (const { flag, value } of KERNEL_DEFAULTS) {
    const text = flag in overrides ? overrides[flag] : `${value}\n`;
    if (text === undefined) continue;
    mkdirSync(dirname(join(root, flag)), { recursive: true });
    writeFileSync(join(root, flag), text);
  }
  return root;
}

/** A logger keeping "level message" lines. */
function recordingLog(lines: string[]): Logger {
  const line = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  const log: Logger = {
    debug: () => {},
    info: line("info"),
    warn: line("warn"),
    error: line("error"),
    child: () => log,
  };
  return log;
}

describe("checkKernelDefaults", () => {
  test("expects upstream's six settings and values", () => {
    expect(KERNEL_DEFAULTS.map((d) => `${d.flag}=${d.value}`)).toEqual([
      "vm/overcommit_memory=1",
      "vm/panic_on_oom=0",
      "kernel/panic=10",
      "kernel/panic_on_oops=1",
      "kernel/keys/root_maxkeys=1000000",
      "kernel/keys/root_maxbytes=25000000",
    ]);
  });

  test("with protectKernelDefaults a difference refuses the start, naming each setting, its value and the expected one", async () => {
    const root = procSys({ "vm/overcommit_memory": "0\n", "kernel/panic": "1\n" });
    const error = await checkKernelDefaults({ protect: true, log: recordingLog([]), procSys: root }).catch((e) => e);
    expect(error.code).toBe("KernelDefaults");
    expect(error.message).toBe(
      "protectKernelDefaults is true and the kernel settings differ from the kubelet's: [invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0, invalid kernel flag: kernel/panic, expected value: 10, actual value: 1]; set them (sysctl -w vm.overcommit_memory=1 kernel.panic=10, and in /etc/sysctl.d/ to keep them) or set protectKernelDefaults: false (--protect_kernel_defaults=false) to let the kubelet set them",
    );
    expect(readFileSync(join(root, "vm/overcommit_memory"), "utf8")).toBe("0\n");
  });

  test("with protectKernelDefaults a setting that cannot be read refuses the start too", async () => {
    const root = procSys({ "kernel/keys/root_maxbytes": undefined });
    await expect(checkKernelDefaults({ protect: true, log: recordingLog([]), procSys: root })).rejects.toThrow(
      /\[cannot read kernel flag kernel\/keys\/root_maxbytes/,
    );
  });

  test("matching settings start quietly and are not written", async () => {
    const lines: string[] = [];
    const root = procSys();
    chmodSync(join(root, "vm/overcommit_memory"), 0o444);
    await checkKernelDefaults({ protect: true, log: recordingLog(lines), procSys: root });
    await checkKernelDefaults({ protect: false, log: recordingLog(lines), procSys: root });
    expect(lines).toEqual([]);
  });

  test("without protectKernelDefaults the differing settings are set and logged as upstream does", async () => {
    const lines: string[] = [];
    const root = procSys({ "vm/overcommit_memory": "0\n", "kernel/panic_on_oops": "0\n" });
    await checkKernelDefaults({ protect: false, log: recordingLog(lines), procSys: root });
    expect(readFileSync(join(root, "vm/overcommit_memory"), "utf8")).toBe("1\n");
    expect(readFileSync(join(root, "kernel/panic_on_oops"), "utf8")).toBe("1\n");
    expect(lines).toEqual([
      "info Updating kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0",
      "info Updating kernel flag: kernel/panic_on_oops, expected value: 1, actual value: 0",
    ]);
  });

  test("without protectKernelDefaults a failed write or read is a warning and the start goes on", async () => {
    const lines: string[] = [];
    // /proc/version can be read but not written, even by root.
    const root = procSys({ "kernel/panic": undefined, "vm/panic_on_oom": undefined });
    symlinkSync("/proc/version", join(root, "kernel/panic"));
    await checkKernelDefaults({ protect: false, log: recordingLog(lines), procSys: root });
    expect(lines).toEqual([
      expect.stringMatching(/^warn cannot read kernel flag vm\/panic_on_oom .*; not set$/),
      "info Updating kernel flag: kernel/panic, expected value: 10, actual value: NaN",
      expect.stringMatching(/^warn cannot set kernel flag kernel\/panic to 10 \(.*\): .*; left at NaN$/),
    ]);
  });

  test("KUBELET_TEST_PROC_SYS names the stand-in when no root is given", async () => {
    const root = procSys({ "vm/overcommit_memory": "2\n" });
    const before = process.env.KUBELET_TEST_PROC_SYS;
    process.env.KUBELET_TEST_PROC_SYS = root;
    try {
      await checkKernelDefaults({ protect: false, log: recordingLog([]) });
    } finally {
      if (before === undefined) delete process.env.KUBELET_TEST_PROC_SYS;
      else process.env.KUBELET_TEST_PROC_SYS = before;
    }
    expect(readFileSync(join(root, "vm/overcommit_memory"), "utf8")).toBe("1\n");
  });
});
