// Sync-loop benchmark (issue 4): the kubelet against the raw Docker Engine API, same daemon, same run.
//   (1) one pod (pause + app), manifest written → app running, p50/p95 over 20 trials
//   (2) 50 pods written at once → all running, vs the same 100 containers through the raw API
//   (3) kubelet CPU seconds and peak RSS over 60 s idle with 50 pods
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/pods.bench.ts [--idle-seconds 60]
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { freePort, removeDir, tempDir } from "../test/e2e/harness.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const socket = services.dockerHost.replace("unix://", "");
const idleSeconds = Number(process.argv[process.argv.indexOf("--idle-seconds") + 1]) || 60;
const PARALLELISM = 50; // the kubelet starts every pod at once (a pod worker each); the baseline does the same

async function engine(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`http://docker${path}`, {
    method,
    unix: socket,
    headers: { "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  } as RequestInit);
  if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 || response.status === 304 ? undefined : response.json();
}

/** One pod through the raw API: pause container, then the app container in its namespaces. */
async function rawPod(name: string): Promise<void> {
  const pause = await engine("POST", `/containers/create?name=raw_POD_${name}`, {
    Image: services!.pause,
    HostConfig: { NetworkMode: "none", IpcMode: "shareable" },
  });
  await engine("POST", `/containers/${pause.Id}/start`);
  const app = await engine("POST", `/containers/create?name=raw_app_${name}`, {
    Image: services!.busybox,
    Cmd: ["sleep", "3600"],
    HostConfig: { NetworkMode: `container:${pause.Id}`, IpcMode: `container:${pause.Id}` },
  });
  await engine("POST", `/containers/${app.Id}/start`);
}

async function removeByPrefix(prefix: string): Promise<void> {
  const list: Array<{ Id: string; Names: string[] }> = await engine(
    "GET",
    `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ name: [prefix] }))}`,
  );
  await inParallel(
    list.map((c) => () => engine("DELETE", `/containers/${c.Id}?force=1`).catch(() => {})),
    8,
  );
}

async function runningApps(prefix: string): Promise<number> {
  const list: Array<{ Names: string[] }> = await engine(
    "GET",
    `/containers/json?filters=${encodeURIComponent(JSON.stringify({ name: [`k8s_app_${prefix}`], status: ["running"] }))}`,
  );
  return list.length;
}

async function inParallel(tasks: Array<() => Promise<unknown>>, limit: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
}

async function until(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await Bun.sleep(20);
  }
}

const manifest = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: app, image: ${services.busybox}, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"] }
`;

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const ms = (n: number) => `${n.toFixed(0)} ms`;

// --- baseline (1): one pod through the raw API, 20 trials
const rawOne: number[] = [];
for (let i = 0; i < 20; i++) {
  const t0 = performance.now();
  await rawPod(`bench1-${i}`);
  rawOne.push(performance.now() - t0);
  await removeByPrefix(`raw_`);
}

// --- the kubelet
const manifests = tempDir("bench-manifests");
const rootDir = tempDir("bench-root");
const port = await freePort();
const kubelet = spawn(
  KUBELET_BINARY,
  [
    "run",
    "-c",
    manifests,
    "--docker_endpoint",
    services.dockerHost,
    "--pod_network_mode",
    "none",
    "--network_container_image",
    services.pause,
    "--root_dir",
    rootDir,
    "--port",
    String(port),
    "--log_format",
    "json",
    "-v",
    "0",
  ],
  { stdio: "ignore" },
);
await until(
  async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200,
  30_000,
);

const kubeletOne: number[] = [];
for (let i = 0; i < 20; i++) {
  const name = `bench1-${i}`;
  const t0 = performance.now();
  writeFileSync(join(manifests, `${name}.yaml`), manifest(name));
  await until(async () => (await runningApps(name)) === 1);
  kubeletOne.push(performance.now() - t0);
  rmSync(join(manifests, `${name}.yaml`));
  await until(
    async () =>
      (
        await engine(
          "GET",
          `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`io.kubernetes.pod.name=${name}`] }))}`,
        )
      ).length === 0,
  );
}

// --- (2) 50 pods at once
const t50raw0 = performance.now();
await inParallel(
  Array.from({ length: 50 }, (_, i) => () => rawPod(`bench50-${i}`)),
  PARALLELISM,
);
const raw50 = performance.now() - t50raw0;
await removeByPrefix("raw_");

const t50k0 = performance.now();
for (let i = 0; i < 50; i++) writeFileSync(join(manifests, `bench50-${i}.yaml`), manifest(`bench50-${i}`));
await until(async () => (await runningApps("bench50-")) === 50, 300_000);
const kubelet50 = performance.now() - t50k0;

// --- (3) idle cost with 50 pods
const cpuTicks = () => {
  const fields = readFileSync(`/proc/${kubelet.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100/s)
};
await Bun.sleep(2000);
const ticks0 = cpuTicks();
await Bun.sleep(idleSeconds * 1000);
const idleCpuSeconds = (cpuTicks() - ticks0) / 100;
const peakRss = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${kubelet.pid}/status`, "utf8"))![1]) / 1024;

kubelet.kill("SIGTERM");
await new Promise((r) => kubelet.once("exit", r));
await removeByPrefix("k8s_");
removeDir(manifests);
removeDir(rootDir);

const rows = [
  [
    "one pod → running, p50",
    ms(pct(kubeletOne, 50)),
    ms(pct(rawOne, 50)),
    (pct(kubeletOne, 50) / pct(rawOne, 50)).toFixed(2) + "×",
  ],
  [
    "one pod → running, p95",
    ms(pct(kubeletOne, 95)),
    ms(pct(rawOne, 95)),
    (pct(kubeletOne, 95) / pct(rawOne, 95)).toFixed(2) + "×",
  ],
  [`50 pods → running (parallelism ${PARALLELISM})`, ms(kubelet50), ms(raw50), (kubelet50 / raw50).toFixed(2) + "×"],
  [
    `idle CPU, ${idleSeconds} s with 50 pods`,
    `${((idleCpuSeconds / idleSeconds) * 100).toFixed(2)} % of a core`,
    "",
    "",
  ],
  ["peak RSS", `${peakRss.toFixed(0)} MB`, "", ""],
];
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; dockerd ${(await engine("GET", "/version")).Version}`,
);
console.log(["measure", "kubelet", "raw Docker API", "ratio"].join(" | "));
for (const row of rows) console.log(row.join(" | "));
