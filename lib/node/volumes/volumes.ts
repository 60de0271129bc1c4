// Pod volumes on the host: emptyDir under <root_dir>/pods/<uid>/volumes (tmpfs for medium Memory),
// hostPath with its type checks, and configMap, secret, projected and downwardAPI volumes written by
// the atomic writer (Secrets and projected volumes on a tmpfs, never on disk). Pod directories are
// removed once their pod is gone.
import { execFile } from "node:child_process";
import { mkdir, open, readdir, readFile, realpath, rm, stat } from "node:fs/promises";
import { applyFsGroup } from "./fs-group.ts";
import { join, posix } from "node:path";
import { promisify } from "node:util";
import type { VolumeMount } from "../../container/container-config.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { parseQuantity } from "../../api/quantity.ts";
import { ANNOTATION, KubeletError, type Pod } from "../../api/types.ts";
import type { ConfigLookup } from "../../api/config-objects.ts";
import { podConfigRefs } from "../../api/config-refs.ts";
import { hostPathRefusal, type HostPathPolicy } from "../../api/host-paths.ts";
import { writeAtomically } from "./atomic-writer.ts";
import { isProjectedKind, volumePayload } from "./volume-payload.ts";

const run = promisify(execFile);

export interface VolumeManager {
  /**
   * Creates/checks every volume of a pod and (re)writes the files of its configMap, secret, projected and
   * downwardAPI volumes; returns volume name → host path. A missing ConfigMap or Secret throws
   * KubeletError("CreateContainerConfigError").
   */
  setup(pod: Pod, node: { cpus: number; memoryBytes: number }): Promise<Map<string, VolumeMount>>;
  /** Changes whenever setup would write something different (the spec, a referenced object, labels). */
  version(pod: Pod): string;
  /** Unmounts and removes a pod's directory (never touches hostPath targets). */
  teardown(podUid: string): Promise<void>;
  /** Uids that have a pod directory. */
  podDirs(): Promise<string[]>;
  /**
   * Creates the empty host file mounted at a container instance's terminationMessagePath
   * (`pods/<uid>/containers/<name>/<attempt>`), dropping those of attempts long gone; returns its path.
   */
  terminationLog(podUid: string, container: string, attempt: number): Promise<string>;
  /** Up to 4 KiB of what an instance wrote to its termination log ("" when none). */
  readTerminationLog(podUid: string, container: string, attempt: number): Promise<string>;
}

/** The kubelet's cap on a termination message (bytes). */
export const MAX_TERMINATION_MESSAGE = 4096;

/** Where a pod's emptyDir volume lives on the host. */
export function emptyDirPath(rootDir: string, podUid: string, volume: string): string {
  return join(rootDir, "pods", podUid, "volumes", "kubernetes.io~empty-dir", volume);
}

export function createVolumeManager(options: {
  rootDir: string;
  configs: ConfigLookup;
  /** The host path policy validation applied to the path as written, applied again to where its symbolic links lead. */
  hostPaths?: HostPathPolicy;
  log?: Logger;
}): VolumeManager {
  const log = options.log ?? silentLogger;
  const podsDir = join(options.rootDir, "pods");
  const fail = (pod: Pod, volume: string, why: string) =>
    new KubeletError(
      "VolumeSetupFailed",
      `volume "${volume}" of pod ${pod.metadata.namespace}/${pod.metadata.name}: ${why}`,
    );

  return {
    version(pod) {
      const objects = podConfigRefs(pod)
        .filter((ref) => ref.use === "volume")
        .map((ref) => {
          const object = options.configs.get(ref.kind, pod.metadata.namespace, ref.name);
          return `${ref.kind}/${ref.name}#${object?.metadata.annotations[ANNOTATION.hash] ?? "-"}`;
        });
      const downward = (pod.spec.volumes ?? []).some(
        (v) => v.downwardAPI || v.projected?.sources?.some((s) => s.downwardAPI),
      );
      return JSON.stringify([
        pod.spec.volumes ?? [],
        objects,
        downward ? [pod.metadata.labels, pod.metadata.annotations] : [],
      ]);
    },
    async setup(pod, node) {
      const paths = new Map<string, VolumeMount>();
      for (const volume of pod.spec.volumes ?? []) {
        if (isProjectedKind(volume)) {
          const plugin = volume.configMap
            ? "kubernetes.io~configmap"
            : volume.secret
              ? "kubernetes.io~secret"
              : volume.projected
                ? "kubernetes.io~projected"
                : "kubernetes.io~downward-api";
          const dir = join(podsDir, pod.metadata.uid, "volumes", plugin, volume.name);
          const payload = volumePayload(pod, volume, options.configs, node);
          await mkdir(dir, { recursive: true, mode: 0o755 });
          // Secret material must never reach a disk: secret and projected volumes live on a tmpfs.
          if ((volume.secret || volume.projected) && !(await isMountPoint(dir, log))) {
            try {
              await run("mount", ["-t", "tmpfs", "-o", "mode=0755", "tmpfs", dir]);
            } catch (error) {
              throw fail(
                pod,
                volume.name,
                `cannot mount a tmpfs for its Secret files (the kubelet must run as root): ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`,
              );
            }
          }
          if (await writeAtomically(dir, payload))
            log.debug(`wrote volume "${volume.name}" of pod ${pod.metadata.namespace}/${pod.metadata.name}`);
          await ownedByFsGroup(pod, dir, true);
          paths.set(volume.name, { hostPath: dir });
        } else if (volume.emptyDir) {
          const dir = emptyDirPath(options.rootDir, pod.metadata.uid, volume.name);
          await mkdir(dir, { recursive: true, mode: 0o777 });
          if (volume.emptyDir.medium === "Memory" && !(await isMountPoint(dir, log))) {
            const size =
              volume.emptyDir.sizeLimit !== undefined
                ? `,size=${Math.round(parseQuantity(volume.emptyDir.sizeLimit)!)}`
                : "";
            try {
              await run("mount", ["-t", "tmpfs", "-o", `mode=0777${size}`, "tmpfs", dir]);
            } catch (error) {
              throw fail(
                pod,
                volume.name,
                `cannot mount a tmpfs for medium Memory (the kubelet must run as root): ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`,
              );
            }
          }
          await ownedByFsGroup(pod, dir, false);
          paths.set(volume.name, { hostPath: dir });
        } else if (volume.hostPath) {
          // Before the type check, which may create directories through the links.
          if (options.hostPaths)
            await refuseLinkedHostPath(pod, volume.hostPath.path, options.hostPaths, (why) =>
              fail(pod, volume.name, why),
            );
          await checkHostPath(volume.hostPath.path, volume.hostPath.type ?? "", (why) => fail(pod, volume.name, why));
          paths.set(volume.name, { hostPath: volume.hostPath.path });
        } else {
          throw fail(
            pod,
            volume.name,
            "only emptyDir, hostPath, configMap, secret, projected and downwardAPI volumes are supported",
          );
        }
      }
      return paths;
    },
    async teardown(podUid) {
      const dir = join(podsDir, podUid);
      for (const mountPoint of await mountsUnder(dir, log)) {
        await run("umount", [mountPoint]).catch((error) =>
          log.warn(`cannot unmount ${mountPoint}: ${(error as Error).message}`),
        );
      }
      // rm never follows symlinks, so a link to a host path cannot take the host path with it.
      await rm(dir, { recursive: true, force: true });
    },
    async terminationLog(podUid, container, attempt) {
      const dir = join(podsDir, podUid, "containers", container);
      await mkdir(dir, { recursive: true });
      // A crash loop makes one file per attempt: keep the last few (statuses show the latest two).
      for (const name of await readdir(dir))
        if (/^\d+$/.test(name) && Number(name) < attempt - 2) await rm(join(dir, name), { force: true });
      const path = join(dir, String(attempt));
      await (await open(path, "w", 0o666)).close();
      return path;
    },
    async readTerminationLog(podUid, container, attempt) {
      const file = await open(join(podsDir, podUid, "containers", container, String(attempt)), "r").catch(
        () => undefined,
      );
      if (!file) return "";
      try {
        const buffer = Buffer.alloc(MAX_TERMINATION_MESSAGE);
        const { bytesRead } = await file.read(buffer, 0, MAX_TERMINATION_MESSAGE, 0);
        return buffer.subarray(0, bytesRead).toString("utf8");
      } finally {
        await file.close();
      }
    },
    async podDirs() {
      try {
        return (await readdir(podsDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
      } catch {
        return [];
      }
    },
  };
}

/** The pod's fsGroup, if it has one, on a volume the kubelet made (read-only: ConfigMap, Secret, projected, downward API). */
async function ownedByFsGroup(pod: Pod, dir: string, readOnly: boolean): Promise<void> {
  const context = pod.spec.securityContext;
  if (context?.fsGroup !== undefined)
    await applyFsGroup(dir, context.fsGroup, context.fsGroupChangePolicy ?? "Always", readOnly);
}

/**
 * `path` with its symbolic links resolved, as the runtime resolves a bind mount's source (a part that does not exist
 * yet stays as written).
 */
async function resolvedHostPath(path: string): Promise<string> {
  let existing = posix.normalize(path);
  const rest: string[] = [];
  for (;;) {
    const real = await realpath(existing).catch(() => undefined);
    if (real !== undefined) return posix.join(real, ...rest);
    if (existing === "/") return path;
    rest.unshift(posix.basename(existing));
    existing = posix.dirname(existing);
  }
}

/**
 * Refuses a hostPath whose symbolic links lead where the policy refuses the pod's source (a link another pod made
 * under an allowed directory, pointing at /etc): validation saw only the path as written.
 */
async function refuseLinkedHostPath(
  pod: Pod,
  path: string,
  policy: HostPathPolicy,
  fail: (why: string) => Error,
): Promise<void> {
  const real = await resolvedHostPath(path);
  if (real === posix.normalize(`${path}/`).replace(/\/+$/, "")) return;
  const refusal = hostPathRefusal(real, pod.metadata.annotations[ANNOTATION.source] ?? "", policy);
  if (refusal?.severity === "error")
    throw fail(`hostPath "${path}" leads to "${real}" through a symbolic link: ${refusal.detail}`);
}

async function checkHostPath(path: string, type: string, fail: (why: string) => Error): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  switch (type) {
    case "":
      return;
    case "DirectoryOrCreate":
      if (!info) await mkdir(path, { recursive: true, mode: 0o755 });
      else if (!info.isDirectory()) throw fail(`hostPath type check failed: ${path} is not a directory`);
      return;
    case "FileOrCreate":
      if (!info) {
        const file = await open(path, "a", 0o644).catch((error: Error) => {
          throw fail(`hostPath type check failed: cannot create ${path}: ${error.message}`);
        });
        await file.close();
      } else if (!info.isFile()) throw fail(`hostPath type check failed: ${path} is not a file`);
      return;
    default: {
      const expected: Record<string, [string, (s: NonNullable<typeof info>) => boolean]> = {
        Directory: ["a directory", (s) => s.isDirectory()],
        File: ["a file", (s) => s.isFile()],
        Socket: ["a socket", (s) => s.isSocket()],
        CharDevice: ["a character device", (s) => s.isCharacterDevice()],
        BlockDevice: ["a block device", (s) => s.isBlockDevice()],
      };
      const [what, is] = expected[type] ?? ["", () => false];
      if (!info) throw fail(`hostPath type check failed: ${path} does not exist (type ${type} expects ${what})`);
      if (!is(info)) throw fail(`hostPath type check failed: ${path} is not ${what}`);
    }
  }
}

async function isMountPoint(dir: string, log: Logger): Promise<boolean> {
  return (await mountsUnder(dir, log)).includes(dir);
}

/** Mount points at or below `dir`, deepest first (none, with a warning, when the mount table cannot be read). */
async function mountsUnder(dir: string, log: Logger): Promise<string[]> {
  const table = await readFile("/proc/self/mounts", "utf8").catch((error: Error) => {
    log.warn(`cannot read /proc/self/mounts (${error.message}): tmpfs volumes under ${dir} are not seen`);
    return "";
  });
  return table
    .split("\n")
    .map((line) => line.split(" ")[1]?.replace(/\\040/g, " "))
    .filter((point): point is string => !!point && (point === dir || point.startsWith(dir + "/")))
    .sort((a, b) => b.length - a.length);
}
