// fsGroup on the volumes the kubelet writes, as the Go kubelet's volume.SetVolumeOwnership does: every file
// and directory gets the group and group read/write, group read only on a read-only volume (ConfigMap, Secret,
// projected, downward API); directories also execute and setgid, so new files inherit the group. With
// fsGroupChangePolicy OnRootMismatch a volume whose root is right already is skipped.
import { chmod, lchown, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

const RW = 0o660;
const RO = 0o440;
const DIR_EXEC = 0o110;
const SETGID = 0o2000;

/**
 * Gives `dir` and what it holds to group `gid` with group access (read only when `readOnly`); `policy` is
 * fsGroupChangePolicy.
 */
export async function applyFsGroup(dir: string, gid: number, policy = "Always", readOnly = false): Promise<void> {
  const access = readOnly ? RO : RW;
  if (policy === "OnRootMismatch") {
    const root = await lstat(dir);
    if (root.gid === gid && (root.mode & (access | DIR_EXEC | SETGID)) === (access | DIR_EXEC | SETGID)) return;
  }
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path);
    await lchown(path, -1, gid);
    // A symlink's own mode means nothing, and chmod would follow it out of the volume.
    if (info.isSymbolicLink()) return;
    const directory = info.isDirectory();
    await chmod(path, (info.mode & 0o7777) | access | (directory ? DIR_EXEC | SETGID : 0));
    if (directory) for (const name of await readdir(path)) await walk(join(path, name));
  };
  await walk(dir);
}
