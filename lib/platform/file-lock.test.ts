import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tryLockFile } from "./file-lock.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-flock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a locked file cannot be locked again through another open file until released; write replaces its content", async () => {
  const path = join(dir, "a.lock");
  const first = (await tryLockFile(path))!;
  expect(first).toBeDefined();
  expect(await tryLockFile(path)).toBeUndefined();
  first.write("12345 exit-on-contention\n");
  first.write("7\n");
  expect(readFileSync(path, "utf8")).toBe("7\n");
  first.release();
  const second = await tryLockFile(path);
  expect(second).toBeDefined();
  second!.release();
});

test("under deno the same flock(2) is taken: a file bun holds is refused there, and taken once released", async () => {
  const path = join(dir, "deno.lock");
  const deno = join(import.meta.dir, "../../node_modules/.bin/deno");
  const script = `const { tryLockFile } = await import(${JSON.stringify(join(import.meta.dir, "file-lock.ts"))});
    const lock = await tryLockFile(${JSON.stringify(path)});
    if (lock) lock.write("deno\\n");
    console.log(lock ? "locked" : "refused");`;
  const run = () => spawnSync(deno, ["eval", script], { encoding: "utf8" });
  const held = (await tryLockFile(path))!;
  expect(run()).toMatchObject({ status: 0, stdout: "refused\n" });
  held.release();
  expect(run()).toMatchObject({ status: 0, stdout: "locked\n" });
  expect(readFileSync(path, "utf8")).toBe("deno\n");
});
