// Idle cost of the Evented PLEG (issue 41): one kubelet on containerd 1.7 (events from GetContainerEvents, a relist
// every 300 s) and one on containerd 1.6 (a relist every second), each with the same N sleeping pods, measured over
// the same windows side by side, so the machine's load weighs on both alike: each kubelet's CPU (% of a core) and
// RSS, and each containerd's CPU (the relist costs the runtime too). Both at the default --sync_frequency (10 s).
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/pleg.bench.ts [--pods 110] [--settle 30] [--window 60] [--windows 3]
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import { testServices } from "../lib/testing/services.ts";
import { removeDir } from "../test/e2e/harness.ts";
import * as bench from "./support.ts";

const services = testServices();
if (!services?.containerd17)
  throw new Error("containerd 1.6 and 1.7 are not both running: bash scripts/services.sh up");
const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const pods = arg("--pods", 110);
const settleSeconds = arg("--settle", 30);
const windowSeconds = arg("--window", 60);
const windows = arg("--windows", 3);
const apps = bench.appCounter(services);
const daemonPid = (name: string) => Number(readFileSync(join(services.dir, `${name}.pid`), "utf8"));

const sides = [
  { name: "containerd 1.7, evented", runtime: "remote-1.7" as const, daemon: daemonPid("containerd17") },
  { name: "containerd 1.6, relisting", runtime: "remote" as const, daemon: daemonPid("containerd") },
];
const kubelets: bench.BenchKubelet[] = [];
for (const side of sides) {
  const k = await bench.startKubelet(services, side.runtime);
  kubelets.push(k);
  for (let i = 0; i < pods; i++) writeFileSync(join(k.dir, `pleg${i}.yaml`), bench.sleepingPod(services, `pleg${i}`));
}
for (const side of sides) await bench.until(async () => (await apps.running(side.runtime, "pleg")) === pods, 900_000);
await Bun.sleep(settleSeconds * 1000);

const samples = sides.map(() => ({ kubelet: [] as number[], daemon: [] as number[] }));
for (let w = 0; w < windows; w++) {
  const before = sides.map((s, i) => [bench.cpuSeconds(kubelets[i]!.child.pid!), bench.cpuSeconds(s.daemon)]);
  await Bun.sleep(windowSeconds * 1000);
  sides.forEach((s, i) => {
    samples[i]!.kubelet.push(((bench.cpuSeconds(kubelets[i]!.child.pid!) - before[i]![0]!) / windowSeconds) * 100);
    samples[i]!.daemon.push(((bench.cpuSeconds(s.daemon) - before[i]![1]!) / windowSeconds) * 100);
  });
  console.error(
    `pleg: window ${w + 1}/${windows}: ${JSON.stringify(samples.map((s) => [s.kubelet.at(-1), s.daemon.at(-1)]))}`,
  );
}
const rss = kubelets.map((k) => bench.memory(k.child.pid!).rssMb);
const metrics = await Promise.all(
  kubelets.map(async (k) => (await (await fetch(`http://127.0.0.1:${k.port}/metrics`)).text()).split("\n")),
);

for (const [i, k] of kubelets.entries()) {
  for (let p = 0; p < pods; p++) rmSync(join(k.dir, `pleg${p}.yaml`));
  await bench.until(async () => (await apps.running(sides[i]!.runtime, "pleg")) === 0, 900_000);
  await k.stop();
  // The kubelet leaves its dead pods' sandboxes to garbage collection, which a stopped kubelet never runs.
  const cri = createCriClient({
    runtimeEndpoint: bench.criEndpoint(services, sides[i]!.runtime),
    requestTimeoutMs: 60_000,
  });
  for (const s of await cri.listPodSandbox())
    if (s.metadata.name.startsWith("pleg")) {
      await cri.stopPodSandbox(s.id);
      await cri.removePodSandbox(s.id);
    }
  cri.close();
  removeDir(k.dir);
  removeDir(k.rootDir);
}
apps.close();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const series = (lines: string[], name: string) => lines.find((l) => l.startsWith(`${name} `))?.split(" ")[1] ?? "—";
console.log(
  `${bench.machine()}; ${pods} pods on each, side by side; after ${settleSeconds} s of settling, ${windows} windows of ${windowSeconds} s, median`,
);
console.log(
  "kubelet on | kubelet CPU (% of a core) | containerd CPU | kubelet RSS (MB) | relists | stream connections",
);
for (const [i, side] of sides.entries())
  console.log(
    `${side.name} | ${median(samples[i]!.kubelet).toFixed(2)} % (${samples[i]!.kubelet.map((x) => x.toFixed(2)).join(", ")}) | ${median(samples[i]!.daemon).toFixed(2)} % | ${rss[i]!.toFixed(0)} | ${series(metrics[i]!, "kubelet_pleg_relist_duration_seconds_count")} | ${series(metrics[i]!, "kubelet_evented_pleg_connection_success_count")}`,
  );
const [evented, relisting] = samples.map((s) => median(s.kubelet));
const [eventedDaemon, relistingDaemon] = samples.map((s) => median(s.daemon));
console.log(
  `evented / relisting: kubelet ${(evented! / relisting!).toFixed(2)}×, containerd ${(eventedDaemon! / relistingDaemon!).toFixed(2)}×, kubelet + containerd ${((evented! + eventedDaemon!) / (relisting! + relistingDaemon!)).toFixed(2)}×`,
);
