// Soak: the compiled kubelet under churn on the real dockerd. Every second pods are added, edited
// (a changed env value replaces the container) and removed, up to `peak` pods; RSS, CPU and open
// file descriptors are sampled each second. At the end every manifest is deleted and nothing may
// be left: no containers, no pod directories, no Docker volumes, no extra file descriptors, no more
// timers than before the churn (live "Timeout" objects after a full GC, from the kubelet's /debug/heap).
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/soak.bench.ts [--seconds 600] [--peak 100]
// Prints a markdown table; writes an SVG plot of RSS and CPU over time (--svg, default bench/soak.svg).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { KEPT_ENGINE_CONNECTIONS } from "../lib/container/docker/docker.ts";
import type { HeapBytes } from "../lib/platform/heap.ts";
import { freePortNumber } from "../lib/testing/ports.ts";
import { KUBELET_BINARY, testServices, type TestServices } from "../lib/testing/services.ts";
import { baseFlags, removeCgroupRoot, removeDir, tempDir } from "../test/e2e/harness.ts";

export interface SoakOptions {
  seconds: number;
  peak: number;
  services: TestServices;
}

export interface SoakSample {
  t: number;
  pods: number;
  rssMb: number;
  /** Share of one core used since the previous sample. */
  cpu: number;
  fds: number;
}

export interface SoakReport {
  options: { seconds: number; peak: number };
  samples: SoakSample[];
  actions: { added: number; edited: number; removed: number };
  /** After every manifest was deleted and the kubelet settled. */
  leaked: { containers: string[]; podDirs: string[]; volumes: number };
  fds: { before: number; after: number; added: string[] };
  /** Live timers (heap "Timeout" objects after a full GC) once started, and after clean-up. */
  timers: { before: number; after: number };
  /** Heap object types that grew most between those two points. */
  heapGrowth: Array<{ type: string; before: number; after: number }>;
  /**
   * Live strings, plain objects and timers after a full GC, with the events the kubelet holds (GET /events),
   * at each phase: the event recorder keeps up to 1,000 events of pods long gone, so growth that follows the
   * event count up to that cap and stops there is a bounded cache, and growth beyond it a leak.
   */
  phases: HeapPhase[];
  /**
   * RSS halfway through the waves and at the end of the run, both near `peak` pods and both after the
   * ramp's warm-up, each read a second after a full GC (the phases' counts): flat when the second is not above
   * the first. Read between collections, RSS swings ±15 MB with the GC's timing alone (30 pods, 240 s run).
   */
  rss: { afterStartMb: number; midRunMb: number; runEndMb: number; maxMb: number; finalMb: number };
  /**
   * The JS heap's live objects and what they own outside it, at the same two points: what a leak grows, without
   * RSS's noise (the allocator's and the GC's pages). Without a leak, +1.1 to +3.2 MB from halfway to the end of a
   * 60 s run (the event ring, code compiled late); keeping 256 KB per manifest read, +18.5 MB (RSS +9.6 % only).
   */
  heap: { midRunMb: number; runEndMb: number };
  cleanupSeconds: number;
}

export interface HeapPhase {
  phase: string;
  t: number;
  pods: number;
  events: number;
  strings: number;
  objects: number;
  timers: number;
  /** The JS heap's live objects after the GC (MB). */
  heapMb: number;
  /** What they own outside it and report (ArrayBuffers, strings' characters, compiled code), MB. */
  extraMb: number;
  /** RSS a second after the full GC of the count: the allocator has returned the freed pages by then. */
  rssMb: number;
}

const PREFIX = "soak-";

const heapMb = (phase: HeapPhase) => phase.heapMb + phase.extraMb;

const manifest = (name: string, image: string, generation: number, volume: boolean) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${image}
    command: [sleep, "3600"]
    env: [{name: GENERATION, value: "${generation}"}]
${volume ? "    volumeMounts: [{name: scratch, mountPath: /scratch}]\n  volumes: [{name: scratch, emptyDir: {}}]\n" : ""}`;

function docker(services: TestServices, ...args: string[]): string {
  const result = spawnSync("docker", ["-H", services.dockerHost, ...args], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`docker ${args.join(" ")}: ${result.stderr}`);
  return result.stdout.trim();
}

const soakContainers = (services: TestServices) =>
  docker(services, "ps", "-a", "--filter", "label=io.kubernetes.pod.namespace=default", "--format", "{{.Names}}")
    .split("\n")
    .filter((name) => name.includes(`_${PREFIX}`));

/** The pods (by name) whose app container runs, and those with a container (sandbox or app) in any state. */
function podsWithContainers(services: TestServices): { running: Set<string>; any: Set<string> } {
  const rows = docker(
    services,
    "ps",
    "-a",
    "--filter",
    "label=io.kubernetes.pod.namespace=default",
    "--format",
    '{{.Label "io.kubernetes.pod.name"}} {{.Label "io.kubernetes.container.name"}} {{.State}}',
  );
  const running = new Set<string>();
  const any = new Set<string>();
  for (const [pod, container, state] of rows.split("\n").map((row) => row.split(" "))) {
    if (!pod?.startsWith(PREFIX)) continue;
    any.add(pod);
    if (container === "app" && state === "running") running.add(pod);
  }
  return { running, any };
}

const volumeCount = (services: TestServices) =>
  docker(services, "volume", "ls", "-q").split("\n").filter(Boolean).length;

/** What each open descriptor points at ("socket:[…]" and "anon_inode:[…]" without their inode). */
function fdTargets(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/\[\d+\]$/, "")];
    } catch {
      return []; // closed while listing
    }
  });
}

function procStats(pid: number): { rssMb: number; ticks: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return {
    rssMb: Number(status.match(/^VmRSS:\s+(\d+) kB/m)![1]) / 1024,
    ticks: Number(stat[11]) + Number(stat[12]),
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

/** Pod count the churn steers toward at time t: a ramp to `peak`, then waves between 60 % and 100 %. */
function target(t: number, seconds: number, peak: number): number {
  const ramp = seconds * 0.2;
  if (t < ramp) return Math.round((peak * t) / ramp);
  const phase = ((t - ramp) / Math.max(1, seconds - ramp)) * 4 * Math.PI;
  return Math.round(peak * (0.8 + 0.2 * Math.cos(phase)));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The kubelet's live heap objects by type after a full GC (timers are "Timeout"), and the heap's bytes then. */
interface LiveHeap {
  counts: Record<string, number>;
  bytes: HeapBytes;
}

/** GET /debug/heap: the counts and sizes of LiveHeap. */
async function liveHeap(port: number, rootDir: string): Promise<LiveHeap> {
  // A debugging handler: the admin token the kubelet wrote at start (loopback opens nothing).
  const token = readFileSync(join(rootDir, "admin-token"), "utf8").trim();
  const response = await fetch(`http://127.0.0.1:${port}/debug/heap`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (!response.ok) throw new Error(`GET /debug/heap: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { objectTypeCounts: Record<string, number>; heapBytes: HeapBytes };
  return { counts: body.objectTypeCounts, bytes: body.heapBytes };
}

/** The events the kubelet holds (GET /events). */
async function eventCount(port: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/events`);
  if (!response.ok) throw new Error(`GET /events: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { items: unknown[] }).items.length;
}

/** The object types that grew most from one heap count to the other: where to look for a leak. */
function heapGrowth(before: Record<string, number>, after: Record<string, number>, top = 5) {
  return Object.entries(after)
    .map(([type, count]) => ({ type, before: before[type] ?? 0, after: count }))
    .filter((row) => row.after > row.before)
    .sort((a, b) => b.after - b.before - (a.after - a.before))
    .slice(0, top);
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { services, seconds, peak } = options;
  const manifests = tempDir("soak-manifests");
  const rootDir = tempDir("soak-root");
  const volumesBefore = volumeCount(services);
  const port = await freePortNumber();
  const child = spawn(
    KUBELET_BINARY,
    ["run", "-c", manifests, ...baseFlags(services, rootDir), "--address", "127.0.0.1", "--port", String(port)],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
  });
  const pid = child.pid!;
  const live = new Map<string, number>(); // name → generation
  const actions = { added: 0, edited: 0, removed: 0 };
  let serial = 0;
  const write = (name: string, generation: number) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      manifest(name, services.busybox, generation, Number(name.slice(PREFIX.length)) % 3 === 0),
    );
  const remove = (name: string) => {
    rmSync(join(manifests, `${name}.yaml`), { force: true });
    live.delete(name);
    actions.removed++;
  };
  try {
    await sleep(1000);
    const phases: HeapPhase[] = [];
    const rssAfterGc = async () => {
      await sleep(1000);
      return procStats(pid).rssMb;
    };
    const measure = async (phase: string, t: number, heap?: LiveHeap) => {
      const { counts, bytes } = heap ?? (await liveHeap(port, rootDir));
      phases.push({
        phase,
        t,
        pods: live.size,
        events: await eventCount(port),
        strings: counts.string ?? 0,
        objects: counts.Object ?? 0,
        timers: counts.Timeout ?? 0,
        heapMb: bytes.heapSize / 2 ** 20,
        extraMb: bytes.extraMemorySize / 2 ** 20,
        rssMb: await rssAfterGc(),
      });
      return counts;
    };
    // A checkpoint's count is taken once the node matches the manifests (every live pod running, no removed pod's
    // container left; 30 s at most): counted mid-way, the work in flight (pods starting, containers stopping, their
    // timers and buffers) moves RSS by ±10 % and the halfway and end-of-run counts would not compare like for like.
    const matchManifests = async (want: Set<string>) => {
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(250)) {
        const { running, any } = podsWithContainers(services);
        if (running.size === want.size && [...any].every((pod) => want.has(pod) && running.has(pod))) return;
      }
    };
    const heapBefore = await measure("started", 0);
    const midRun = Math.round(seconds * 0.2 + (seconds * 0.8) / 2);
    const checkpoints = new Map([
      [Math.round(seconds * 0.2), "end of the ramp"],
      [midRun + 3, "halfway through the waves"],
      [seconds, "end of the churn"],
    ]);
    const start = procStats(pid);
    const targetsBefore = fdTargets(pid);
    const samples: SoakSample[] = [];
    let previous = start;
    const began = Date.now();
    for (let t = 1; t <= seconds; t++) {
      const want = target(t, seconds, peak);
      for (let i = 0; i < 3 && live.size < want; i++) {
        const name = `${PREFIX}${serial++}`;
        live.set(name, 0);
        write(name, 0);
        actions.added++;
      }
      for (let i = 0; i < 3 && live.size > want; i++) remove([...live.keys()][0]!);
      const names = [...live.keys()];
      for (let i = 0; i < 2 && names.length; i++) {
        const name = names[(t * 7 + i * 13) % names.length]!;
        live.set(name, live.get(name)! + 1);
        write(name, live.get(name)!);
        actions.edited++;
      }
      // One pod removed and another added every second, even at the target.
      if (names.length > 1 && t % 2 === 0) {
        remove(names[t % names.length]!);
        const name = `${PREFIX}${serial++}`;
        live.set(name, 0);
        write(name, 0);
        actions.added++;
      }
      await sleep(Math.max(0, began + t * 1000 - Date.now()));
      const now = procStats(pid);
      samples.push({ t, pods: live.size, rssMb: now.rssMb, cpu: (now.ticks - previous.ticks) / 100, fds: now.fds });
      const checkpoint = checkpoints.get(t);
      if (checkpoint) {
        await matchManifests(new Set(live.keys()));
        await measure(checkpoint, t);
      }
      // The heap count and its full GC are the kubelet's work, not the churn's: CPU is counted from here.
      previous = checkpoint ? procStats(pid) : now;
    }
    for (const name of [...live.keys()]) remove(name);
    const cleanupStart = Date.now();
    const deadline = cleanupStart + 180_000;
    const podsDir = join(rootDir, "pods");
    const podDirs = () => (existsSync(podsDir) ? readdirSync(podsDir) : []);
    while (Date.now() < deadline && (soakContainers(services).length > 0 || podDirs().length > 0)) await sleep(500);
    const cleanupSeconds = (Date.now() - cleanupStart) / 1000;
    // Connections of the clean-up's burst close down to the kept-alive bound: wait for that (30 s at most).
    const fdDeadline = Date.now() + 30_000;
    while (Date.now() < fdDeadline && procStats(pid).fds > start.fds + KEPT_ENGINE_CONNECTIONS) await sleep(500);
    // A timer in flight at one count (a resync, a probe, a retry) is not a leak: count again, up to 15 times a
    // second apart (a loaded machine lags the kubelet's last passes by seconds), until there are no more
    // timers than at start; a leaked timer stays in every count.
    let settled = await liveHeap(port, rootDir);
    for (let i = 0; i < 14 && (settled.counts.Timeout ?? 0) > (heapBefore.Timeout ?? 0); i++) {
      await sleep(1000);
      const again = await liveHeap(port, rootDir);
      if ((again.counts.Timeout ?? 0) < (settled.counts.Timeout ?? 0)) settled = again;
    }
    const heapAfter = await measure("after clean-up", Math.round((Date.now() - began) / 1000), settled);
    const end = procStats(pid);
    const added = fdTargets(pid);
    for (const target of targetsBefore) added.splice(added.indexOf(target), added.includes(target) ? 1 : 0);
    return {
      options: { seconds, peak },
      samples,
      actions,
      leaked: {
        containers: soakContainers(services),
        podDirs: podDirs(),
        volumes: volumeCount(services) - volumesBefore,
      },
      fds: { before: start.fds, after: end.fds, added },
      timers: { before: heapBefore.Timeout ?? 0, after: heapAfter.Timeout ?? 0 },
      heapGrowth: heapGrowth(heapBefore, heapAfter),
      phases,
      heap: {
        midRunMb: heapMb(phases.find((p) => p.phase === "halfway through the waves")!),
        runEndMb: heapMb(phases.find((p) => p.phase === "end of the churn")!),
      },
      rss: {
        afterStartMb: start.rssMb,
        midRunMb: phases.find((p) => p.phase === "halfway through the waves")!.rssMb,
        runEndMb: phases.find((p) => p.phase === "end of the churn")!.rssMb,
        maxMb: Math.max(...samples.map((s) => s.rssMb)),
        finalMb: end.rssMb,
      },
      cleanupSeconds,
    };
  } catch (error) {
    throw new Error(`soak failed: ${(error as Error).message}\nkubelet stderr (tail):\n${stderr}`);
  } finally {
    child.kill("SIGKILL");
    const leftovers = soakContainers(services);
    if (leftovers.length) spawnSync("docker", ["-H", services.dockerHost, "rm", "-f", ...leftovers]);
    removeDir(manifests);
    removeDir(rootDir);
    removeCgroupRoot(rootDir);
  }
}

/** The report as a markdown table. */
export function soakTable(report: SoakReport): string {
  const cpu = report.samples.map((s) => s.cpu);
  const mean = cpu.reduce((a, b) => a + b, 0) / Math.max(1, cpu.length);
  const rows: Array<[string, string]> = [
    ["duration / peak pods", `${report.options.seconds} s / ${report.options.peak}`],
    ["pods added / edited / removed", `${report.actions.added} / ${report.actions.edited} / ${report.actions.removed}`],
    [
      "RSS after start / max / after clean-up (MB)",
      `${report.rss.afterStartMb.toFixed(1)} / ${report.rss.maxMb.toFixed(1)} / ${report.rss.finalMb.toFixed(1)}`,
    ],
    [
      `RSS after a full GC near ${report.options.peak} pods: halfway / end of run (MB)`,
      `${report.rss.midRunMb.toFixed(1)} / ${report.rss.runEndMb.toFixed(1)}`,
    ],
    [
      "heap and what it owns outside, the same points (MB)",
      `${report.heap.midRunMb.toFixed(2)} / ${report.heap.runEndMb.toFixed(2)}`,
    ],
    ["kubelet CPU, mean / max (% of a core)", `${(mean * 100).toFixed(1)} / ${(Math.max(...cpu) * 100).toFixed(1)}`],
    [
      "open file descriptors before / after",
      `${report.fds.before} / ${report.fds.after}${report.fds.added.length ? ` (new: ${report.fds.added.join(", ")})` : ""}`,
    ],
    ["live timers before / after", `${report.timers.before} / ${report.timers.after}`],
    [
      "heap objects grown most, before → after clean-up",
      report.heapGrowth.map((g) => `${g.type} ${g.before} → ${g.after}`).join(", ") || "none",
    ],
    [
      "leaked containers / pod directories / volumes",
      `${report.leaked.containers.length} / ${report.leaked.podDirs.length} / ${report.leaked.volumes}`,
    ],
    ["clean-up after the last manifest was deleted (s)", report.cleanupSeconds.toFixed(1)],
  ];
  return [
    "| soak | value |",
    "| --- | --- |",
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    "",
    "| heap after a full GC | t (s) | pods | events held | strings | objects | timers | heap / outside it (MB) | RSS (MB) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...report.phases.map(
      (p) =>
        `| ${p.phase} | ${p.t} | ${p.pods} | ${p.events} | ${p.strings} | ${p.objects} | ${p.timers} | ${p.heapMb.toFixed(2)} / ${p.extraMb.toFixed(2)} | ${p.rssMb.toFixed(1)} |`,
    ),
  ].join("\n");
}

/** RSS (MB) and CPU (% of a core) over time, as a self-contained SVG. */
export function soakSvg(report: SoakReport): string {
  const width = 800;
  const height = 300;
  const pad = 50;
  const tMax = Math.max(1, ...report.samples.map((s) => s.t));
  const rssMax = Math.max(1, ...report.samples.map((s) => s.rssMb)) * 1.1;
  const cpuMax = Math.max(0.05, ...report.samples.map((s) => s.cpu)) * 1.1;
  const x = (t: number) => pad + ((width - 2 * pad) * t) / tMax;
  const y = (v: number, max: number) => height - pad - ((height - 2 * pad) * v) / max;
  const line = (pick: (s: SoakSample) => number, max: number) =>
    report.samples.map((s) => `${x(s.t).toFixed(1)},${y(pick(s), max).toFixed(1)}`).join(" ");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<line x1="${pad}" y1="${height - pad}" x2="${width - pad}" y2="${height - pad}" stroke="black"/>
<line x1="${pad}" y1="${pad}" x2="${pad}" y2="${height - pad}" stroke="black"/>
<line x1="${width - pad}" y1="${pad}" x2="${width - pad}" y2="${height - pad}" stroke="black"/>
<text x="${width / 2}" y="${height - 15}" text-anchor="middle">time (s), 0–${tMax}</text>
<text x="10" y="${pad - 15}" fill="#1f77b4">RSS (MB), max ${rssMax.toFixed(0)}</text>
<text x="${width - 10}" y="${pad - 15}" fill="#d62728" text-anchor="end">CPU (% of a core), max ${(cpuMax * 100).toFixed(0)}</text>
<polyline fill="none" stroke="#d62728" stroke-width="1" points="${line((s) => s.cpu, cpuMax)}"/>
<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="${line((s) => s.rssMb, rssMax)}"/>
</svg>
`;
}

if (import.meta.main) {
  const services = testServices();
  if (!services) throw new Error("services are not running: bash scripts/services.sh up");
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1]! : fallback;
  };
  const report = await runSoak({
    services,
    seconds: Number(arg("--seconds", "600")),
    peak: Number(arg("--peak", "100")),
  });
  writeFileSync(arg("--svg", join(import.meta.dir, "soak.svg")), soakSvg(report));
  console.log(`Soak on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"} (shared machine):\n`);
  console.log(soakTable(report));
}
