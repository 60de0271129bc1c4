// ConfigMap edit → the mounted file changed, with the compiled kubelet on the real dockerd, p50/p95
// over 30 edits; baseline in the same run: the file source alone seeing the same kind of edit (the
// floor: nothing can be written before the edit is seen).
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/configs.bench.ts
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createFileSource } from "../lib/sources/file.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";

const services = testServices();
if (!services) throw new Error("the test services are not running: bash scripts/services.sh up");
const EDITS = 30;
const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const configMap = (i: number) => `{apiVersion: v1, kind: ConfigMap, metadata: {name: bench}, data: {mode: "v${i}"}}`;
const until = async (check: () => boolean) => {
  while (!check()) await Bun.sleep(1);
};

// Baseline: the file source's own latency for a ConfigMap edit.
const baseDir = mkdtempSync(join(tmpdir(), "kubelet-bench-cfg-src-"));
let want = "";
let seen = false;
const stop = createFileSource({ path: baseDir, checkFrequency: 20_000 }).start((s) => {
  if (s.configs?.[0]?.data?.mode === want) seen = true;
});
await Bun.sleep(500);
const source: number[] = [];
for (let i = 1; i <= EDITS; i++) {
  want = `v${i}`;
  seen = false;
  const t0 = performance.now();
  writeFileSync(join(baseDir, "cm.yaml"), configMap(i));
  await until(() => seen);
  source.push(performance.now() - t0);
  await Bun.sleep(30);
}
await stop();
rmSync(baseDir, { recursive: true, force: true });

// The kubelet: the same edit until the file in the pod's volume holds the new value.
const dir = mkdtempSync(join(tmpdir(), "kubelet-bench-cfg-"));
const root = mkdtempSync(join(tmpdir(), "kubelet-bench-cfg-root-"));
writeFileSync(join(dir, "cm.yaml"), configMap(0));
writeFileSync(
  join(dir, "pod.yaml"),
  `{apiVersion: v1, kind: Pod, metadata: {name: bench-cfg}, spec: {terminationGracePeriodSeconds: 1, containers: [{name: c, image: "${services.busybox}", command: [sleep, "3600"], volumeMounts: [{name: v, mountPath: /cfg}]}], volumes: [{name: v, configMap: {name: bench}}]}}`,
);
const kubelet = spawn(
  KUBELET_BINARY,
  [
    "run",
    "-c",
    dir,
    "--docker_endpoint",
    services.dockerHost,
    "--pod_network_mode",
    "none",
    "--root_dir",
    root,
    "--enable_server=false",
    "--network_container_image",
    services.pause,
  ],
  { stdio: "ignore" },
);
const podsDir = join(root, "pods");
let file = "";
await until(() => {
  const uid = existsSync(podsDir) ? spawnSync("ls", [podsDir], { encoding: "utf8" }).stdout.trim() : "";
  file = uid ? join(podsDir, uid, "volumes/kubernetes.io~configmap/v/mode") : "";
  return !!file && existsSync(file);
});
const kubeletTimes: number[] = [];
for (let i = 1; i <= EDITS; i++) {
  const t0 = performance.now();
  writeFileSync(join(dir, "cm.yaml"), configMap(i));
  await until(() => readFileSync(file, "utf8") === `v${i}`);
  kubeletTimes.push(performance.now() - t0);
  await Bun.sleep(30);
}
kubelet.kill("SIGTERM");
await new Promise((resolve) => kubelet.once("exit", resolve));
spawnSync("docker", [
  "-H",
  services.dockerHost,
  "rm",
  "-f",
  ...spawnSync(
    "docker",
    ["-H", services.dockerHost, "ps", "-aq", "--filter", "label=io.kubernetes.pod.name=bench-cfg"],
    { encoding: "utf8" },
  )
    .stdout.split("\n")
    .filter(Boolean),
]);
rmSync(dir, { recursive: true, force: true });
rmSync(root, { recursive: true, force: true });

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}`);
console.log(
  `file source sees a ConfigMap edit: p50 ${pct(source, 50).toFixed(1)} ms, p95 ${pct(source, 95).toFixed(1)} ms`,
);
console.log(
  `ConfigMap edit → mounted file changed: p50 ${pct(kubeletTimes, 50).toFixed(1)} ms, p95 ${pct(kubeletTimes, 95).toFixed(1)} ms (${(pct(kubeletTimes, 50) / pct(source, 50)).toFixed(2)}× / ${(pct(kubeletTimes, 95) / pct(source, 95)).toFixed(2)}× the source alone; Kubernetes: up to the sync period + cache TTL, ~1 min)`,
);
