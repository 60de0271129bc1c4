// fsGroup on a real directory tree: the group, group access and setgid; OnRootMismatch skips a right root.
import { afterAll, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyFsGroup } from "./fs-group.ts";

const root = mkdtempSync(join(tmpdir(), "fsgroup-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const isRoot = process.getuid?.() === 0;

test.skipIf(!isRoot)(
  "every file and directory gets the group and group rw; directories setgid; symlinks are not followed",
  async () => {
    const dir = join(root, "always");
    mkdirSync(join(dir, "sub"), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "sub", "file"), "x", { mode: 0o600 });
    symlinkSync("/etc/hostname", join(dir, "link"));
    await applyFsGroup(dir, 2345);
    for (const path of [dir, join(dir, "sub")]) {
      const info = lstatSync(path);
      expect([info.gid, info.mode & 0o2070]).toEqual([2345, 0o2070]);
    }
    const file = lstatSync(join(dir, "sub", "file"));
    expect([file.gid, file.mode & 0o777]).toEqual([2345, 0o660]);
    expect(lstatSync("/etc/hostname").gid).not.toBe(2345);
  },
);

test.skipIf(!isRoot)("OnRootMismatch leaves a volume whose root already has the group and its access", async () => {
  const dir = join(root, "mismatch");
  mkdirSync(join(dir, "sub"), { recursive: true });
  await applyFsGroup(dir, 2345, "OnRootMismatch");
  chmodSync(join(dir, "sub"), 0o700);
  await applyFsGroup(dir, 2345, "OnRootMismatch");
  expect(lstatSync(join(dir, "sub")).mode & 0o777).toBe(0o700);
  await applyFsGroup(dir, 2345, "Always");
  expect(lstatSync(join(dir, "sub")).mode & 0o070).toBe(0o070);
});
