// An exclusive flock(2) on a file, held until released or until the process ends (the kernel drops it, even on
// kill -9): under bun through bun:ffi and libc's flock, under deno through Deno.FsFile.tryLockSync (flock too).
import { closeSync, constants, ftruncateSync, openSync, writeSync } from "node:fs";
import { KubeletError } from "../api/types.ts";
import { bunLibc } from "./libc.ts";
import { runtimeKind } from "./runtime.ts";

/** A file this process holds the lock of. */
export interface LockedFile {
  /** Replaces the file's content. */
  write(text: string): void;
  /** Drops the lock and closes the file. */
  release(): void;
}

interface DenoFile {
  tryLockSync(exclusive: boolean): boolean;
  truncateSync(length: number): void;
  seekSync(offset: number, whence: number): number;
  writeSync(data: Uint8Array): number;
  close(): void;
}
declare const Deno: {
  openSync(path: string, options: { read: boolean; write: boolean; create: boolean; mode: number }): DenoFile;
};

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;
const EINTR = 4;
const EWOULDBLOCK = 11;

/**
 * Opens `path` (creating it 0600, as upstream's pkg/util/flock) and takes an exclusive lock on it without waiting;
 * undefined when another open file holds it. Throws LockUnsupported under node (no flock there), or flock's error.
 * (Neither runtime lets a child process inherit the file, so the lock ends with this process.)
 */
export async function tryLockFile(path: string): Promise<LockedFile | undefined> {
  const kind = runtimeKind();
  if (kind === "deno") {
    const file = Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
    if (!file.tryLockSync(true)) {
      file.close();
      return undefined;
    }
    return {
      write(text) {
        file.truncateSync(0);
        file.seekSync(0, 0);
        file.writeSync(new TextEncoder().encode(text));
      },
      release: () => file.close(),
    };
  }
  if (kind !== "bun")
    throw new KubeletError("LockUnsupported", `cannot lock "${path}": flock(2) is reached only under bun and deno`);
  const c = await bunLibc();
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  for (;;) {
    if (c.flock(fd, LOCK_EX | LOCK_NB) === 0) break;
    const errno = c.errno();
    if (errno === EINTR) continue;
    closeSync(fd);
    if (errno === EWOULDBLOCK) return undefined;
    throw new KubeletError("LockFailed", `cannot lock "${path}": flock(2) failed with errno ${errno}`);
  }
  return {
    write(text) {
      ftruncateSync(fd, 0);
      writeSync(fd, text, 0);
    },
    release() {
      c.flock(fd, LOCK_UN);
      closeSync(fd);
    },
  };
}
