// One kubelet per node: a lock file holding the owner's pid, taken with O_EXCL. A stale lock (its
// pid is gone) is taken over. With exit-on-contention the owner says so in the file and watches for
// a newer kubelet's request (`<lock>.request`), then releases the lock and stops, as the kubelet's
// --exit-on-lock-contention does; a newer kubelet waits for that hand-over instead of failing.
import { watch } from "node:fs";
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { KubeletError } from "../../api/types.ts";

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

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

async function readOwner(path: string): Promise<{ pid: number; exitOnContention: boolean } | undefined> {
  const text = await readFile(path, "utf8").catch(() => "");
  const [pid, mode] = text.trim().split(/\s+/);
  return pid && /^\d+$/.test(pid) ? { pid: Number(pid), exitOnContention: mode === "exit-on-contention" } : undefined;
}

/** The pid of the live process holding the lock at `path` (undefined: free, or stale). */
export async function lockHolder(path: string): Promise<number | undefined> {
  const owner = await readOwner(path);
  return owner && alive(owner.pid) ? owner.pid : undefined;
}

/** Takes the lock or throws LockContention naming the owner's pid. */
export async function acquireLock(options: LockFileOptions): Promise<HeldLock> {
  const { path } = options;
  const request = `${path}.request`;
  await mkdir(dirname(path), { recursive: true });
  const deadline = Date.now() + (options.handOverTimeoutMs ?? 30_000);
  let asked = false;
  for (;;) {
    try {
      const handle = await open(path, "wx");
      await handle.writeFile(`${process.pid}${options.exitOnContention ? " exit-on-contention" : ""}\n`);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = await readOwner(path);
    if (owner && owner.pid !== process.pid && alive(owner.pid)) {
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
      continue;
    }
    await rm(path, { force: true }); // stale: its owner is gone
  }
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
  return {
    contended,
    async release() {
      stopWatching();
      const owner = await readOwner(path);
      if (owner?.pid === process.pid) await rm(path, { force: true });
    },
  };
}
