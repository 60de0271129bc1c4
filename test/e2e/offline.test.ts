// The operator doc's air-gapped recipe (docs/operations.md, "Air-gapped nodes") on each runtime: images no
// registry has end runonce at once with the doc named; saved with `docker save` and loaded with `docker load`
// or `ctr -n k8s.io images import`, the same pod runs without a pull. All traffic stays on loopback.
import { afterAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describeOnRuntimes, docker, removeDir, runBinary, tempDir, test, writePodManifest } from "./harness.ts";

describeOnRuntimes("the air-gapped recipe", (services, rt) => {
  const rootDir = tempDir("offline");
  const manifests = tempDir("offline-pods");
  // Names in the loopback registry, which lacks them: a pull answers "manifest unknown" / "not found".
  const tag = `e2e-${process.pid}`;
  const app = `${services.registry}/offline/busybox:${tag}`;
  const pause = `${services.registry}/offline/pause:${tag}`;
  const ctr = (...args: string[]) => {
    const result = spawnSync("ctr", ["-a", rt.endpoint.replace(/^unix:\/\//, ""), "-n", "k8s.io", ...args], {
      encoding: "utf8",
    });
    if (result.status !== 0) throw new Error(`ctr ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };
  /** Removes the two images from the runtime under test (and the Docker tags the save needed). */
  const removeImages = () => {
    spawnSync("docker", ["-H", services.dockerHost, "rmi", app, pause], { encoding: "utf8" });
    if (rt.kind === "remote")
      spawnSync("ctr", ["-a", rt.endpoint.replace(/^unix:\/\//, ""), "-n", "k8s.io", "images", "rm", app, pause]);
  };
  // On Docker the sandbox image is the kubelet's flag; on containerd it is containerd's own (present).
  const flags = [
    ...rt.flags(rootDir),
    "--runonce_timeout",
    "5m",
    ...(rt.kind === "docker" ? ["--network_container_image", pause] : []),
  ];
  writePodManifest(
    manifests,
    "e2e-offline",
    `  containers:\n    - { name: app, image: ${app}, command: ["sleep", "600"] }\n`,
  );
  removeImages();
  afterAll(async () => {
    await rt.removePods("e2e-offline");
    removeImages();
    removeDir(rootDir);
    removeDir(manifests);
  });

  test("an image no registry has ends runonce at once, naming the doc section, well before --runonce_timeout", () => {
    const began = Date.now();
    const result = runBinary(["runonce", "-c", manifests, ...flags], { timeoutMs: 60_000 });
    const seconds = (Date.now() - began) / 1000;
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('see "Air-gapped nodes" in docs/operations.md');
    expect(result.stdout).toMatch(
      rt.kind === "docker"
        ? /e2e-offline: FailedCreatePodSandBox: .*cannot pull the sandbox image \S+ \(--network_container_image\): .*manifest for \S+ not found: manifest unknown/
        : /e2e-offline: app: ErrImagePull: .*: not found/,
    );
    expect(seconds).toBeLessThan(30);
  });

  test("saved and loaded as the doc says, the same pod runs with no pull", async () => {
    const archive = join(manifests, "node-images.tar");
    docker(services, "tag", services.busybox, app);
    docker(services, "tag", services.pause, pause);
    docker(services, "save", "-o", archive, app, pause);
    docker(services, "rmi", app, pause);
    if (rt.kind === "docker") docker(services, "load", "-i", archive);
    else ctr("images", "import", archive);

    const result = runBinary(["runonce", "-c", manifests, ...flags], { timeoutMs: 60_000 });
    expect(result.stdout).toContain("1 pods running or completed");
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("pulling ");
    expect((await rt.running("e2e-offline", "app"))?.image).toContain(`offline/busybox:${tag}`);
  });
});
