// Image pulls against --image_pull_progress_deadline, through a loopback proxy in front of the test
// registry that serves blobs slowly (lib/testing/slow-registry.ts): a pull that keeps progressing
// runs its pod however long it takes, on each runtime; on Docker, which reports progress, a pull that
// stops moving is cancelled and its event says why. Each image has a fresh random layer, so no
// runtime has it yet and the pull downloads it through the proxy.
import { afterAll, beforeAll, expect } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { publishImageWithLayer } from "../../lib/testing/registry-images.ts";
import { type SlowRegistry, startSlowRegistry } from "../../lib/testing/slow-registry.ts";
import {
  describeOnRuntimes,
  type Kubelet,
  removeDir,
  startKubelet,
  tempDir,
  test,
  writePodManifest,
} from "./harness.ts";

interface ReportedEvent {
  reason: string;
  message: string;
  involvedObject: { name: string };
}

/** Layer size and pace: a pull of about 10 s, over three times the deadline, progressing every 0.1 s. */
const LAYER_BYTES = 400_000;
const BYTES_PER_SECOND = 40_000;
const DEADLINE_SECONDS = 3;

describeOnRuntimes("image pulls through a slow registry", (services, rt) => {
  const rootDir = tempDir("pulls-root");
  const manifests = tempDir("pulls-manifests");
  const stamp = Date.now();
  const registries: SlowRegistry[] = [];
  const images: string[] = [];
  const pods = ["e2e-pull-steady", "e2e-pull-stalled"];
  let kubelet: Kubelet;

  const manifest = (name: string, image: string) =>
    writePodManifest(
      manifests,
      name,
      `  containers: [{ name: app, image: "${image}", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"] }]\n`,
    );
  /** A fresh image behind a proxy serving at `bytesPerSecond`; containerd is told to reach the proxy by plain HTTP. */
  const slowImage = async (name: string, bytesPerSecond: number) => {
    const proxy = await startSlowRegistry({ upstream: services.registry, bytesPerSecond });
    registries.push(proxy);
    const target = `slow/${name}${stamp}:1`;
    await publishImageWithLayer({
      registry: services.registry,
      base: "library/busybox:1.35",
      target,
      layerBytes: LAYER_BYTES,
    });
    const hosts = join(services.dir, "containerd", "certs.d", proxy.host);
    mkdirSync(hosts, { recursive: true });
    writeFileSync(
      join(hosts, "hosts.toml"),
      `server = "http://${proxy.host}"\n[host."http://${proxy.host}"]\n  capabilities = ["pull", "resolve"]\n`,
    );
    const image = `${proxy.host}/${target}`;
    images.push(image);
    return image;
  };
  const events = async (pod: string) =>
    ((await (await kubelet.api("/events")).json()) as { items: ReportedEvent[] }).items.filter(
      (e) => e.involvedObject.name === pod,
    );

  beforeAll(async () => {
    kubelet = await startKubelet([
      "run",
      "-c",
      manifests,
      ...rt.flags(rootDir),
      "--image_pull_progress_deadline",
      `${DEADLINE_SECONDS}s`,
    ]);
  });

  afterAll(async () => {
    await kubelet?.stop();
    await rt.removePods(...pods);
    for (const image of images) {
      const status = await rt.runtime.imageStatus(image).catch(() => undefined);
      if (status) await rt.runtime.removeImage(status.id).catch(() => {});
    }
    for (const proxy of registries) {
      await proxy.close();
      rmSync(join(services.dir, "containerd", "certs.d", proxy.host), { recursive: true, force: true });
    }
    removeDir(manifests);
    removeDir(rootDir);
  });

  test(`a pull that progresses steadily for longer than the ${DEADLINE_SECONDS}s deadline runs its pod`, async () => {
    const image = await slowImage("steady", BYTES_PER_SECOND);
    manifest("e2e-pull-steady", image);
    await kubelet.waitFor("the pod's container running", () => rt.running("e2e-pull-steady", "app"), 90_000);
    const pulled = (await events("e2e-pull-steady")).find((e) => e.reason === "Pulled");
    // The pull outlasted the deadline, or this test would show nothing.
    expect(Number(pulled?.message.match(/ in ([\d.]+)s$/)?.[1])).toBeGreaterThan(DEADLINE_SECONDS);
    expect((await events("e2e-pull-steady")).filter((e) => e.reason === "Failed")).toEqual([]);
  }, 120_000);

  if (rt.kind === "docker")
    test("a pull that stops moving is cancelled after the deadline, its event saying why", async () => {
      const image = await slowImage("stalled", 0);
      manifest("e2e-pull-stalled", image);
      const failed = await kubelet.waitFor(
        "the stalled pull cancelled",
        async () => (await events("e2e-pull-stalled")).find((e) => e.reason === "Failed"),
        60_000,
      );
      expect(failed.message).toContain(
        `Failed to pull image "${image}": Cancel pulling image "${image}" because of no progress for ${DEADLINE_SECONDS}s, latest progress: `,
      );
      expect(failed.message).toMatch(/\(\d+ bytes received\)$/);
      expect(kubelet.output).toContain(`because of no progress for ${DEADLINE_SECONDS}s`);
    }, 90_000);
});
