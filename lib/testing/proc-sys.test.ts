import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KERNEL_DEFAULTS } from "../node/cm/kernel-defaults.ts";
import { standInProcSys } from "./proc-sys.ts";
import { KUBELET_BINARY } from "./services.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-stand-in-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the stand-in /proc/sys holds the kernel settings the kubelet expects", () => {
  const root = standInProcSys(join(dir, "sys"));
  for (const { flag, value } of KERNEL_DEFAULTS) expect(readFileSync(join(root, flag), "utf8")).toBe(`${value}\n`);
});

test("importing the services' addresses points every kubelet the tests spawn at a stand-in, never /proc/sys", () => {
  expect(KUBELET_BINARY).toBeString();
  expect(process.env.KUBELET_TEST_PROC_SYS).toBeString();
  expect(process.env.KUBELET_TEST_PROC_SYS).not.toMatch(/^\/proc/);
});
