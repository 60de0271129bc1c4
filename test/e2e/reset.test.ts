// `kubelet reset` end to end on each runtime of the matrix: pods started by `runonce` (one with a
// memory-backed emptyDir, a tmpfs mount under root_dir) are removed with their sandboxes, pod
// directories and log directories; `--dry-run` removes nothing; another node's pods on the same
// runtime stay; a held lock file refuses the reset; pods whose PID 1 ignores SIGTERM stop in parallel, a line
// each.
import { afterAll, expect } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tryLockFile } from "../../lib/platform/file-lock.ts";
import { commonFlags, describeOnRuntimes, removeDir, runBinary, tempDir, test, testCgroupRoot } from "./harness.ts";

const PODS = ["e2e-reset-a", "e2e-reset-b"];
/** The grace period of the pods whose PID 1 ignores SIGTERM, in seconds. */
const GRACE = 6;

describeOnRuntimes("kubelet reset", (services, rt) => {
  const rootDir = tempDir("reset");
  const otherRoot = tempDir("reset-other");
  const manifests = tempDir("reset-pods");
  const otherManifests = tempDir("reset-other-pods");
  const node = ["--hostname_override", "e2e-reset-node", ...rt.flags(rootDir)];
  /** A pod whose container sleeps, stopped within a second; `memoryVolume` adds a tmpfs-backed emptyDir. */
  const pod = (name: string, memoryVolume = false) => {
    const mount = memoryVolume ? ", volumeMounts: [{ name: scratch, mountPath: /scratch }]" : "";
    const volume = memoryVolume ? ", volumes: [{ name: scratch, emptyDir: { medium: Memory } }]" : "";
    const app = `{ name: app, image: "${services.busybox}", command: [sleep, "600"]${mount} }`;
    return `{ apiVersion: v1, kind: Pod, metadata: { name: ${name} }, spec: { terminationGracePeriodSeconds: 1, containers: [${app}]${volume} } }\n`;
  };
  writeFileSync(join(manifests, "a.yaml"), pod("e2e-reset-a", true));
  writeFileSync(join(manifests, "b.yaml"), pod("e2e-reset-b"));
  writeFileSync(join(otherManifests, "other.yaml"), pod("e2e-reset-other"));
  const mountsUnder = (dir: string) =>
    readFileSync("/proc/self/mounts", "utf8")
      .split("\n")
      .filter((line) => (line.split(" ")[1] ?? "").startsWith(`${dir}/`));
  /** The pod cgroups (`pod<uid>` under either driver's names) of this node's cgroup root, in the memory hierarchy. */
  const podCgroups = (dir = join("/sys/fs/cgroup/memory", testCgroupRoot(rootDir))): string[] =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .flatMap((e) => (/pod[0-9a-f_-]+(\.slice)?$/.test(e.name) ? [e.name] : podCgroups(join(dir, e.name))))
      : [];
  const runonce = () => {
    const result = runBinary(["runonce", "-c", manifests, ...node, "--runonce_timeout", "90s"]);
    expect(result.stdout).toContain("2 pods running or completed");
    expect(result.code).toBe(0);
  };

  afterAll(async () => {
    await rt.removePods(...PODS, "e2e-reset-other");
    for (const dir of [rootDir, otherRoot, manifests, otherManifests]) removeDir(dir);
  });

  test("after runonce, reset removes the pods' containers, sandboxes, cgroups, pod directories (unmounting their volumes) and log directories, and nothing of another node", async () => {
    const other = runBinary([
      "runonce",
      "-c",
      otherManifests,
      "--hostname_override",
      "e2e-reset-other-node",
      ...rt.flags(otherRoot),
      "--runonce_timeout",
      "90s",
    ]);
    expect(other.code).toBe(0);
    runonce();
    const uids = readdirSync(join(rootDir, "pods"));
    expect(uids).toHaveLength(2);
    expect(mountsUnder(rootDir).length).toBeGreaterThan(0);
    expect(podCgroups()).toHaveLength(2);

    const reset = runBinary(["reset", ...node]);
    expect(reset.stderr).toBe("");
    expect(reset.code).toBe(0);
    for (const name of PODS) {
      expect(reset.stdout).toContain(`removing pod sandbox default/${name} (`);
      expect(reset.stdout).toMatch(
        new RegExp(`^removing container k8s_app_${name}_default_\\S+ \\(pod default/${name}\\)$`, "m"),
      );
      expect(await rt.podContainers(name)).toEqual([]);
      expect(await rt.podSandboxes(name)).toEqual([]);
    }
    expect(reset.stdout).toMatch(
      /^reset: removed 2 pod sandboxes, 2 containers, 2 pod cgroups(,| and) 2 pod directories/m,
    );
    expect(mountsUnder(rootDir)).toEqual([]);
    expect(podCgroups()).toEqual([]);
    expect(existsSync(join(rootDir, "pods"))).toBe(false);
    expect(existsSync(join(rootDir, "kubelet.lock"))).toBe(false);
    if (rt.kind === "remote") {
      expect(reset.stdout).toContain("removing pod log directory");
      expect(readdirSync(join(rootDir, "pod-logs")).filter((d) => uids.some((uid) => d.endsWith(`_${uid}`)))).toEqual(
        [],
      );
    }
    // The other node's pod, on the same runtime, is untouched.
    expect(await rt.running("e2e-reset-other", "app")).toBeDefined();

    const again = runBinary(["reset", ...node]);
    expect(again.stdout).toMatch(/^nothing to reset: no pods of this kubelet on the .* and no state under /m);
    expect(again.code).toBe(0);
  });

  test("reset stops three pods whose PID 1 ignores SIGTERM in about one grace period, not three, with a line per pod", async () => {
    const stubborn = ["e2e-reset-sigterm-a", "e2e-reset-sigterm-b", "e2e-reset-sigterm-c"];
    const dir = tempDir("reset-sigterm-pods");
    const root = tempDir("reset-sigterm");
    const flags = ["--hostname_override", "e2e-reset-sigterm-node", ...rt.flags(root)];
    try {
      // `sleep` as PID 1: the kernel gives PID 1 no default action for SIGTERM, so only SIGKILL ends it.
      for (const name of stubborn)
        writeFileSync(
          join(dir, `${name}.yaml`),
          `{ apiVersion: v1, kind: Pod, metadata: { name: ${name} }, spec: { terminationGracePeriodSeconds: ${GRACE}, containers: [{ name: app, image: "${services.busybox}", command: [sleep, "600"] }] } }\n`,
        );
      const started = runBinary(["runonce", "-c", dir, ...flags, "--runonce_timeout", "90s"]);
      expect(started.stdout).toContain("3 pods running or completed");
      const began = Date.now();
      const reset = runBinary(["reset", ...flags]);
      const seconds = (Date.now() - began) / 1000;
      expect(reset.code).toBe(0);
      // One after another they took 3 grace periods; together about one (and the sandboxes' own stops).
      expect(seconds).toBeGreaterThanOrEqual(GRACE);
      expect(seconds).toBeLessThan(2 * GRACE);
      for (const name of stubborn) {
        expect(reset.stdout).toContain(`stopping pod default/${name} (grace period ${GRACE}s)\n`);
        const stopped = reset.stdout.split("\n").filter((line) => line.startsWith(`stopped pod default/${name} `));
        expect(stopped).toHaveLength(1);
        expect(stopped[0]).toMatch(
          new RegExp(
            `^stopped pod default/${name} in \\d+\\.\\ds \\(container app ignored SIGTERM; killed after ${GRACE}s\\)$`,
          ),
        );
      }
      expect(reset.stdout).toMatch(/^reset: removed 3 pod sandboxes, 3 containers/m);
    } finally {
      await rt.removePods(...stubborn);
      removeDir(dir);
      removeDir(root);
    }
  });

  test("reset --dry-run lists each container, sandbox, cgroup and pod directory it would remove, and removes none", async () => {
    runonce();
    const before = (await Promise.all(PODS.map((p) => rt.podContainers(p)))).flat().map((c) => c.id);
    const dry = runBinary(["reset", "--dry-run", ...node]);
    expect(dry.code).toBe(0);
    for (const name of PODS) {
      expect(dry.stdout).toContain(`would remove pod sandbox default/${name} (`);
      expect(dry.stdout).toMatch(new RegExp(`^would remove container k8s_app_${name}_default_`, "m"));
    }
    expect(dry.stdout).toMatch(/^would remove pod directory .*\/pods\//m);
    expect(dry.stdout).toMatch(
      /^dry run: would remove 2 pod sandboxes, 2 containers, 2 pod cgroups(,| and) 2 pod directories.*; nothing was changed$/m,
    );
    const after = (await Promise.all(PODS.map((p) => rt.podContainers(p)))).flat();
    expect(after.map((c) => c.id).sort()).toEqual(before.sort());
    expect(after.every((c) => c.state === "CONTAINER_RUNNING")).toBe(true);
    expect(readdirSync(join(rootDir, "pods"))).toHaveLength(2);
    expect(podCgroups()).toHaveLength(2);
  });

  test("reset on a runtime that does not answer fails in one line naming it, and takes no lock", () => {
    const away = join(rootDir, "no-runtime.sock");
    const flags =
      rt.kind === "docker"
        ? ["--docker_endpoint", `unix://${away}`]
        : ["--container_runtime", "remote", "--container_runtime_endpoint", `unix://${away}`];
    const fresh = join(rootDir, "unreachable-root");
    const result = runBinary(["reset", ...commonFlags(fresh), ...flags, "--runtime_request_timeout", "5s"]);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith(
      `kubelet: reset: cannot reach the ${rt.kind === "docker" ? "Docker Engine" : "CRI runtime"} at unix://${away}: `,
    );
    expect(result.code).toBe(1);
    expect(existsSync(fresh)).toBe(false);
  });

  test("reset refuses while a live process holds the lock file, naming its pid, and removes nothing", async () => {
    // Held as a kubelet holds it (flock), with this process's pid written in it.
    const lock = (await tryLockFile(join(rootDir, "kubelet.lock")))!;
    lock.write(`${process.pid}\n`);
    const refused = runBinary(["reset", ...node]);
    lock.release();
    expect(refused.stderr).toContain(
      `kubelet: reset: a kubelet (pid ${process.pid}) holds --lock_file "${join(rootDir, "kubelet.lock")}": stop it first`,
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(await rt.running("e2e-reset-a", "app")).toBeDefined();
    expect(readdirSync(join(rootDir, "pods"))).toHaveLength(2);
  });
});
