// Issue 41 (memory): what each pod costs the idle kubelet, for two builds side by side in one run.
// Each binary is started on the same manifest directory (it adopts the pods the other started), in turn:
//   0 pods, then 110 pods on Docker, settled: VmRSS, RssAnon, RssFile (/proc/<pid>/status), the JS heap's
//   live objects by type (GET /debug/heap with the admin token), and the CPU over a window (% of a core).
// The builds alternate (A, B, A, B) so the shared machine's load falls on both alike.
// Also: RssAnon's peak while adopting, the time to adopt (GET /pods all Running and ready), resident MB by mapping.
// --burst SECONDS: instead, each build starts with no pods, creates --pods pods --settle seconds after start (a creation
//   burst), and is followed for SECONDS after the last one runs: VmRSS and RssAnon every 10 s, CPU over the whole of it.
// Usage: bash scripts/services.sh up && bun bench/memory.bench.ts --binary A.bin --binary B.bin [--pods 110] [--settle 20] [--window 30] [--rounds 2] [--profile DIR] [--runtime remote-1.7] [--burst 240]
import { mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { appCounter, cpuSeconds, machine, sleepingPod, startKubelet, threadSeconds, until } from "./support.ts";
import type { BenchKubelet, RuntimeChoice } from "./support.ts";

const services = testServices() ?? fail("services are not running: bash scripts/services.sh up");
const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const binaries = process.argv.flatMap((a, i) => (process.argv[i - 1] === "--binary" ? [a] : []));
if (binaries.length === 0) throw new Error("name the builds to compare: --binary dist/kubelet [--binary other]");
const podCount = arg("--pods", 110);
const settleSeconds = arg("--settle", 20);
const windowSeconds = arg("--window", 30);
const rounds = arg("--rounds", 2);
// --profile DIR: one more idle start of each build at 110 pods under bun's --cpu-prof-md and --heap-prof-md
// (written when it stops), into DIR/<n>/: where the idle CPU goes, and what the heap retains by owner.
const profileDir = process.argv.includes("--profile") ? process.argv[process.argv.indexOf("--profile") + 1] : undefined;
const apps = appCounter(services);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

interface Sample {
  binary: string;
  pods: number;
  cpuPercent: number;
  /** % of a core over the window by thread name (digits at its end as N): the JS thread, the JIT's, the GC's. */
  threads: Record<string, number>;
  rssMb: number;
  anonMb: number;
  fileMb: number;
  /** RssAnon once /debug/heap's full GC ran: what a collection gives back. */
  anonAfterGcMb: number;
  /** The highest RssAnon sampled (every 250 ms) from start until the pods were adopted: the burst's peak. */
  peakAnonMb: number;
  /** Start (spawn) until GET /pods lists every pod Running with its containers ready, in seconds. */
  adoptSeconds: number;
  /** The JS heap in MB as JSC counts it (GET /debug/heap's heapBytes, after its full GC): heapSize, heapCapacity
   * and extraMemorySize (see lib/platform/heap.ts); absent on builds without them. */
  heapMb?: { size: number; capacity: number; extra: number };
  /** Resident MB by mapping (/proc/<pid>/smaps), settled: see split(). */
  split: Record<string, number>;
  objects: number;
  counts: Record<string, number>;
}

function status(pid: number): { rssMb: number; anonMb: number; fileMb: number } {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)![1]) / 1024;
  return { rssMb: kb("VmRSS"), anonMb: kb("RssAnon"), fileMb: kb("RssFile") };
}

/**
 * Resident MB of the process by what is mapped: the executable's code (`exe text`: bun's runtime), its read-only
 * data, its writable segment (`exe data`: .data plus the .bun section, our bundle's source, bytecode and source map;
 * pages only read stay file-backed), other files (libc, libm), the largest anonymous mapping (`arena`: the
 * allocators' reservation), the JIT's executable region (`jit`, rwx) and the rest of the anonymous memory.
 */
function split(pid: number): Record<string, number> {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const out: Record<string, number> = {};
  let key = "";
  let arenaKb = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const header = /^[0-9a-f]+-[0-9a-f]+ (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const [, perms, path] = header;
      key =
        path === exe
          ? perms.includes("x")
            ? "exe text"
            : perms.includes("w")
              ? "exe data"
              : "exe rodata"
          : path && !path.startsWith("[")
            ? "other files"
            : perms.includes("x")
              ? "jit"
              : "other anon";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const kb = Number(rss[1]);
    if (key === "other anon" && kb > arenaKb) {
      out["other anon"] = (out["other anon"] ?? 0) + arenaKb / 1024;
      arenaKb = kb;
      continue;
    }
    out[key] = (out[key] ?? 0) + kb / 1024;
  }
  out.arena = arenaKb / 1024;
  return out;
}

async function get(k: BenchKubelet, path: string): Promise<Response> {
  const token = readFileSync(join(k.rootDir, "admin-token"), "utf8").trim();
  const response = await fetch(`https://127.0.0.1:${k.port}${path}`, {
    headers: { authorization: `Bearer ${token}` },
    tls: { rejectUnauthorized: false },
  } as RequestInit).catch(() =>
    fetch(`http://127.0.0.1:${k.port}${path}`, { headers: { authorization: `Bearer ${token}` } }),
  );
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response;
}

async function heap(k: BenchKubelet) {
  const answer = (await (await get(k, "/debug/heap")).json()) as {
    objectTypeCounts: Record<string, number>;
    heapBytes?: { heapSize: number; heapCapacity: number; extraMemorySize: number };
  };
  const mb = (n: number) => n / 2 ** 20;
  const bytes = answer.heapBytes;
  return {
    counts: answer.objectTypeCounts,
    heapMb: bytes && {
      size: mb(bytes.heapSize),
      capacity: mb(bytes.heapCapacity),
      extra: mb(bytes.extraMemorySize),
    },
  };
}

interface ListedPod {
  status?: { phase?: string; containerStatuses?: { ready?: boolean }[] };
}

/** Waits until GET /pods lists `pods` pods Running with every container ready, sampling RssAnon meanwhile. */
async function adoption(k: BenchKubelet, pods: number, startedAt: number) {
  let peakAnonMb = 0;
  const sampler = setInterval(() => {
    peakAnonMb = Math.max(peakAnonMb, status(k.child.pid!).anonMb);
  }, 250);
  await until(async () => {
    const list = (await (await get(k, "/pods")).json()) as { items: ListedPod[] };
    const adopted = list.items.filter(
      (p) => p.status?.phase === "Running" && (p.status.containerStatuses ?? []).every((c) => c.ready),
    );
    return adopted.length >= pods;
  }, 900_000);
  clearInterval(sampler);
  peakAnonMb = Math.max(peakAnonMb, status(k.child.pid!).anonMb);
  return { peakAnonMb, adoptSeconds: (performance.now() - startedAt) / 1000 };
}

async function measure(k: BenchKubelet, binary: string, pods: number, startedAt: number): Promise<Sample> {
  const adopted = await adoption(k, pods, startedAt);
  await Bun.sleep(settleSeconds * 1000);
  const before = cpuSeconds(k.child.pid!);
  const threadsBefore = threadSeconds(k.child.pid!);
  await Bun.sleep(windowSeconds * 1000);
  const cpuPercent = ((cpuSeconds(k.child.pid!) - before) / windowSeconds) * 100;
  const threads: Record<string, number> = {};
  for (const [name, seconds] of threadSeconds(k.child.pid!))
    threads[name] = ((seconds - (threadsBefore.get(name) ?? 0)) / windowSeconds) * 100;
  // RSS before the heap count: its full GC would shrink the heap the idle kubelet keeps.
  const mem = status(k.child.pid!);
  const layout = split(k.child.pid!);
  const { counts, heapMb } = await heap(k);
  const afterGc = status(k.child.pid!);
  const objects = Object.values(counts).reduce((a, b) => a + b, 0);
  return {
    binary,
    pods,
    cpuPercent,
    threads,
    ...mem,
    anonAfterGcMb: afterGc.anonMb,
    ...adopted,
    split: layout,
    heapMb,
    objects,
    counts,
  };
}

// --dir/--root-dir/--keep: reuse a previous run's pods (110 Docker pods take minutes to start on a loaded machine).
const named = (name: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
// --runtime remote-1.7 (or remote: containerd 1.6): the builds on the test services' containerd, through the CRI.
const runtime = (named("--runtime") ?? "docker") as RuntimeChoice;
if (!["docker", "remote", "remote-1.7"].includes(runtime))
  throw new Error(`--runtime ${runtime}: give docker, remote or remote-1.7`);
const dir = named("--dir") ?? tempDir("bench-memory-manifests");
const rootDir = named("--root-dir") ?? tempDir("bench-memory-root");
const keep = process.argv.includes("--keep");
const samples: Sample[] = [];
const pass = async (pods: number, dir: string, rootDir: string) => {
  for (let round = 0; round < rounds; round++)
    for (const binary of binaries) {
      const startedAt = performance.now();
      const k = await startKubelet(services, runtime, { dir, rootDir, binary });
      samples.push(await measure(k, binary, pods, startedAt));
      console.error(`memory: ${JSON.stringify({ ...samples.at(-1), counts: undefined })}`);
      await k.stop();
    }
};

const burstSeconds = arg("--burst", 0);
if (burstSeconds > 0) {
  await burstPass();
  apps.close();
  process.exit(0);
}

for (let i = 0; i < podCount; i++) writeFileSync(join(dir, `mem${i}.yaml`), sleepingPod(services, `mem${i}`));
{
  const k = await startKubelet(services, runtime, { dir, rootDir, binary: binaries[0] });
  await until(async () => (await apps.running(runtime, "mem")) === podCount, 900_000);
  await k.stop();
}
await pass(podCount, dir, rootDir);
if (profileDir)
  for (const [n, binary] of binaries.entries()) {
    const out = join(profileDir, String(n));
    mkdirSync(out, { recursive: true });
    process.env.BUN_OPTIONS = `--cpu-prof-md --cpu-prof-dir=${out} --heap-prof-md --heap-prof-dir=${out}`;
    const k = await startKubelet(services, runtime, { dir, rootDir, binary });
    delete process.env.BUN_OPTIONS;
    await Bun.sleep((settleSeconds + windowSeconds) * 1000);
    await k.stop();
    console.error(`memory: profiles of ${binary} in ${out}`);
  }
if (!keep) {
  for (let i = 0; i < podCount; i++) rmSync(join(dir, `mem${i}.yaml`));
  const k = await startKubelet(services, runtime, { dir, rootDir, binary: binaries[0] });
  await until(async () => (await apps.running(runtime, "mem")) === 0, 900_000);
  await k.stop();
}
if (!keep) removeDir(dir), removeDir(rootDir);
// 0 pods, once the pods are gone (a kubelet stops the pods it does not know): an empty manifest directory
// and a root of its own. Left out with --keep.
if (!keep) {
  const empty = tempDir("bench-memory-empty");
  const emptyRoot = tempDir("bench-memory-empty-root");
  await pass(0, empty, emptyRoot);
  removeDir(empty);
  removeDir(emptyRoot);
}
apps.close();

console.log(
  `${machine()}; ${runtime === "docker" ? "Docker" : runtime}; ${rounds} alternating rounds, ${settleSeconds} s settling, ${windowSeconds} s CPU window; RSS read before /debug/heap's full GC`,
);
console.log(
  "build | pods | idle CPU (% of a core) | VmRSS (MB) | RssAnon | RssFile | RssAnon after a full GC | RssAnon peak while adopting | adopted after (s) | heap objects",
);
for (const binary of binaries)
  for (const pods of [0, podCount]) {
    const s = samples.filter((x) => x.binary === binary && x.pods === pods);
    if (s.length === 0) continue;
    console.log(
      `${binary} | ${pods} | ${mean(s.map((x) => x.cpuPercent)).toFixed(2)} % | ${mean(s.map((x) => x.rssMb)).toFixed(1)} | ${mean(s.map((x) => x.anonMb)).toFixed(1)} | ${mean(s.map((x) => x.fileMb)).toFixed(1)} | ${mean(s.map((x) => x.anonAfterGcMb)).toFixed(1)} | ${mean(s.map((x) => x.peakAnonMb)).toFixed(1)} | ${mean(s.map((x) => x.adoptSeconds)).toFixed(1)} | ${mean(s.map((x) => x.objects)).toFixed(0)}`,
    );
  }
// Resident MB by mapping, settled, mean of the rounds: the executable's pages (bun's code vs our bundle) and the anon ones.
for (const binary of binaries)
  for (const pods of [0, podCount]) {
    const s = samples.filter((x) => x.binary === binary && x.pods === pods);
    if (s.length === 0) continue;
    const keys = [...new Set(s.flatMap((x) => Object.keys(x.split)))].sort();
    console.log(
      `${binary} | ${pods} pods | ${keys.map((key) => `${key} ${mean(s.map((x) => x.split[key] ?? 0)).toFixed(1)}`).join(", ")}` +
        (s.every((x) => x.heapMb)
          ? ` | JS heap: size ${mean(s.map((x) => x.heapMb!.size)).toFixed(1)}, capacity ${mean(s.map((x) => x.heapMb!.capacity)).toFixed(1)}, extra memory ${mean(s.map((x) => x.heapMb!.extra)).toFixed(1)}`
          : ""),
    );
  }
// Idle CPU by thread at 110 pods, summed over the rounds' windows.
for (const binary of binaries) {
  const threads = new Map<string, number>();
  const s = samples.filter((x) => x.binary === binary && x.pods === podCount);
  for (const x of s)
    for (const [name, p] of Object.entries(x.threads)) threads.set(name, (threads.get(name) ?? 0) + p / s.length);
  const top = [...threads].filter(([, p]) => p > 0).sort((a, b) => b[1] - a[1]);
  console.log(`${binary}: idle CPU by thread (% of a core): ${top.map(([n, p]) => `${n} ${p.toFixed(2)}`).join(", ")}`);
}
// Heap objects per pod by type: (110 pods - 0 pods) / 110, the last sample of each, largest first.
for (const binary of binaries) {
  const last = (pods: number) => samples.filter((x) => x.binary === binary && x.pods === pods).at(-1)?.counts ?? {};
  const full = last(podCount);
  const empty = last(0); // {} with --keep: the whole heap's counts over 110
  const perPod = Object.entries(full)
    .map(([type, n]) => [type, (n - (empty[type] ?? 0)) / podCount] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15);
  console.log(
    `${binary}: heap objects per pod by type${Object.keys(empty).length ? "" : " (no 0-pod run with --keep: the whole heap over the pods)"}: ${perPod.map(([t, n]) => `${t} ${n.toFixed(1)}`).join(", ")}`,
  );
}

/**
 * --burst: per build and round, a kubelet started on an empty manifest directory creates --pods pods --settle s after
 * start; VmRSS/RssAnon every 10 s from when the last one runs, for --burst s; then the pods are removed (the same
 * kubelet stops them) before the next build starts.
 */
async function burstPass(): Promise<void> {
  const every = 10;
  const rows: { binary: string; rss: number[]; anon: number[]; cpuPercent: number; createdSeconds: number }[] = [];
  for (let round = 0; round < rounds; round++)
    for (const binary of binaries) {
      const burstDir = tempDir("bench-memory-burst");
      const burstRoot = tempDir("bench-memory-burst-root");
      const k = await startKubelet(services, runtime, { dir: burstDir, rootDir: burstRoot, binary });
      await Bun.sleep(settleSeconds * 1000);
      const createdAt = performance.now();
      for (let i = 0; i < podCount; i++)
        writeFileSync(join(burstDir, `burst${i}.yaml`), sleepingPod(services, `burst${i}`));
      await until(async () => (await apps.running(runtime, "burst")) === podCount, 900_000);
      const createdSeconds = (performance.now() - createdAt) / 1000;
      const before = cpuSeconds(k.child.pid!);
      const rss: number[] = [];
      const anon: number[] = [];
      for (let t = 0; t <= burstSeconds; t += every) {
        const now = status(k.child.pid!);
        rss.push(now.rssMb);
        anon.push(now.anonMb);
        if (t < burstSeconds) await Bun.sleep(every * 1000);
      }
      const cpuPercent = ((cpuSeconds(k.child.pid!) - before) / burstSeconds) * 100;
      rows.push({ binary, rss, anon, cpuPercent, createdSeconds });
      console.error(`memory: ${JSON.stringify(rows.at(-1))}`);
      for (let i = 0; i < podCount; i++) rmSync(join(burstDir, `burst${i}.yaml`));
      await until(async () => (await apps.running(runtime, "burst")) === 0, 900_000);
      await k.stop();
      removeDir(burstDir);
      removeDir(burstRoot);
    }
  console.log(
    `${machine()}; ${runtime === "docker" ? "Docker" : runtime}; ${rounds} alternating rounds; ${podCount} pods created ${settleSeconds} s after start; VmRSS (RssAnon) in MB, s after the last pod ran`,
  );
  const marks = [0, 30, 60, 120, 180, burstSeconds].filter((t, i, all) => t <= burstSeconds && all.indexOf(t) === i);
  console.log(`build | created in (s) | ${marks.map((t) => `${t} s`).join(" | ")} | CPU over the ${burstSeconds} s`);
  for (const binary of binaries) {
    const s = rows.filter((r) => r.binary === binary);
    const at = (t: number, key: "rss" | "anon") => mean(s.map((r) => r[key][Math.round(t / every)]!)).toFixed(1);
    console.log(
      `${binary} | ${mean(s.map((r) => r.createdSeconds)).toFixed(1)} | ${marks.map((t) => `${at(t, "rss")} (${at(t, "anon")})`).join(" | ")} | ${mean(s.map((r) => r.cpuPercent)).toFixed(2)} %`,
    );
  }
}

function fail(message: string): never {
  throw new Error(message);
}
