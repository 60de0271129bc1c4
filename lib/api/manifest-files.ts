// Which files in a manifest directory are manifests: .yaml/.yml/.json, never dotfiles or
// editor leftovers (the standalone kubelet ran `web.yaml~` as a pod; we don't).
import { readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";

const MANIFEST_EXTENSION = /\.(ya?ml|json)$/i;
const EDITOR_LEFTOVER =
  /(~|\.sw[a-p]|\.swx|\.bak|\.orig|\.rej|\.tmp|\.dpkg-(old|new|dist)|\.rpm(new|save))$|^#.*#$|^4913$/i;

/** True for a file name the kubelet reads as a manifest. */
export function isManifestFile(path: string): boolean {
  const name = basename(path);
  return !name.startsWith(".") && !EDITOR_LEFTOVER.test(name) && MANIFEST_EXTENSION.test(name);
}

/** The manifest files of a file or a directory (not recursive), in name order. */
export async function listManifestFiles(path: string): Promise<string[]> {
  const info = await stat(path);
  if (!info.isDirectory()) return [path];
  const entries = await readdir(path, { withFileTypes: true });
  return entries
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && isManifestFile(e.name))
    .map((e) => join(path, e.name))
    .sort();
}
