// One kubelet per node: an exclusive flock(2) on the lock file, as the Go kubelet's pkg/util/flock, held for the
// process's life (the kernel drops it on exit, even on kill -9), with the holder's pid written in the file for
// humans and messages. The file is never removed (a process that opened it before the removal would lock a file no
// longer there); its pid means nothing unless the lock is held. With exit-on-contention the owner says so in the
// file and watches for a newer kubelet's request (`<lock>.request`), then releases the lock and stops, as the
// kubelet's --exit-on-lock-contention does; a newer kubelet waits for that hand-over instead of failing.
import { watch } from "node:fs";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { KubeletError } from "../../api/types.ts";
import { tryLockFile } from "../../platform/file-lock.ts";

export interface LockFileOptions {
  path: string;
  exitOnContention: boolean;
  /** How long a newer kubelet waits for an owner that exits on contention (default 30 s). */
  handOverTimeoutMs?: number;
}

export interface HeldLock {
  /** Resolves when a newer kubelet asked for the lock (exit-on-contention only; never otherwise). */
  contended: Promise<void>;
  release(): Promise<void>;
}

/** What the holder wrote in the file: its pid (if written yet) and whether it exits on contention. */
async function readOwner(path: string): Promise<{ pid?: number; exitOnContention: boolean }> {
  const text = await readFile(path, "utf8").catch(() => "");
  const [pid, mode] = text.trim().split(/\s+/);
  return { ...(pid && /^\d+$/.test(pid) ? { pid: Number(pid) } : {}), exitOnContention: mode === "exit-on-contention" };
}

/** The holder of the lock at `path`, with its pid when it has written it; undefined when nobody holds it. */
export async function lockHolder(path: string): Promise<{ pid?: number } | undefined> {
  if (!(await stat(path).catch(() => undefined))) return undefined;
  const probe = await tryLockFile(path);
  if (probe) {
    probe.release();
    return undefined;
  }
  const { pid } = await readOwner(path);
  return pid === undefined ? {} : { pid };
}

/** Takes the lock or throws LockContention naming the holder's pid. */
export async function acquireLock(options: LockFileOptions): Promise<HeldLock> {
  const { path } = options;
  const request = `${path}.request`;
  await mkdir(dirname(path), { recursive: true });
  const deadline = Date.now() + (options.handOverTimeoutMs ?? 30_000);
  let asked = false;
  let locked = await tryLockFile(path);
  while (!locked) {
    const owner = await readOwner(path);
    if (owner.pid === undefined)
      throw new KubeletError(
        "LockContention",
        `another process holds --lock_file "${path}" (no pid written in it): stop it first`,
      );
    if (!owner.exitOnContention)
      throw new KubeletError(
        "LockContention",
        `another kubelet (pid ${owner.pid}) holds --lock_file "${path}": stop it first, or start it with --exit_on_lock_contention so a newer kubelet takes over`,
      );
    if (!asked) {
      await writeFile(request, `${process.pid}\n`);
      asked = true;
    }
    if (Date.now() > deadline)
      throw new KubeletError(
        "LockContention",
        `kubelet pid ${owner.pid} did not release --lock_file "${path}" within ${Math.round((options.handOverTimeoutMs ?? 30_000) / 1000)}s`,
      );
    await new Promise((r) => setTimeout(r, 50));
    locked = await tryLockFile(path);
  }
  const held = locked;
  held.write(`${process.pid}${options.exitOnContention ? " exit-on-contention" : ""}\n`);
  if (asked) await rm(request, { force: true });
  let stopWatching = () => {};
  const contended = options.exitOnContention
    ? new Promise<void>((resolve) => {
        const watcher = watch(dirname(path), (_, name) => {
          if (name && `${dirname(path)}/${name}` === request) resolve();
        });
        stopWatching = () => watcher.close();
      })
    : new Promise<void>(() => {});
  let released = false;
  return {
    contended,
    async release() {
      if (released) return;
      released = true;
      stopWatching();
      held.write(""); // free: the file names no holder
      held.release();
    },
  };
}
