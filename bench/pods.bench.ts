// Sync-loop benchmark (issue 4): the kubelet against the raw Docker Engine API, same daemon, same run.
//   (1) one pod (pause + app), manifest written → app running, p50/p95 over 20 trials, interleaved with the raw API's
//   (2) 50 pods written at once → all running, vs the same 100 containers through the raw API
//   (3) kubelet CPU seconds and peak RSS over 60 s idle with 50 pods
// A trial ends at dockerd's start event of its (last) app container, for the kubelet and the raw API alike: the
// bench's own 20 ms poll of the container list, which only the kubelet's figure waited on, is not in it.
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

/** dockerd's start events: container name → the event's time, ms since the epoch. */
const startedAt = new Map<string, number>();
const stopEvents = new AbortController();
const startEvents = await fetch(
  `http://docker/events?filters=${encodeURIComponent(JSON.stringify({ type: ["container"], event: ["start"] }))}`,
  { unix: socket, signal: stopEvents.signal } as RequestInit,
);
void (async () => {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of startEvents.body!) {
    buffered += decoder.decode(chunk, { stream: true });
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines.filter((l) => l.trim())) {
      const event = JSON.parse(line) as { timeNano: number; Actor: { Attributes: { name: string } } };
      startedAt.set(event.Actor.Attributes.name, event.timeNano / 1e6);
    }
  }
})().catch(() => {});
/** Now, ms since the epoch, on the clock of dockerd's event times. */
const now = () => performance.timeOrigin + performance.now();
/** When the last of the containers named by `match` started (waits for `count` of them). */
async function lastStart(match: (name: string) => boolean, count = 1): Promise<number> {
  const times = () => [...startedAt].filter(([name]) => match(name)).map(([, at]) => at);
  await until(async () => times().length >= count);
  return Math.max(...times());
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

// --- (1) one pod, 20 trials, each through the raw API then the kubelet (the machine's load moves them alike)
const rawOne: number[] = [];
const kubeletOne: number[] = [];
const kubeletPolled: number[] = [];
for (let i = 0; i < 20; i++) {
  const name = `bench1-${i}`;
  const r0 = now();
  await rawPod(name);
  rawOne.push((await lastStart((n) => n === `raw_app_${name}`)) - r0);
  await removeByPrefix(`raw_`);
  const t0 = now();
  writeFileSync(join(manifests, `${name}.yaml`), manifest(name));
  await until(async () => (await runningApps(name)) === 1);
  kubeletPolled.push(now() - t0);
  kubeletOne.push((await lastStart((n) => n.startsWith(`k8s_app_${name}_`))) - t0);
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
const t50raw0 = now();
await inParallel(
  Array.from({ length: 50 }, (_, i) => () => rawPod(`bench50-${i}`)),
  PARALLELISM,
);
const raw50 = (await lastStart((n) => n.startsWith("raw_app_bench50-"), 50)) - t50raw0;
await removeByPrefix("raw_");

const t50k0 = now();
for (let i = 0; i < 50; i++) writeFileSync(join(manifests, `bench50-${i}.yaml`), manifest(`bench50-${i}`));
await until(async () => (await runningApps("bench50-")) === 50, 300_000);
const kubelet50 = (await lastStart((n) => n.startsWith("k8s_app_bench50-"), 50)) - t50k0;

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

stopEvents.abort();
kubelet.kill("SIGTERM");
await new Promise((r) => kubelet.once("exit", r));
await removeByPrefix("k8s_");
removeDir(manifests);
removeDir(rootDir);

// The load of a shared machine moves both figures of a pair alike; their difference is what the kubelet adds.
const pairs = kubeletOne.map((k, i) => k - rawOne[i]!);
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
  [
    "one pod, the kubelet's own time: kubelet − raw of each interleaved pair, p50 / p95",
    `${ms(pct(pairs, 50))} / ${ms(pct(pairs, 95))}`,
    "",
    "",
  ],
  ["one pod, p50, as the 20 ms poll saw it (the measure until 2026-11-26)", ms(pct(kubeletPolled, 50)), "", ""],
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
