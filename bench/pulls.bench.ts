// Image pulls (issue 17): six distinct images from the loopback registry through the kubelet's image
// manager, serialized (the default, --serialize_image_pulls) and parallel, against the same six pulls
// sent to the Engine API all at once, and one after another, in the same run. Every round removes
// the images first, so each pull fetches its layer.
// Usage: bash scripts/services.sh up && bun bench/pulls.bench.ts [rounds]
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerRuntime } from "../lib/container/docker/docker.ts";
import { createImageManager } from "../lib/node/images/images.ts";
import { testPod } from "../lib/testing/pods.ts";
import { testServices } from "../lib/testing/services.ts";

const services = testServices();
if (!services) throw new Error("test services are not running: run `bash scripts/services.sh up`");
const rounds = Number(process.argv[2] ?? 3);
const COUNT = 6;
const docker = (...args: string[]) =>
  execFileSync("docker", ["-H", services.dockerHost, ...args], { encoding: "utf8" }).trim();
const runtime = createDockerRuntime({ endpoint: services.dockerHost });
const pod = testPod("pull-bench");

// Six images of one distinct 4 MiB layer each, pushed once.
const images = Array.from({ length: COUNT }, (_, i) => `${services.registry}/pull-bench/img${i}:1`);
const work = mkdtempSync(join(tmpdir(), "pull-bench-"));
for (const [i, image] of images.entries()) {
  writeFileSync(join(work, "blob"), Buffer.alloc(4 << 20, i + 1));
  execFileSync("sh", ["-c", `tar -C ${work} -c blob | docker -H ${services.dockerHost} import - ${image}`]);
  docker("push", image);
}
rmSync(work, { recursive: true });
const clear = () => docker("rmi", "-f", ...images);

async function timed(pull: () => Promise<unknown>): Promise<number> {
  clear();
  const started = performance.now();
  await pull();
  return performance.now() - started;
}

const manager = (serialize: boolean) =>
  createImageManager({ qps: 0, burst: 10, serialize, maxParallel: 0, dockerConfigPaths: [] }, runtime);
const variants: Record<string, () => Promise<unknown>> = {
  "engine API, all at once (baseline)": () => Promise.all(images.map((image) => runtime.pullImage(image))),
  "engine API, one after another": async () => {
    for (const image of images) await runtime.pullImage(image);
  },
  "kubelet, serialized (default)": () => {
    const m = manager(true);
    return Promise.all(images.map((image) => m.ensureImage(image, "IfNotPresent", pod)));
  },
  "kubelet, parallel (--serialize_image_pulls=false)": () => {
    const m = manager(false);
    return Promise.all(images.map((image) => m.ensureImage(image, "IfNotPresent", pod)));
  },
};

const samples = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < rounds; round++)
  for (const [name, pull] of Object.entries(variants)) samples.get(name)!.push(await timed(pull));
clear();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const baseline = median(samples.get("engine API, all at once (baseline)")!);
console.log(`${COUNT} pulls of a distinct 4 MiB layer from a loopback registry, median of ${rounds} rounds`);
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, dockerd ${services.dockerHost}`);
for (const [name, xs] of samples)
  console.log(`${name.padEnd(50)} ${median(xs).toFixed(0).padStart(6)} ms  ×${(median(xs) / baseline).toFixed(2)}`);
