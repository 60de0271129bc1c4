// A container's subPath and subPathExpr mounts on the host, as the Go kubelet's makeMounts prepares them:
// subPathExpr expanded from the container's environment (every variable must have a value), then the same
// checks for both (relative, no '..'), the directory created inside the volume, and a path that resolves
// outside its volume through a symlink refused. Failures are CreateContainerConfigError.
import { lstat, mkdir, realpath } from "node:fs/promises";
import { join, sep } from "node:path";
import { expand } from "../../api/expand.ts";
import { KubeletError, type V1Container } from "../../api/types.ts";

const fail = (message: string) => new KubeletError("CreateContainerConfigError", message);

/** `subPathExpr` with `$(VAR)` from `env`; a variable without a value is an error, as ExpandContainerVolumeMounts. */
export function expandSubPath(expr: string, env: Map<string, string>): string {
  const missing = new Set<string>();
  const expanded = expand(expr, (name) => {
    const value = env.get(name);
    if (!value) missing.add(name);
    return value ?? "";
  });
  if (missing.size) throw fail(`missing value for ${[...missing].sort().join(", ")}`);
  return expanded;
}

/**
 * The host paths of the container's mounts that have a subPath or subPathExpr, by mountPath; each is created
 * (as a directory) when missing and checked to stay inside its volume.
 */
export async function subPathHostPaths(
  container: V1Container,
  env: Map<string, string>,
  volumes: Map<string, { hostPath: string }>,
): Promise<Map<string, string>> {
  const paths = new Map<string, string>();
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    const subPath = mount.subPathExpr ? expandSubPath(mount.subPathExpr, env) : mount.subPath;
    if (!volume || !subPath) continue;
    if (subPath.startsWith("/")) throw fail(`error SubPath \`${subPath}\` must not be an absolute path`);
    if (subPath.split("/").includes(".."))
      throw fail(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
    const root = await realpath(volume.hostPath);
    const host = join(volume.hostPath, subPath);
    if (!(await lstat(host).catch(() => undefined)))
      await mkdir(host, { recursive: true }).catch(() => {
        throw fail(
          `failed to create subPath directory for volumeMount "${mount.name}" of container "${container.name}"`,
        );
      });
    const resolved = await realpath(host);
    if (resolved !== root && !resolved.startsWith(root + sep))
      throw fail(
        `subpath "${subPath}" of volumeMount "${mount.name}" of container "${container.name}" resolves outside its volume (a symlink escapes it)`,
      );
    paths.set(mount.mountPath, resolved);
  }
  return paths;
}
