// Idle cost and sync cost (issues 12 and 16), on Docker and on containerd through the CRI, with 10, 50
// and 110 pods (110: the kubelet's default --max_pods):
//   idle: the kubelet's CPU (% of a core) and RSS over a window once its pods run and start-up work
//         settled, at the default --sync_frequency (10 s); the CRI kubelet also relists every second
//   sync cost per resync: the same kubelet restarted with --sync_frequency 1s (it adopts the pods, no
//         container is touched), its extra CPU over the same window divided by the extra resyncs — the
//         CPU one full sync of every pod costs. Compared across 10/50/110 pods: the cost per pod of the
//         pods added (10→50, 50→110) must not grow, i.e. the sync grows no faster than linearly.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/idle.bench.ts [--settle 20] [--window 30] [docker|remote]
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { removeDir } from "../test/e2e/harness.ts";
import {
  appCounter,
  cpuSeconds,
  machine,
  memory,
  sleepingPod,
  startKubelet,
  until,
  type BenchKubelet,
  type RuntimeChoice,
} from "./support.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const settleSeconds = arg("--settle", 20);
const windowSeconds = arg("--window", 30);
const runtimes = (["docker", "remote"] as const).filter(
  (r) => !process.argv.some((a) => a === "docker" || a === "remote") || process.argv.includes(r),
);
const COUNTS = [10, 50, 110];
const DEFAULT_SYNC_SECONDS = 10;
const FAST_SYNC_SECONDS = 1;
const apps = appCounter(services);

/** CPU (% of a core) and RSS of a settled kubelet over the window. */
async function measureIdle(k: BenchKubelet): Promise<{ cpuPercent: number; rssMb: number }> {
  await Bun.sleep(settleSeconds * 1000);
  const before = cpuSeconds(k.child.pid!);
  await Bun.sleep(windowSeconds * 1000);
  const cpuPercent = ((cpuSeconds(k.child.pid!) - before) / windowSeconds) * 100;
  return { cpuPercent, rssMb: memory(k.child.pid!).rssMb };
}

interface Row {
  runtime: RuntimeChoice;
  pods: number;
  idleCpu: number;
  rssMb: number;
  /** CPU ms one full sync of every pod costs. */
  resyncMs: number;
}
const rows: Row[] = [];
const startRss: Record<string, number> = {};

for (const runtime of runtimes) {
  let kubelet = await startKubelet(services, runtime);
  await Bun.sleep(2000);
  startRss[runtime] = memory(kubelet.child.pid!).rssMb;
  const { dir, rootDir } = kubelet;
  let written = 0;
  for (const pods of COUNTS) {
    for (; written < pods; written++)
      writeFileSync(join(dir, `idle${written}.yaml`), sleepingPod(services, `idle${written}`));
    await until(async () => (await apps.running(runtime, "idle")) === pods, 600_000);
    const idle = await measureIdle(kubelet);
    await kubelet.stop();
    const fast = await startKubelet(services, runtime, {
      dir,
      rootDir,
      extraFlags: ["--sync_frequency", `${FAST_SYNC_SECONDS}s`],
    });
    const busy = await measureIdle(fast);
    await fast.stop();
    kubelet = await startKubelet(services, runtime, { dir, rootDir });
    const extraResyncs = windowSeconds / FAST_SYNC_SECONDS - windowSeconds / DEFAULT_SYNC_SECONDS;
    const resyncMs = (((busy.cpuPercent - idle.cpuPercent) / 100) * windowSeconds * 1000) / extraResyncs;
    rows.push({ runtime, pods, idleCpu: idle.cpuPercent, rssMb: idle.rssMb, resyncMs });
    console.error(`idle: ${runtime} ${pods} pods: ${JSON.stringify(rows.at(-1))}`);
  }
  for (let i = 0; i < written; i++) rmSync(join(dir, `idle${i}.yaml`));
  await until(async () => (await apps.running(runtime, "idle")) === 0, 600_000);
  await kubelet.stop();
  removeDir(dir);
  removeDir(rootDir);
}
apps.close();

console.log(
  `${machine()}; after ${settleSeconds} s of settling, ${windowSeconds} s windows; resync cost = extra CPU at --sync_frequency ${FAST_SYNC_SECONDS}s over ${DEFAULT_SYNC_SECONDS}s / extra resyncs`,
);
console.log("runtime | pods | idle CPU (% of a core) | RSS (MB) | CPU per full sync | per pod");
for (const r of rows)
  console.log(
    `${r.runtime === "remote" ? "containerd (CRI)" : "docker"} | ${r.pods} | ${r.idleCpu.toFixed(2)} % | ${r.rssMb.toFixed(0)} (at start, 0 pods: ${startRss[r.runtime]!.toFixed(0)}) | ${r.resyncMs.toFixed(1)} ms | ${(r.resyncMs / r.pods).toFixed(3)} ms`,
  );
for (const runtime of runtimes) {
  const [ten, fifty, full] = COUNTS.map((n) => rows.find((r) => r.runtime === runtime && r.pods === n)!);
  // The cost of the pods added in each step, per pod: linear growth keeps it flat; it must not rise.
  const low = (fifty!.resyncMs - ten!.resyncMs) / (fifty!.pods - ten!.pods);
  const high = (full!.resyncMs - fifty!.resyncMs) / (full!.pods - fifty!.pods);
  console.log(
    `${runtime === "remote" ? "containerd (CRI)" : "docker"}: sync cost per added pod ${low.toFixed(3)} ms (10→50), ${high.toFixed(3)} ms (50→110): ${high <= low * 1.25 ? "grows no faster than linearly" : `grows faster than linearly (${(high / low).toFixed(2)}×)`}; ${full!.pods} pods cost ${(full!.resyncMs / ten!.resyncMs).toFixed(1)}× ${ten!.pods} pods for ${full!.pods / ten!.pods}× the pods; idle with 110 pods ${full!.idleCpu < 1 ? "<" : "≥"} 1 % of a core (target < 1 %), RSS ${full!.rssMb < 100 ? "<" : "≥"} 100 MB (target < 100 MB)`,
  );
}
