// Filesystem measurements for GC, eviction and stats: statfs of a mount (capacity, available,
// inodes) and a bounded-cost disk-usage walk of a directory (emptyDir volumes, logs).
import { lstat, readdir, statfs } from "node:fs/promises";
import { join } from "node:path";

/** A filesystem's size as statfs reports it; "available" is what an unprivileged writer may still use. */
export interface FsStats {
  capacityBytes: number;
  availableBytes: number;
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  inodesUsed: number;
}

/** Reads a filesystem's statfs. */
export type StatFs = (path: string) => Promise<FsStats>;

/** statfs(2) of the filesystem holding `path`. */
export const statFs: StatFs = async (path) => {
  const s = await statfs(path);
  const capacityBytes = s.blocks * s.bsize;
  return {
    capacityBytes,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
    inodesUsed: s.files - s.ffree,
  };
};

/** What a walk found; `complete` is false when it stopped at its entry budget (the figures are then lower bounds). */
export interface DiskUsage {
  bytes: number;
  inodes: number;
  complete: boolean;
}

/**
 * Bytes (allocated blocks, like du) and inodes under `dir`, not following symlinks or crossing into other
 * filesystems, visiting at most `maxEntries` entries so one huge volume cannot stall the caller.
 */
export async function diskUsage(dir: string, maxEntries = 100_000): Promise<DiskUsage> {
  const usage: DiskUsage = { bytes: 0, inodes: 0, complete: true };
  let root: Awaited<ReturnType<typeof lstat>>;
  try {
    root = await lstat(dir);
  } catch {
    return usage;
  }
  const pending = [dir];
  usage.bytes += root.blocks * 512;
  usage.inodes++;
  while (pending.length) {
    const current = pending.pop()!;
    let names: string[];
    try {
      names = await readdir(current);
    } catch {
      continue; // removed while walking, or unreadable: count what can be seen
    }
    for (const name of names) {
      if (usage.inodes >= maxEntries) {
        usage.complete = false;
        return usage;
      }
      const path = join(current, name);
      const s = await lstat(path).catch(() => undefined);
      if (!s) continue;
      usage.bytes += s.blocks * 512;
      usage.inodes++;
      if (s.isDirectory() && s.dev === root.dev) pending.push(path);
    }
  }
  return usage;
}
