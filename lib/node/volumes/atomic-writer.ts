// Writes a volume's files the way the kubelet's AtomicWriter does: the files go into a fresh
// timestamped directory, a `..data` symlink is swapped to it with one rename, and each visible name
// is a symlink through `..data`. A reader (the container) sees the old set or the new one, never half.
import {
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
  chmod,
} from "node:fs/promises";
import { dirname, join } from "node:path";

/** One file of a volume: its bytes and permission bits. */
export interface VolumeFile {
  data: Buffer;
  mode: number;
}

const DATA_DIR = "..data";
const DATA_DIR_TMP = "..data_tmp";

/**
 * Makes `dir` hold exactly `payload` (relative path → file). Resolves to false when it already did
 * (nothing is touched), true when a new version was swapped in.
 */
export async function writeAtomically(
  dir: string,
  payload: Map<string, VolumeFile>,
  now = new Date(),
): Promise<boolean> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const current = await readlink(join(dir, DATA_DIR)).catch(() => undefined);
  if (current !== undefined && (await holds(join(dir, current), payload))) return false;

  const stamp = now.toISOString().replace(/[-:T]/g, "_").replace(/\..*$/, ""); // Go's "2006_01_02_15_04_05"
  const version = await mkdtemp(join(dir, `..${stamp}.`));
  await chmod(version, 0o755);
  for (const [path, file] of payload) {
    const target = join(version, path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await writeFile(target, file.data, { mode: file.mode });
    await chmod(target, file.mode); // writeFile's mode is filtered through the umask
  }
  const name = version.slice(dir.length + 1);
  await rm(join(dir, DATA_DIR_TMP), { force: true });
  await symlink(name, join(dir, DATA_DIR_TMP));
  await rename(join(dir, DATA_DIR_TMP), join(dir, DATA_DIR));

  const visible = new Set([...payload.keys()].map((path) => path.split("/")[0]!));
  for (const top of visible) {
    const link = join(dir, top);
    const existing = await readlink(link).catch(() => undefined);
    if (existing === join(DATA_DIR, top)) continue;
    await rm(link, { force: true, recursive: true });
    await symlink(join(DATA_DIR, top), link);
  }
  for (const entry of await readdir(dir)) {
    if (entry.startsWith("..") ? entry === name || entry === DATA_DIR : visible.has(entry)) continue;
    // Old versions, and names the new payload no longer has (their links would dangle).
    await rm(join(dir, entry), { recursive: true, force: true });
  }
  return true;
}

/** True when `version` holds exactly the payload, bytes and modes. */
async function holds(version: string, payload: Map<string, VolumeFile>): Promise<boolean> {
  const files = await listFiles(version).catch(() => undefined);
  if (!files || files.length !== payload.size) return false;
  for (const [path, file] of payload) {
    const info = await stat(join(version, path)).catch(() => undefined);
    if (!info?.isFile() || (info.mode & 0o777) !== file.mode || info.size !== file.data.length) return false;
    if (!(await readFile(join(version, path))).equals(file.data)) return false;
  }
  return true;
}

async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir)) {
    const info = await lstat(join(dir, entry));
    if (info.isDirectory()) out.push(...(await listFiles(join(dir, entry), `${prefix}${entry}/`)));
    else out.push(`${prefix}${entry}`);
  }
  return out;
}
