// Image garbage collection on containerd, end to end: a second private containerd whose root (content
// store and snapshots: its image filesystem) is a 300 MiB tmpfs, filled by unused images; the compiled
// kubelet frees it through the CRI, keeping the image its pod uses, the sandbox image and an image
// younger than --minimum_image_ttl_duration.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describeWithServices, type TestServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { commonFlags, IMAGE_GC_FLAGS, IMAGE_MAX_AGE_FLAGS, removeDir, tempDir } from "./harness.ts";

/** A private containerd (the test services' config, its root on a tmpfs of `sizeMb`); stop() kills it and unmounts. */
async function smallContainerd(services: TestServices, dir: string, sizeMb: number) {
  const root = join(dir, "root");
  mkdirSync(root, { recursive: true });
  const mount = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m`, "tmpfs", root], { encoding: "utf8" });
  if (mount.status !== 0) throw new Error(`cannot mount a tmpfs for the small containerd root: ${mount.stderr}`);
  const main = dirname(services.containerd.replace(/^unix:\/\//, ""));
  const socket = join(dir, "containerd.sock");
  const config = readFileSync(join(main, "config.toml"), "utf8")
    .replaceAll(`${main}/root`, root)
    .replaceAll(`${main}/state`, join(dir, "state"))
    .replaceAll(`${main}/runc`, join(dir, "runc"))
    .replaceAll(`${main}/containerd.sock`, socket);
  writeFileSync(join(dir, "config.toml"), config);
  /** containerd's own sandbox image (sandbox_image), which the test dockerd has by its short name. */
  const sandboxImage = /sandbox_image = "([^"]+)"/.exec(config)![1]!;
  const child = spawn("containerd", ["--config", join(dir, "config.toml")], { stdio: "ignore" });
  await waitFor("the small containerd", () => existsSync(socket), 60_000);
  const ctr = (...args: string[]) => {
    const run = spawnSync("ctr", ["-a", socket, "-n", "k8s.io", ...args], { encoding: "utf8" });
    if (run.status !== 0) throw new Error(`ctr ${args.join(" ")}: ${run.stderr}`);
    return run.stdout;
  };
  await waitFor("the small containerd answering", () => spawnSync("ctr", ["-a", socket, "version"]).status === 0);
  return {
    endpoint: `unix://${socket}`,
    sandboxImage,
    ctr,
    has: (ref: string) => ctr("images", "ls", "-q").split("\n").includes(ref),
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      spawnSync("sh", [
        "-c",
        `awk -v d="${dir}/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | xargs -r umount -l`,
      ]);
      spawnSync("umount", ["-l", root]);
    },
  };
}

describeWithServices("image garbage collection on containerd", (services: TestServices) => {
  const dir = tempDir("imagegc-ctrd");
  const manifests = join(dir, "manifests");
  const rootDir = join(dir, "kubelet");
  let small: Awaited<ReturnType<typeof smallContainerd>>;
  let kubelet: Kubelet;
  const dockerHost = ["-H", services.dockerHost];
  /** `kubelet run` on the small containerd with the test's manifests and root dir, and `flags`. */
  const startOnSmall = (flags: string[]) =>
    startKubelet([
      "run",
      "-c",
      manifests,
      ...commonFlags(rootDir),
      "--container_runtime",
      "remote",
      "--container_runtime_endpoint",
      small.endpoint,
      "--pod_logs_dir",
      join(rootDir, "pod-logs"),
      "--network_container_image",
      services.pause,
      ...flags,
    ]);
  /** An image of one layer holding `mb` MiB of random bytes, made by the test dockerd and moved into the small containerd. */
  const filler = (ref: string, mb: number) => {
    const layer = join(dir, "layer");
    mkdirSync(layer, { recursive: true });
    const script = [
      `head -c ${mb}M /dev/urandom > ${layer}/blob`,
      `tar -C ${layer} -c . | docker ${dockerHost.join(" ")} import - ${ref} >/dev/null`,
      `docker ${dockerHost.join(" ")} save ${ref} | ctr -a ${small.endpoint.slice(7)} -n k8s.io images import - >/dev/null`,
      `docker ${dockerHost.join(" ")} rmi ${ref} >/dev/null`,
    ].join(" && ");
    const made = spawnSync("sh", ["-c", script], { encoding: "utf8" });
    if (made.status !== 0) throw new Error(`filler ${ref}: ${made.stderr}`);
  };

  beforeAll(async () => {
    mkdirSync(manifests, { recursive: true });
    small = await smallContainerd(services, join(dir, "containerd"), 300);
    const moved = spawnSync(
      "sh",
      [
        "-c",
        `docker ${dockerHost.join(" ")} save local/busybox:stable ${small.sandboxImage.replace(/^docker\.io\//, "")} | ctr -a ${small.endpoint.slice(7)} -n k8s.io images import - >/dev/null`,
      ],
      { encoding: "utf8" },
    );
    if (moved.status !== 0) throw new Error(`cannot move the test images: ${moved.stderr}`);
    filler("local/old-a:1", 40);
    filler("local/old-b:1", 40);
  }, 120_000);
  killKubeletsAfterAll();
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    if (small) {
      // Each task's shim outlives containerd unless the task is deleted first.
      for (const id of small.ctr("tasks", "ls", "-q").split("\n").filter(Boolean))
        spawnSync("ctr", ["-a", small.endpoint.slice(7), "-n", "k8s.io", "tasks", "delete", "--force", id]);
      await small.stop();
    }
    removeDir(dir);
  });

  test("frees a full image filesystem of unused images, keeping the used, the sandbox and young images", async () => {
    writeFileSync(
      join(manifests, "app.yaml"),
      `{ apiVersion: v1, kind: Pod, metadata: { name: e2e-imagegc-ctrd }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: app, image: "${services.busybox}", command: ["sleep", "3600"] }] } }\n`,
    );
    const started = Date.now();
    kubelet = await startOnSmall(IMAGE_GC_FLAGS);
    await kubelet.waitForPod("e2e-imagegc-ctrd", "running", (p) => p.status?.phase === "Running", 60_000);
    expect(small.has("docker.io/local/old-a:1") && small.has("docker.io/local/old-b:1")).toBe(true);
    // Older than the minimum age by the time the disk fills; the image imported now is younger than it.
    await new Promise((r) => setTimeout(r, Math.max(0, started + 16_000 - Date.now())));
    filler("local/young:1", 40);
    await kubelet.waitFor(
      "both old images removed",
      () => !small.has("docker.io/local/old-a:1") && !small.has("docker.io/local/old-b:1"),
      60_000,
    );
    expect(small.has("docker.io/local/young:1")).toBe(true);
    expect(small.has("docker.io/local/busybox:stable")).toBe(true);
    expect(small.has(small.sandboxImage)).toBe(true);
    await kubelet.waitFor("the collection logged", () =>
      kubelet.output.includes("image garbage collection removed docker.io/local/old-a:1"),
    );
  }, 180_000);

  test("imageMaximumGCAge removes an image unused for longer, with the disk far below the threshold", async () => {
    await kubelet.stop();
    filler("local/stale:1", 1);
    kubelet = await startOnSmall(IMAGE_MAX_AGE_FLAGS);
    await kubelet.waitFor("the stale image removed", () => !small.has("docker.io/local/stale:1"), 60_000);
    expect(small.has("docker.io/local/busybox:stable")).toBe(true); // the running pod's
    expect(small.has(small.sandboxImage)).toBe(true);
    // The removal is logged once the runtime has answered: wait for the line rather than race it.
    await kubelet.waitFor("the removal logged", () =>
      kubelet.output.includes("image garbage collection removed docker.io/local/stale:1 ("),
    );
    expect(kubelet.output).toMatch(
      /docker\.io\/local\/stale:1 \(\d+ bytes, unused for longer than imageMaximumGCAge 4s\)/,
    );
  }, 120_000);
});
