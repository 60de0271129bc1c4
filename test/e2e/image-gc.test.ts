// Image garbage collection end to end: a second private dockerd whose data root is a 200 MiB tmpfs,
// filled by unused images; the compiled kubelet frees it (least recently used first), keeping the
// image its pod uses, the pause image and an image younger than --minimum_image_ttl_duration.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices, type TestServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, docker, IMAGE_GC_FLAGS, IMAGE_MAX_AGE_FLAGS, removeDir, tempDir } from "./harness.ts";

/** A private dockerd on a tmpfs data root of `sizeMb`; stop() kills it by its pid and unmounts. */
async function smallDocker(dir: string, sizeMb: number) {
  const data = join(dir, "data");
  mkdirSync(data, { recursive: true });
  const mount = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m`, "tmpfs", data], { encoding: "utf8" });
  if (mount.status !== 0) throw new Error(`cannot mount a tmpfs for the small data root: ${mount.stderr}`);
  const socket = join(dir, "docker.sock");
  const child = spawn(
    "dockerd",
    [
      "--data-root",
      data,
      "--exec-root",
      join(dir, "exec"),
      "-H",
      `unix://${socket}`,
      "--pidfile",
      join(dir, "docker.pid"),
      "--bridge=none",
      "--iptables=false",
      "--ip-masq=false",
    ],
    { stdio: "ignore", detached: true },
  );
  const host = `unix://${socket}`;
  await waitFor("the small dockerd", () => spawnSync("docker", ["-H", host, "version"]).status === 0, 60_000);
  return {
    dockerHost: host,
    async stop() {
      const pid = Number(readFileSync(join(dir, "docker.pid"), "utf8"));
      const exited = new Promise((resolve) => child.once("exit", resolve));
      process.kill(pid, "SIGTERM");
      await exited;
      spawnSync("umount", [data]);
    },
  };
}

describeWithServices("image garbage collection", (services: TestServices) => {
  const dir = tempDir("imagegc");
  const manifests = join(dir, "manifests");
  const rootDir = join(dir, "root");
  let small: Awaited<ReturnType<typeof smallDocker>>;
  let kubelet: Kubelet;
  const on = (...args: string[]) => docker({ ...services, dockerHost: small.dockerHost }, ...args);
  const has = (ref: string) => on("images", "-q", ref) !== "";
  /** `kubelet run` on the small dockerd with the test's manifests and root dir, and `flags`. */
  const startOnSmall = (flags: string[]) =>
    startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags({ ...services, dockerHost: small.dockerHost }, rootDir),
      "--network_container_image",
      services.pause,
      ...flags,
    ]);
  /** An image of one layer holding `mb` MiB of random bytes. */
  const filler = (ref: string, mb: number) => {
    const layer = join(dir, "layer");
    mkdirSync(layer, { recursive: true });
    spawnSync("sh", ["-c", `head -c ${mb}M /dev/urandom > ${layer}/blob`]);
    const imported = spawnSync("sh", ["-c", `tar -C ${layer} -c . | docker -H ${small.dockerHost} import - ${ref}`], {
      encoding: "utf8",
    });
    if (imported.status !== 0) throw new Error(`docker import ${ref}: ${imported.stderr}`);
  };

  beforeAll(async () => {
    mkdirSync(manifests);
    small = await smallDocker(join(dir, "docker"), 200);
    for (const image of [services.busybox, services.pause])
      spawnSync("sh", ["-c", `docker -H ${services.dockerHost} save ${image} | docker -H ${small.dockerHost} load`]);
    filler("local/old-a:1", 40);
    filler("local/old-b:1", 40);
  }, 120_000);
  killKubeletsAfterAll();
  afterAll(async () => {
    if (small) {
      spawnSync("sh", [
        "-c",
        `docker -H ${small.dockerHost} rm -f $(docker -H ${small.dockerHost} ps -aq) 2>/dev/null`,
      ]);
      await small.stop();
    }
    removeDir(dir);
  });

  test("frees a full data root of unused images, least recently used first, keeping used, pause and young images", async () => {
    writeFileSync(
      join(manifests, "app.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-imagegc }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["sleep", "3600"] }]
`,
    );
    const started = Date.now();
    kubelet = await startOnSmall(IMAGE_GC_FLAGS);
    await waitFor(
      "the pod's container running",
      () => on("ps", "-q", "--filter", "label=io.kubernetes.container.name=app") !== "",
    );
    expect(has("local/old-a:1") && has("local/old-b:1")).toBe(true);
    // Older than the minimum age by the time the disk fills; the image imported now is younger than it.
    await new Promise((r) => setTimeout(r, Math.max(0, started + 16_000 - Date.now())));
    filler("local/young:1", 40);
    await waitFor("both old images removed", () => !has("local/old-a:1") && !has("local/old-b:1"), 60_000);
    expect(has("local/young:1")).toBe(true);
    expect(has(services.busybox)).toBe(true);
    expect(has(services.pause)).toBe(true);
    await waitFor("the collection logged", () =>
      kubelet.output.includes("image garbage collection removed local/old-a:1"),
    );
  }, 180_000);

  test("imageMaximumGCAge removes an image unused for longer, with the disk far below the threshold", async () => {
    await kubelet.stop();
    filler("local/stale:1", 1);
    kubelet = await startOnSmall(IMAGE_MAX_AGE_FLAGS);
    await waitFor("the stale image removed", () => !has("local/stale:1"), 60_000);
    expect(has(services.busybox)).toBe(true); // the running pod's
    expect(has(services.pause)).toBe(true);
    // The removal is logged once the runtime has answered: wait for the line rather than race it.
    await waitFor("the removal logged", () =>
      kubelet.output.includes("image garbage collection removed local/stale:1 ("),
    );
    expect(kubelet.output).toMatch(/local\/stale:1 \(\d+ bytes, unused for longer than imageMaximumGCAge 4s\)/);
  }, 120_000);
});
