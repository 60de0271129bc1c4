// Scrape cost (issue 24): a kubelet on Docker with 110 pods (the default --max_pods), scraped in turn
// on /metrics (the baseline, same run), /metrics/resource and /metrics/cadvisor: wall time per scrape
// (p50, p95) and the kubelet's CPU per scrape (its CPU over the scrapes / the scrapes). Then its idle
// CPU over a window without scrapes and over the same window with a real Prometheus (Debian's)
// scraping all four metrics endpoints every 15 s, as kube-prometheus does.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/scrape.bench.ts [--window 60] [--scrapes 50] [--cycles 5] [--binary PATH]
//   [--dir D --root-dir R --prefix P --keep]: the pods of an earlier run (named P0…P109, e.g. idle-calls.bench.ts's
//   "calls"), kept afterwards, so two builds are compared on the same pods without starting 110 pods for each;
//   [--rest S]: S s without scrapes before the unscraped window; [--runtime remote-1.7|remote]: on the test services'
//   containerd (1.7 or 1.6) through the CRI instead of Docker
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { freePort, removeDir, tempDir } from "../test/e2e/harness.ts";
import {
  appCounter,
  cpuSeconds,
  machine,
  percentile,
  type RuntimeChoice,
  sleepingPod,
  startKubelet,
  until,
} from "./support.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const windowSeconds = arg("--window", 60);
const scrapes = arg("--scrapes", 50);
const PODS = 110;
const apps = appCounter(services);

const named = (name: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
const binary = named("--binary");
const prefix = named("--prefix") ?? "scrape";
const keep = process.argv.includes("--keep");
const runtime = (named("--runtime") ?? "docker") as RuntimeChoice;
if (!["docker", "remote", "remote-1.7"].includes(runtime))
  throw new Error(`--runtime ${runtime}: give docker, remote or remote-1.7`);
const kubelet = await startKubelet(services, runtime, {
  ...(binary ? { binary } : {}),
  ...(named("--dir") ? { dir: named("--dir") } : {}),
  ...(named("--root-dir") ? { rootDir: named("--root-dir") } : {}),
});
for (let i = 0; i < PODS; i++)
  writeFileSync(join(kubelet.dir, `${prefix}${i}.yaml`), sleepingPod(services, `${prefix}${i}`));
await until(async () => (await apps.running(runtime, prefix)) === PODS, 600_000);
const url = (path: string) => `http://127.0.0.1:${kubelet.port}${path}`;
// The resource analyzer has measured every pod: the cgroup listing a scrape reads is complete.
await until(async () => {
  const text = await (await fetch(url("/metrics/resource"))).text();
  return (text.match(/^pod_cpu_usage_seconds_total\{/gm) ?? []).length === PODS;
}, 120_000);

/** Wall ms (p50, p95), kubelet CPU ms per scrape and body size of `scrapes` sequential scrapes of `path`. */
async function scrapeCost(path: string) {
  const times: number[] = [];
  let bytes = 0;
  const cpuBefore = cpuSeconds(kubelet.child.pid!);
  for (let i = 0; i < scrapes; i++) {
    const start = performance.now();
    bytes = (await (await fetch(url(path))).arrayBuffer()).byteLength;
    times.push(performance.now() - start);
  }
  const cpuMs = ((cpuSeconds(kubelet.child.pid!) - cpuBefore) * 1000) / scrapes;
  return { path, p50: percentile(times, 50), p95: percentile(times, 95), cpuMs, bytes };
}

const costs = [];
for (const path of ["/metrics", "/metrics/resource", "/metrics/cadvisor"]) costs.push(await scrapeCost(path));

/** CPU ns the process's threads ran so far (/proc/<pid>/task/<tid>/schedstat: ns, where /proc/<pid>/stat counts 10 ms ticks). */
function cpuNs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "latin1").split(" ")[0]);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return ns;
}

/**
 * What one 15 s cycle of Prometheus costs, endpoint by endpoint: `rounds` times, 16 s after the last read (so the
 * cgroups are read again, as at every scrape interval), /metrics/cadvisor, then /metrics/resource (served its read),
 * /metrics and /metrics/probes; CPU ms of each request, from its start to its answer read.
 */
async function freshCycles(rounds: number) {
  const paths = ["/metrics/cadvisor", "/metrics/resource", "/metrics", "/metrics/probes"];
  const ns = new Map(paths.map((p) => [p, 0]));
  for (let i = 0; i < rounds; i++) {
    await Bun.sleep(16_000);
    for (const path of paths) {
      const before = cpuNs(kubelet.child.pid!);
      await (await fetch(url(path))).arrayBuffer();
      ns.set(path, ns.get(path)! + cpuNs(kubelet.child.pid!) - before);
    }
  }
  return paths.map((path) => ({ path, ms: ns.get(path)! / 1e6 / rounds }));
}
const cycles = await freshCycles(arg("--cycles", 5));

/** The kubelet's CPU, % of a core, over the window. */
async function idleCpu(): Promise<number> {
  const before = cpuSeconds(kubelet.child.pid!);
  await Bun.sleep(windowSeconds * 1000);
  return ((cpuSeconds(kubelet.child.pid!) - before) / windowSeconds) * 100;
}

// --rest S: wait S s first, so a build whose collection kept reading pods for a minute after an endpoint asked
// (main before scrape43) is measured idle rather than still reading for the scrapes above.
await Bun.sleep(arg("--rest", 0) * 1000);
const quiet = await idleCpu();
const promDir = tempDir("bench-prometheus");
const job = (name: string, path: string) =>
  `  - { job_name: ${name}, metrics_path: ${path}, static_configs: [{ targets: ["127.0.0.1:${kubelet.port}"] }] }\n`;
writeFileSync(
  join(promDir, "prometheus.yml"),
  `global: { scrape_interval: 15s, scrape_timeout: 10s }\nscrape_configs:\n${job("kubelet", "/metrics")}${job("cadvisor", "/metrics/cadvisor")}${job("resource", "/metrics/resource")}${job("probes", "/metrics/probes")}`,
);
const prometheus = spawn(
  "prometheus",
  [
    `--config.file=${join(promDir, "prometheus.yml")}`,
    `--storage.tsdb.path=${join(promDir, "data")}`,
    `--web.listen-address=127.0.0.1:${await freePort()}`,
  ],
  { stdio: "ignore" },
);
const scraped = await idleCpu();
prometheus.kill("SIGKILL");
removeDir(promDir);

if (!keep) {
  for (let i = 0; i < PODS; i++) rmSync(join(kubelet.dir, `${prefix}${i}.yaml`));
  await until(async () => (await apps.running(runtime, prefix)) === 0, 600_000);
}
await kubelet.stop();
if (!keep) removeDir(kubelet.dir), removeDir(kubelet.rootDir);
apps.close();

console.log(`${machine()}; ${runtime}, ${PODS} pods; ${scrapes} sequential scrapes per endpoint`);
console.log("endpoint | wall p50 / p95 | kubelet CPU per scrape | body | vs /metrics (CPU)");
const base = costs[0]!;
for (const c of costs)
  console.log(
    `${c.path} | ${c.p50.toFixed(1)} ms / ${c.p95.toFixed(1)} ms | ${c.cpuMs.toFixed(1)} ms | ${(c.bytes / 1024).toFixed(0)} KiB | ${(c.cpuMs / base.cpuMs).toFixed(1)}×`,
  );
console.log(
  `one scrape interval (${arg("--cycles", 5)} cycles, each 16 s after the last read), kubelet CPU per request: ${cycles.map((c) => `${c.path} ${c.ms.toFixed(1)} ms`).join(", ")}; sum ${cycles.reduce((n, c) => n + c.ms, 0).toFixed(1)} ms`,
);
console.log(
  `idle CPU over ${windowSeconds} s: ${quiet.toFixed(2)} % of a core unscraped; ${scraped.toFixed(2)} % with Prometheus scraping /metrics, /metrics/cadvisor, /metrics/resource and /metrics/probes every 15 s (+${(scraped - quiet).toFixed(2)} points)`,
);
