// Volumes on a real directory: emptyDir, tmpfs for medium Memory, hostPath type checks, teardown.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testPod } from "../../testing/pods.ts";
import { createVolumeManager } from "./volumes.ts";
import { noConfigs } from "../../api/config-objects.ts";

const NODE = { cpus: 2, memoryBytes: 2 ** 30 };

const root = () => mkdtempSync(join(tmpdir(), "kubelet-volumes-"));
// Mounting a tmpfs needs root. On a developer's machine the test is skipped without it; CI runs as
// root, so there it always runs (and fails if it cannot mount) instead of skipping silently.
const canMount = process.getuid?.() === 0 || process.env.CI === "true";

describe("volume manager", () => {
  test("creates emptyDir volumes under <root_dir>/pods/<uid>/volumes and removes them with the pod", async () => {
    const rootDir = root();
    const volumes = createVolumeManager({ configs: noConfigs, rootDir });
    const pod = testPod("v", {
      volumes: [{ name: "scratch", emptyDir: {} }],
      containers: [{ name: "c", image: "b:1", volumeMounts: [{ name: "scratch", mountPath: "/s" }] }],
    });
    const paths = await volumes.setup(pod, NODE);
    const dir = join(rootDir, "pods", pod.metadata.uid, "volumes", "kubernetes.io~empty-dir", "scratch");
    expect(paths.get("scratch")).toEqual({ hostPath: dir });
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(await volumes.podDirs()).toEqual([pod.metadata.uid]);
    await volumes.teardown(pod.metadata.uid);
    expect(existsSync(join(rootDir, "pods", pod.metadata.uid))).toBe(false);
  });

  test.skipIf(!canMount)(
    "mounts a tmpfs with the size limit for medium Memory, and unmounts it on teardown",
    async () => {
      const rootDir = root();
      const volumes = createVolumeManager({ configs: noConfigs, rootDir });
      const pod = testPod("m", { volumes: [{ name: "cache", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } }] });
      const dir = (await volumes.setup(pod, NODE)).get("cache")!.hostPath;
      const mount = readFileSync("/proc/self/mounts", "utf8")
        .split("\n")
        .find((l) => l.split(" ")[1] === dir);
      expect(mount).toContain("tmpfs");
      expect(mount).toContain("size=8192k");
      await volumes.teardown(pod.metadata.uid);
      expect(readFileSync("/proc/self/mounts", "utf8")).not.toContain(dir);
    },
  );

  test("checks hostPath types and creates what the type asks for", async () => {
    const rootDir = root();
    const host = root();
    writeFileSync(join(host, "file"), "x");
    mkdirSync(join(host, "dir"));
    const volumes = createVolumeManager({ configs: noConfigs, rootDir });
    const withHostPath = (path: string, type: string) =>
      testPod("h", { volumes: [{ name: "h", hostPath: { path, type } }] });
    await volumes.setup(withHostPath(join(host, "new/dir"), "DirectoryOrCreate"), NODE);
    expect(statSync(join(host, "new/dir")).isDirectory()).toBe(true);
    await volumes.setup(withHostPath(join(host, "created"), "FileOrCreate"), NODE);
    expect(statSync(join(host, "created")).isFile()).toBe(true);
    await volumes.setup(withHostPath(join(host, "dir"), "Directory"), NODE);
    await expect(volumes.setup(withHostPath(join(host, "file"), "Directory"), NODE)).rejects.toThrow(
      `hostPath type check failed: ${join(host, "file")} is not a directory`,
    );
    await expect(volumes.setup(withHostPath(join(host, "missing"), "File"), NODE)).rejects.toMatchObject({
      code: "VolumeSetupFailed",
    });
    await expect(volumes.setup(withHostPath(join(host, "file"), "Socket"), NODE)).rejects.toThrow("is not a socket");
  });

  test("a hostPath whose symbolic link leads into a protected directory is refused to an untrusted source, before anything is created", async () => {
    const host = root();
    const guarded = join(host, "guarded");
    mkdirSync(guarded);
    mkdirSync(join(host, "allowed"));
    // What a pod mounting the allowed directory could leave behind for the next one.
    symlinkSync(guarded, join(host, "allowed/link"));
    symlinkSync("/etc/cron.d", join(host, "allowed/cron"));
    const volumes = createVolumeManager({
      configs: noConfigs,
      rootDir: root(),
      hostPaths: { trustedSources: ["file"], protectedHostPaths: [guarded] },
    });
    const pod = (path: string, source: "file" | "http", type = "") =>
      testPod("h", { volumes: [{ name: "h", hostPath: { path, type } }] }, { source });
    await expect(volumes.setup(pod(join(host, "allowed/link/new"), "http", "DirectoryOrCreate"), NODE)).rejects.toThrow(
      `volume "h" of pod default/h: hostPath "${join(host, "allowed/link/new")}" leads to "${join(guarded, "new")}" through a symbolic link: may not mount ${guarded} or a path in or above it from the http source`,
    );
    expect(existsSync(join(guarded, "new"))).toBe(false);
    await expect(volumes.setup(pod(join(host, "allowed/cron"), "http"), NODE)).rejects.toThrow(
      'leads to "/etc/cron.d" through a symbolic link: may not mount /etc or a path in or above it from the http source',
    );
    // A trusted source, and a path with no link, as validation judged them.
    await volumes.setup(pod(join(host, "allowed/link/new"), "file", "DirectoryOrCreate"), NODE);
    expect(statSync(join(guarded, "new")).isDirectory()).toBe(true);
    await volumes.setup(pod(join(host, "allowed"), "http"), NODE);
  });

  test("teardown never touches what a hostPath points at", async () => {
    const rootDir = root();
    const host = root();
    writeFileSync(join(host, "precious"), "keep");
    const volumes = createVolumeManager({ configs: noConfigs, rootDir });
    const pod = testPod("keep", {
      volumes: [
        { name: "h", hostPath: { path: host } },
        { name: "e", emptyDir: {} },
      ],
    });
    const emptyDir = (await volumes.setup(pod, NODE)).get("e")!.hostPath;
    await volumes.teardown(pod.metadata.uid);
    expect(existsSync(emptyDir)).toBe(false); // teardown did run
    expect(readFileSync(join(host, "precious"), "utf8")).toBe("keep");
  });

  // chown needs root: CI runs as root, so there it always runs.
  test.skipIf(process.getuid?.() !== 0)(
    "fsGroup owns the files the kubelet writes with group read only, and an emptyDir with group read/write",
    async () => {
      const rootDir = root();
      const volumes = createVolumeManager({ configs: noConfigs, rootDir });
      const pod = testPod("fsg", {
        securityContext: { fsGroup: 3456 },
        volumes: [
          { name: "info", downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] } },
          { name: "scratch", emptyDir: {} },
        ],
      });
      const paths = await volumes.setup(pod, NODE);
      const info = paths.get("info")!.hostPath;
      const file = statSync(join(info, "name")); // through the atomic writer's ..data link
      expect([file.gid, file.mode & 0o070]).toEqual([3456, 0o040]);
      const dir = statSync(info);
      expect([dir.gid, dir.mode & 0o2070]).toEqual([3456, 0o2050]);
      const scratch = statSync(paths.get("scratch")!.hostPath);
      expect([scratch.gid, scratch.mode & 0o2070]).toEqual([3456, 0o2070]);
      await volumes.teardown(pod.metadata.uid);
    },
  );
});
