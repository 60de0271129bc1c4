import { afterAll, afterEach, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireLock, lockHolder } from "./lock-file.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-lock-"));
let children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `command` and resolves once it has printed "locked". */
function holder(command: string[]): Promise<ChildProcess> {
  // Its own process group, so that flock(1)'s child goes with it.
  const child = spawn(command[0]!, command.slice(1), { stdio: ["ignore", "pipe", "inherit"], detached: true });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => String(d).includes("locked") && resolve(child));
    child.once("exit", (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
  });
}

/** Another process taking the lock with acquireLock, as a second kubelet would. */
const kubeletHolding = (path: string) =>
  holder([
    process.execPath,
    "--eval",
    `const { acquireLock } = await import(${JSON.stringify(join(import.meta.dir, "lock-file.ts"))});
     await acquireLock({ path: ${JSON.stringify(path)}, exitOnContention: false });
     console.log("locked");
     setInterval(() => {}, 60_000);`,
  ]);

/** Nobody holds `path`: lockHolder says so, and acquireLock takes it at once and writes this process's pid in it. */
async function expectFree(path: string) {
  expect(await lockHolder(path)).toBeUndefined();
  const lock = await acquireLock({ path, exitOnContention: false });
  expect(readFileSync(path, "utf8")).toBe(`${process.pid}\n`);
  await lock.release();
}

test("a second process is refused the lock, naming the holder's pid; after kill -9 of the holder the lock is free at once", async () => {
  const path = join(dir, "two.lock");
  const first = await kubeletHolding(path);
  expect(readFileSync(path, "utf8")).toBe(`${first.pid}\n`);
  await expect(acquireLock({ path, exitOnContention: false })).rejects.toMatchObject({
    code: "LockContention",
    message: expect.stringContaining(`another kubelet (pid ${first.pid}) holds --lock_file "${path}"`),
  });
  expect(await lockHolder(path)).toEqual({ pid: first.pid });
  const gone = new Promise((resolve) => first.once("exit", resolve));
  first.kill("SIGKILL");
  await gone;
  await expectFree(path);
});

test("a lock file naming a live process that holds no lock (a pid reused after a reboot) does not block", async () => {
  const path = join(dir, "reused.lock");
  writeFileSync(path, `${process.ppid}\n`);
  await expectFree(path);
});

test("a lock held by a process that has not written its pid yet is refused, not taken for stale", async () => {
  const path = join(dir, "empty.lock");
  writeFileSync(path, "");
  await holder(["flock", "--exclusive", path, "sh", "-c", "echo locked; exec sleep 600"]);
  await expect(acquireLock({ path, exitOnContention: false })).rejects.toMatchObject({
    code: "LockContention",
    message: expect.stringContaining(`another process holds --lock_file "${path}" (no pid written in it)`),
  });
  expect(await lockHolder(path)).toEqual({});
});

test("a released lock can be taken again, and its file says no pid", async () => {
  const path = join(dir, "again.lock");
  await (await acquireLock({ path, exitOnContention: false })).release();
  expect(readFileSync(path, "utf8")).toBe("");
  const again = await acquireLock({ path, exitOnContention: false });
  expect(readFileSync(path, "utf8")).toBe(`${process.pid}\n`);
  await again.release();
});
