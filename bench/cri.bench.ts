// CRI benchmark (issue 16), all in one run on the same machine:
//   (1) one pod (sandbox + app) written → app running, kubelet on containerd vs a raw in-process CRI
//       client doing RunPodSandbox + CreateContainer + StartContainer, p50/p95, interleaved trials
//   (2) the same pod YAML on the kubelet with containerd vs the kubelet with Docker: 1 pod and 20 pods
//   (3) the kubelet's CPU over an idle period with 50 pods on the CRI (the PLEG relists every second)
//   (4) the same pod YAML through podman `kube play` (Debian's podman 4.3, rootful, its own root and
//       runroot under the services directory, network none; settings in podmanCommand below): 1 pod, 20 pods
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/cri.bench.ts [--trials 15] [--idle-seconds 30]
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { podmanCommand, podmanPlay, rawCriPod } from "./support.ts";
import { freePort, removeDir, tempDir } from "../test/e2e/harness.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const trials = arg("--trials", 15);
const idleSeconds = arg("--idle-seconds", 30);
const cri = createCriClient({ runtimeEndpoint: services.containerd, requestTimeoutMs: 120_000 });
const dockerSocket = services.dockerHost.replace("unix://", "");
const root = tempDir("bench-cri");

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (n: number) => `${n.toFixed(0)} ms`;

async function until(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await Bun.sleep(5);
  }
}

/** Running app containers of pods named `prefix…`, on either runtime. */
async function runningApps(runtime: "remote" | "docker", prefix: string): Promise<number> {
  if (runtime === "remote")
    return (await cri.listContainers()).filter(
      (c) => c.state === "CONTAINER_RUNNING" && (c.labels["io.kubernetes.pod.name"] ?? "").startsWith(prefix),
    ).length;
  const filters = encodeURIComponent(JSON.stringify({ name: [`k8s_app_${prefix}`], status: ["running"] }));
  const response = await fetch(`http://docker/containers/json?filters=${filters}`, {
    unix: dockerSocket,
  } as RequestInit);
  return ((await response.json()) as unknown[]).length;
}

const podYaml = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: app, image: ${services.busybox}, command: ["sleep", "3600"] }
`;

/** A kubelet on one runtime, watching its own manifest directory. */
async function startKubelet(runtime: "remote" | "docker") {
  const dir = tempDir(`bench-cri-${runtime}`);
  const port = await freePort();
  const flags =
    runtime === "remote"
      ? ["--container_runtime", "remote", "--container_runtime_endpoint", services!.containerd]
      : ["--docker_endpoint", services!.dockerHost];
  const child: ChildProcess = spawn(
    KUBELET_BINARY,
    [
      "run",
      "-c",
      dir,
      ...flags,
      "--pod_network_mode",
      "none",
      "--root_dir",
      join(root, runtime),
      "--pod_logs_dir",
      join(root, runtime, "logs"),
      "--port",
      String(port),
      // The Docker kubelet starts while the containerd one may still be stopping: neither takes the default 10248.
      "--healthz_port",
      "0",
      "--log_format",
      "json",
      "-v",
      "0",
    ],
    { stdio: "ignore" },
  );
  await until(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200);
  return { dir, child, runtime };
}

type Kubelet = Awaited<ReturnType<typeof startKubelet>>;

/** Writes `count` pods at once and waits until every app runs; then deletes them and waits until they are gone. */
async function kubeletPods(k: Kubelet, prefix: string, count: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) writeFileSync(join(k.dir, `${prefix}${i}.yaml`), podYaml(`${prefix}${i}`));
  await until(async () => (await runningApps(k.runtime, prefix)) === count);
  const elapsed = performance.now() - started;
  for (let i = 0; i < count; i++) rmSync(join(k.dir, `${prefix}${i}.yaml`));
  await until(async () => (await runningApps(k.runtime, prefix)) === 0);
  return elapsed;
}

// --- (1) one pod: kubelet on containerd vs raw CRI, interleaved
const remote = await startKubelet("remote");
await kubeletPods(remote, "warm", 1);
const viaKubelet: number[] = [];
const viaRaw: number[] = [];
for (let t = 0; t < trials; t++) {
  viaKubelet.push(await kubeletPods(remote, `one${t}x`, 1));
  const raw = await rawCriPod(cri, services, join(root, "raw"), `raw${t}`);
  viaRaw.push(raw.ms);
  await cri.stopPodSandbox(raw.sandbox);
  await cri.removePodSandbox(raw.sandbox);
}

// --- (2) kubelet on containerd vs kubelet on Docker, 1 and 20 pods (same YAML)
const side: Record<string, { one: number[]; twenty: number }> = {};
side.containerd = { one: [], twenty: 0 };
for (let t = 0; t < 5; t++) side.containerd.one.push(await kubeletPods(remote, `side${t}x`, 1));
side.containerd.twenty = await kubeletPods(remote, "twenty", 20);

// --- (3) idle with 50 pods on the CRI
for (let i = 0; i < 50; i++) writeFileSync(join(remote.dir, `idle${i}.yaml`), podYaml(`idle${i}`));
await until(async () => (await runningApps("remote", "idle")) === 50, 300_000);
const ticks = () => {
  const fields = readFileSync(`/proc/${remote.child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
};
// Let start-up work (statuses, first probes, the pods' own start) finish before measuring.
await Bun.sleep(20_000);
const ticks0 = ticks();
await Bun.sleep(idleSeconds * 1000);
const idlePercent = ((ticks() - ticks0) / 100 / idleSeconds) * 100;
for (let i = 0; i < 50; i++) rmSync(join(remote.dir, `idle${i}.yaml`));
await until(async () => (await runningApps("remote", "idle")) === 0, 300_000);
remote.child.kill("SIGTERM");

const docker = await startKubelet("docker");
await kubeletPods(docker, "warm", 1);
side.docker = { one: [], twenty: 0 };
for (let t = 0; t < 5; t++) side.docker.one.push(await kubeletPods(docker, `side${t}x`, 1));
side.docker.twenty = await kubeletPods(docker, "twenty", 20);
docker.child.kill("SIGTERM");

/** `podman kube play` of `count` pods in one file (podman's way to start several): returns when all run. */
function podmanPods(command: string[], prefix: string, count: number): number {
  const file = join(root, `${prefix}.yaml`);
  const yaml = Array.from({ length: count }, (_, i) =>
    podYaml(`${prefix}${i}`).replace(services!.busybox, `localhost/${services!.busybox}`),
  ).join("---\n");
  writeFileSync(file, yaml);
  return podmanPlay(command, file);
}

const podman = podmanCommand(services);
if (podman) {
  podmanPods(podman, "warm", 1);
  side.podman = { one: [], twenty: 0 };
  for (let t = 0; t < 5; t++) side.podman.one.push(podmanPods(podman, `side${t}x`, 1));
  side.podman.twenty = podmanPods(podman, "twenty", 20);
}
cri.close();
removeDir(root);

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`;
console.log(
  `machine: ${machine}; load average at the end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log(
  `| 1 pod → running on containerd, p50 / p95 (${trials} trials) | kubelet ${ms(percentile(viaKubelet, 50))} / ${ms(percentile(viaKubelet, 95))} | raw CRI client ${ms(percentile(viaRaw, 50))} / ${ms(percentile(viaRaw, 95))} | ${(percentile(viaKubelet, 50) / percentile(viaRaw, 50)).toFixed(2)}× / ${(percentile(viaKubelet, 95) / percentile(viaRaw, 95)).toFixed(2)}× |`,
);
for (const [name, r] of Object.entries(side))
  console.log(
    `| ${name === "podman" ? "podman kube play (returns when the pods run)" : `kubelet on ${name}`}: 1 pod p50 (5 trials), 20 pods | ${ms(percentile(r.one, 50))} | ${ms(r.twenty)} |${side.containerd && name !== "containerd" ? ` containerd kubelet vs this: ${(percentile(side.containerd.one, 50) / percentile(r.one, 50)).toFixed(2)}× / ${(side.containerd.twenty / r.twenty).toFixed(2)}× |` : ""}`,
  );
if (!podman) console.log("| podman | not installed: apt-get install podman | |");
console.log(`| idle, 50 pods on the CRI (PLEG relist 1 s), ${idleSeconds} s | ${idlePercent.toFixed(2)} % of a core |`);
