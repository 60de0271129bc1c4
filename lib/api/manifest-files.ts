// Which files in a manifest directory are manifests: .yaml/.yml/.json, never dotfiles (so never
// editor leftovers either: `web.yaml~`, `.web.yaml.swp`, `web.yaml.bak` fail the extension check;
// the standalone kubelet ran `web.yaml~` as a pod); and reading one within the size limit.
import { constants } from "node:fs";
import { open, readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";

const MANIFEST_EXTENSION = /\.(ya?ml|json)$/i;

/** True for a file name the kubelet reads as a manifest. */
export function isManifestFile(path: string): boolean {
  const name = basename(path);
  return !name.startsWith(".") && MANIFEST_EXTENSION.test(name);
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

/**
 * The file's bytes, or undefined when it is larger than `maxBytes` (the rest is never read).
 * Opened non-blocking and refused unless a regular file, so a FIFO named web.yaml cannot hang the source.
 */
export async function readManifestFile(file: string, maxBytes: number): Promise<Buffer | undefined> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error("not a regular file");
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      // Sized by stat first, then in 64 KiB steps in case the file grows while it is read.
      const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(maxBytes + 1 - size, size ? 65_536 : info.size + 1)));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, size);
      if (bytesRead === 0) return Buffer.concat(chunks, size);
      size += bytesRead;
      if (size > maxBytes) return undefined;
      chunks.push(chunk.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
}
