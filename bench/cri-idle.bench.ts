// Idle cost on containerd 1.6 and 1.7 at 110 pods (issue 41), builds alternated in one run: the kubelet's CPU by
// thread and RSS, containerd's own CPU, and what the kubelet asked the runtime in the steady state, per minute by
// operation (kubelet_runtime_operations_total and the PLEG's relists from /metrics, deltas over the window).
// Usage: bash scripts/services.sh up && bun build.ts &&
//   bun bench/cri-idle.bench.ts --binary base=/tmp/base-kubelet --binary after=dist/kubelet [--pods 110] [--rounds 2]
//     [--settle 15] [--window 60] [remote] [remote-1.7] [docker]
// `docker` (named only) measures the Docker runtime the same way, dockerd's CPU in containerd's column.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { removeDir } from "../test/e2e/harness.ts";
import * as bench from "./support.ts";
import { threadSeconds, type BenchKubelet, type RuntimeChoice } from "./support.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const argv = process.argv.slice(2);
const arg = (name: string, fallback: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback);
const settleSeconds = arg("--settle", 15);
const windowSeconds = arg("--window", 60);
const podCount = arg("--pods", 110);
const rounds = arg("--rounds", 2);
const binaries = argv.flatMap((a, i) => (a === "--binary" ? [argv[i + 1]!.split("=") as [string, string]] : []));
if (binaries.length === 0) binaries.push(["dist", "dist/kubelet"]);
const runtimes = (["remote", "remote-1.7", "docker"] as const).filter((r) =>
  argv.some((a) => a.startsWith("remote") || a === "docker") ? argv.includes(r) : r !== "docker",
);
const apps = bench.appCounter(services);

/** The counters this bench reads from /metrics: operations by type, relists, stream connections. */
async function counters(k: BenchKubelet): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${k.port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const op = /^kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\S+)/.exec(line);
    if (op) out.set(op[1]!, Number(op[2]));
    const relist = /^kubelet_pleg_relist_duration_seconds_count (\S+)/.exec(line);
    if (relist) out.set("(pleg relist)", Number(relist[1]));
  }
  return out;
}

const containerdPid = (runtime: RuntimeChoice) =>
  Number(
    readFileSync(
      join(
        services.dir,
        runtime === "docker" ? "dockerd.pid" : runtime === "remote" ? "containerd.pid" : "containerd17.pid",
      ),
      "utf8",
    ),
  );

interface Sample {
  runtime: RuntimeChoice;
  build: string;
  cpu: number;
  containerdCpu: number;
  rssMb: number;
  threads: Map<string, number>;
  perMinute: Map<string, number>;
}
const samples: Sample[] = [];

async function measure(k: BenchKubelet, runtime: RuntimeChoice, build: string): Promise<Sample> {
  await Bun.sleep(settleSeconds * 1000);
  const pid = k.child.pid!;
  const cd = containerdPid(runtime);
  const [before, cdBefore, threadsBefore, countsBefore] = [
    bench.cpuSeconds(pid),
    bench.cpuSeconds(cd),
    threadSeconds(pid),
    await counters(k),
  ];
  await Bun.sleep(windowSeconds * 1000);
  const [after, cdAfter, threadsAfter, countsAfter] = [
    bench.cpuSeconds(pid),
    bench.cpuSeconds(cd),
    threadSeconds(pid),
    await counters(k),
  ];
  const percent = (s: number) => (s / windowSeconds) * 100;
  const threads = new Map([...threadsAfter].map(([n, s]) => [n, percent(s - (threadsBefore.get(n) ?? 0))]));
  const perMinute = new Map(
    [...countsAfter].map(([n, c]) => [n, ((c - (countsBefore.get(n) ?? 0)) * 60) / windowSeconds] as [string, number]),
  );
  return {
    runtime,
    build,
    cpu: percent(after - before),
    containerdCpu: percent(cdAfter - cdBefore),
    rssMb: bench.memory(pid).rssMb,
    threads,
    perMinute,
  };
}

for (const runtime of runtimes) {
  const first = await bench.startKubelet(services, runtime, { binary: binaries[0]![1] });
  const { dir, rootDir } = first;
  for (let i = 0; i < podCount; i++) writeFileSync(join(dir, `idle${i}.yaml`), bench.sleepingPod(services, `idle${i}`));
  await bench.until(async () => (await apps.running(runtime, "idle")) === podCount, 900_000);
  await first.stop();
  for (let round = 0; round < rounds; round++) {
    // Swapped every round, so neither build always follows the other.
    const order = round % 2 === 0 ? binaries : [...binaries].reverse();
    for (const [build, binary] of order) {
      const k = await bench.startKubelet(services, runtime, { dir, rootDir, binary });
      const sample = await measure(k, runtime, build);
      await k.stop();
      samples.push(sample);
      console.error(
        `cri-idle: ${runtime} ${build}: ${sample.cpu.toFixed(2)} %, containerd ${sample.containerdCpu.toFixed(2)} %`,
      );
    }
  }
  const last = await bench.startKubelet(services, runtime, { dir, rootDir, binary: binaries[0]![1] });
  for (let i = 0; i < podCount; i++) rmSync(join(dir, `idle${i}.yaml`));
  await bench.until(async () => (await apps.running(runtime, "idle")) === 0, 900_000);
  await last.stop();
  removeDir(dir);
  removeDir(rootDir);
}
apps.close();

const fmt = (n: number) => n.toFixed(2);
console.log(
  `${bench.machine()}; ${podCount} pods, ${settleSeconds} s settle, ${windowSeconds} s windows, ${rounds} rounds alternated`,
);
console.log("containerd | build | kubelet CPU | containerd CPU | RSS | top threads | calls a minute");
for (const s of samples) {
  const threads = [...s.threads]
    .filter(([, p]) => p >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([n, p]) => `${n} ${fmt(p)}`)
    .join(", ");
  const calls = [...s.perMinute]
    .filter(([, c]) => c > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([n, c]) => `${n} ${c.toFixed(1)}`)
    .join(", ");
  console.log(
    `${s.runtime === "remote" ? "1.6" : s.runtime === "docker" ? "Docker" : "1.7"} | ${s.build} | ${fmt(s.cpu)} % | ${fmt(s.containerdCpu)} % | ${s.rssMb.toFixed(0)} MB | ${threads} | ${calls}`,
  );
}
