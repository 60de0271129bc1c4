// Issue 41: which Engine calls the idle kubelet makes, per minute, and over how many connections (Docker).
// A proxy on a unix socket of its own sits between the kubelet and dockerd and counts each request line by
// method and path (container ids and names folded), and each connection opened; the counts start once the pods
// are adopted and settled, so what is listed is the steady state's periodic work, not the adoption burst.
// --profile DIR: the steady state's JS profile too: each build runs twice more under bun's --cpu-prof-md on the
// adopted pods, stopped after settling and after settling plus the window; the second profile minus the first
// (self and total time by function) is the window's alone, without start-up and adoption.
// The window's CPU is also given by thread name (the JS thread, Bun's pools, the allocator's and GC's threads).
// Usage: bash scripts/services.sh up && bun bench/idle-calls.bench.ts --binary dist/kubelet [--pods 110] [--settle 20] [--window 60]
//   [--dir D --root-dir R --keep]: reuse and keep the pods between runs
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { appCounter, cpuSeconds, machine, sleepingPod, startKubelet, until } from "./support.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const named = (name: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
const binaries = process.argv.flatMap((a, i) => (process.argv[i - 1] === "--binary" ? [a] : []));
if (binaries.length === 0) throw new Error("name the builds: --binary dist/kubelet [--binary other]");
const podCount = Number(named("--pods") ?? 110);
const settleSeconds = Number(named("--settle") ?? 20);
const windowSeconds = Number(named("--window") ?? 60);

/** Folds what differs per object (64-hex ids, container names, pod uids in filters) so one periodic job is one line. */
const callKey = (method: string, path: string) =>
  `${method} ${path
    .replace(/[0-9a-f]{64}/g, "{id}")
    .replace(/\/containers\/k8s_[^/?]+/g, "/containers/{name}")
    .replace(/=(%7B|\{)[^&]*/gi, (v) => `=${decodeURIComponent(v.slice(1)).replace(/[0-9a-f-]{36}/g, "{uid}")}`)}`;

const engineSocket = services.dockerHost.replace(/^unix:\/\//, "");
const scratch = tempDir("bench-idle-calls");
const proxySocket = join(scratch, "docker.sock");
let counting = false;
const calls = new Map<string, number>();
let connections = 0;
const proxy = createServer((client: Socket) => {
  if (counting) connections++;
  const engine = createConnection(engineSocket);
  let head = "";
  client.on("data", (chunk: Buffer) => {
    // Request lines only: the first line of each request the client writes (bodies are small JSON or none).
    head += chunk.toString("latin1");
    for (const m of head.matchAll(/(?:^|\r\n)(GET|POST|DELETE|PUT|HEAD) (\S+) HTTP\/1\.[01]\r\n/g))
      if (counting) calls.set(callKey(m[1]!, m[2]!), (calls.get(callKey(m[1]!, m[2]!)) ?? 0) + 1);
    head = head.slice(-200);
  });
  client.pipe(engine).pipe(client);
  const close = () => (client.destroy(), engine.destroy());
  client.on("error", close).on("close", close);
  engine.on("error", close).on("close", close);
});
await new Promise<void>((resolve) => proxy.listen(proxySocket, resolve));
const proxied = { ...services, dockerHost: `unix://${proxySocket}` };

const dir = named("--dir") ?? tempDir("bench-idle-calls-manifests");
const rootDir = named("--root-dir") ?? tempDir("bench-idle-calls-root");
const apps = appCounter(services);
for (let i = 0; i < podCount; i++) writeFileSync(join(dir, `calls${i}.yaml`), sleepingPod(services, `calls${i}`));
console.log(`${machine()}; Docker; ${podCount} pods; ${settleSeconds} s settling, ${windowSeconds} s window`);
for (const binary of binaries) {
  const k = await startKubelet(proxied, "docker", { dir, rootDir, binary });
  await until(async () => (await apps.running("docker", "calls")) === podCount, 900_000);
  await Bun.sleep(settleSeconds * 1000);
  calls.clear();
  connections = 0;
  counting = true;
  const cpuBefore = cpuSeconds(k.child.pid!);
  const threadsBefore = threadTicks(k.child.pid!);
  await Bun.sleep(windowSeconds * 1000);
  counting = false;
  const threadsAfter = threadTicks(k.child.pid!);
  const cpu = ((cpuSeconds(k.child.pid!) - cpuBefore) / windowSeconds) * 100;
  const status = () => readFileSync(`/proc/${k.child.pid}/status`, "utf8");
  const mb = (text: string, field: string) =>
    (Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)![1]) / 1024).toFixed(1);
  const before = status();
  // GET /debug/heap runs a full GC before counting: what RssAnon is once garbage is collected, and the HTTP
  // parsers node:http keeps (one per connection it made, up to its free list's bound).
  const token = readFileSync(join(rootDir, "admin-token"), "utf8").trim();
  const heap = (await (
    await fetch(`http://127.0.0.1:${k.port}/debug/heap`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as { objectTypeCounts: Record<string, number> };
  const afterGc = status();
  await k.stop();
  const perMinute = (n: number) => ((n * 60) / windowSeconds).toFixed(1);
  const total = [...calls.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${binary}: idle CPU ${cpu.toFixed(2)} % of a core; VmRSS ${mb(before, "VmRSS")} MB, RssAnon ${mb(before, "RssAnon")} MB (${mb(afterGc, "RssAnon")} MB after a full GC), HTTPParser ${heap.objectTypeCounts.HTTPParser ?? 0}; Engine requests ${perMinute(total)}/min over ${perMinute(connections)} connections/min`,
  );
  const byName = new Map<string, number>();
  for (const [tid, { name, ticks }] of threadsAfter)
    byName.set(name, (byName.get(name) ?? 0) + ticks - (threadsBefore.get(tid)?.ticks ?? 0));
  console.log(
    `  CPU by thread (ticks of 10 ms a minute): ${[...byName]
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${name} ${perMinute(n)}`)
      .join(", ")}`,
  );
  for (const [key, n] of [...calls].sort((a, b) => b[1] - a[1])) console.log(`  ${perMinute(n)}/min  ${key}`);
}

/** Each thread's name and CPU ticks (utime + stime) from /proc/<pid>/task: which of the runtime's threads spend. */
function threadTicks(pid: number): Map<string, { name: string; ticks: number }> {
  const threads = new Map<string, { name: string; ticks: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).replace(/\d+$/, "N");
      threads.set(tid, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {} // a thread that ended meanwhile
  }
  return threads;
}

/**
 * Self samples (1 ms apart while the JS thread runs) by function and location, from a --cpu-prof-md file's
 * "Function Details". Its time columns weigh each sample by the wall time since the one before, which on an idle
 * process is mostly sleep: the sample counts are the CPU.
 */
function profileSamples(file: string): Map<string, number> {
  const rows = new Map<string, number>();
  const text = readFileSync(file, "utf8");
  const details = text.slice(text.indexOf("## Function Details"));
  for (const m of details.matchAll(/### `([^`]*)`\n`([^`]*)` \|[^\n]*\| Samples: (\d+)/g)) {
    const key = `${m[1]} ${m[2]!.replace(/^.*\/(lib|node_modules)\//, "$1/")}`;
    rows.set(key, (rows.get(key) ?? 0) + Number(m[3]));
  }
  return rows;
}

const profileDir = named("--profile");
if (profileDir)
  for (const [n, binary] of binaries.entries()) {
    const runs: Map<string, number>[] = [];
    for (const seconds of [settleSeconds, settleSeconds + windowSeconds]) {
      const out = join(profileDir, `${n}-${seconds}s`);
      mkdirSync(out, { recursive: true });
      process.env.BUN_OPTIONS = `--cpu-prof-md --cpu-prof-dir=${out}`;
      const k = await startKubelet(services, "docker", { dir, rootDir, binary });
      delete process.env.BUN_OPTIONS;
      await Bun.sleep(seconds * 1000);
      await k.stop();
      runs.push(profileSamples(join(out, readdirSync(out).find((f) => f.endsWith(".md"))!)));
    }
    const [short, long] = runs as [Map<string, number>, Map<string, number>];
    const diff = [...long].map(([key, n]) => ({ key, samples: n - (short.get(key) ?? 0) }));
    const total = diff.reduce((sum, d) => sum + d.samples, 0);
    console.log(
      `${binary}: steady-state JS profile, self samples (ms of the JS thread) per minute, long run minus short run: ${((total * 60) / windowSeconds).toFixed(0)} in all`,
    );
    for (const d of diff.sort((a, b) => b.samples - a.samples).slice(0, 30))
      console.log(`    ${((d.samples * 60) / windowSeconds).toFixed(1)}  ${d.key}`);
  }
apps.close();
proxy.close();
if (!process.argv.includes("--keep")) {
  // The pods go with a kubelet that no longer lists them.
  for (let i = 0; i < podCount; i++) rmSync(join(dir, `calls${i}.yaml`));
  const k = await startKubelet(services, "docker", { dir, rootDir, binary: binaries[0] });
  await until(async () => (await apps.running("docker", "calls")) === 0, 900_000);
  await k.stop();
  removeDir(dir);
  removeDir(rootDir);
}
removeDir(scratch);
