// Issue 41 item 7, twenty pods: where containerd's seconds go. For each containerd, the raw CRI client's twenty pods
// at once and a cold `kubelet runonce` of the same twenty, alternated, each traced call by call from containerd's own
// log (RunPodSandbox, CreateContainer, StartContainer: request and return) with the CPU containerd, its shims and
// the client used meanwhile, against the wall time on this machine's cores: is containerd CPU-bound or serialized?
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/cold-start-trace.bench.ts [--rounds 3]
//        [--binary dist/kubelet] [--containerd 1.6,1.7]
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { commonFlags } from "../test/e2e/harness-runtimes.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { machine, rawCriPod, sleepingPodSet } from "./support.ts";

const services = testServices();
if (!services?.containerd) throw new Error("services are not running: bash scripts/services.sh up");
const args = process.argv.slice(2);
const value = (name: string) => args.flatMap((a, i) => (a === name && args[i + 1] ? [args[i + 1]!] : []))[0];
const rounds = Number(value("--rounds") ?? 3);
const binary = resolve(value("--binary") ?? KUBELET_BINARY);
const daemons: Record<string, { endpoint?: string; log: string }> = {
  "1.6": { endpoint: services.containerd, log: join(services.dir, "containerd.log") },
  "1.7": { endpoint: services.containerd17, log: join(services.dir, "containerd17.log") },
};
const versions = (value("--containerd") ?? "1.6,1.7").split(",").filter((v) => daemons[v]?.endpoint);
const root = tempDir("bench-cold-trace");
const COUNT = 20;
const TICKS = 100;

/** utime + stime (+ reaped children's, for a shim's runc) of a process, in ms; 0 once it is gone. */
function cpuMs(pid: number, children = false): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    const own = Number(f[11]) + Number(f[12]);
    return ((children ? own + Number(f[13]) + Number(f[14]) : own) * 1000) / TICKS;
  } catch {
    return 0;
  }
}

/** The machine's busy and total jiffies so far, every core (/proc/stat): what everyone, other users too, used. */
function machineJiffies(): { busy: number; total: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - fields[3]! - fields[4]!, total };
}

/** The daemon's pid and its shims' (`containerd-shim-runc-v2 … -address <its socket>`). */
function processesOf(endpoint: string): { daemon: number; shims: number[] } {
  const socket = endpoint.replace(/^unix:\/\//, "");
  const config = join(socket, "..", "config.toml");
  let daemon = 0;
  const shims: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
    } catch {
      continue;
    }
    if (/containerd --config /.test(cmdline) && cmdline.includes(config)) daemon = Number(entry);
    else if (cmdline.includes("containerd-shim") && cmdline.includes(`-address ${socket}`)) shims.push(Number(entry));
  }
  if (!daemon) throw new Error(`no containerd process with --config ${config}`);
  return { daemon, shims };
}

/** containerd's log lines written since `offset`. */
function logSince(file: string, offset: number): string[] {
  const size = statSync(file).size;
  const buffer = Buffer.alloc(size - offset);
  const fd = openSync(file, "r");
  readSync(fd, buffer, 0, buffer.length, offset);
  closeSync(fd);
  return buffer.toString("utf8").split("\n");
}

/** Times (ms from `t0`, wall clock) of each kind of CRI log line containerd wrote. */
function trace(lines: string[], t0: number): Record<string, number[]> {
  const kinds: Array<[string, RegExp]> = [
    ["RunPodSandbox sent", /msg="RunPodSandbox for &PodSandboxMetadata\{[^"]*\}"/],
    ["RunPodSandbox returned", /msg="RunPodSandbox for .* returns sandbox id/],
    ["CreateContainer sent", /msg="CreateContainer within sandbox .* for container /],
    ["CreateContainer returned", /msg="CreateContainer within sandbox .* returns container id/],
    ["StartContainer sent", /msg="StartContainer for \\"[0-9a-f]+\\""$/],
    ["StartContainer returned", /msg="StartContainer for .* returns successfully/],
  ];
  const out: Record<string, number[]> = {};
  for (const line of lines) {
    const time = /^time="([^"]+)"/.exec(line)?.[1];
    if (!time) continue;
    const at = Date.parse(time) - t0;
    for (const [kind, re] of kinds) if (re.test(line)) (out[kind] ??= []).push(at);
  }
  for (const list of Object.values(out)) list.sort((a, b) => a - b);
  return out;
}

const median = (v: number[]) => (v.length ? [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]! : Number.NaN);
const gaps = (v: number[]) => v.slice(1).map((x, i) => x - v[i]!);

interface Sample {
  wall: number;
  clientCpu: number;
  daemonCpu: number;
  shimCpu: number;
  /** The machine's cores busy over the run, anyone's work: near 1 means the twenty waited on CPU. */
  machineBusy: number;
  trace: Record<string, number[]>;
}

async function measure(version: string, subject: "raw" | "runonce", prefix: string): Promise<Sample> {
  const { endpoint, log } = daemons[version]! as { endpoint: string; log: string };
  const cri = createCriClient({ runtimeEndpoint: endpoint, requestTimeoutMs: 120_000 });
  const before = processesOf(endpoint);
  const daemonBefore = cpuMs(before.daemon);
  const shimsBefore = new Set(before.shims);
  const offset = statSync(log).size;
  const selfBefore = process.cpuUsage();
  const machineBefore = machineJiffies();
  const t0 = Date.now();
  let clientCpu: number;
  if (subject === "raw") {
    await Promise.all(
      Array.from({ length: COUNT }, (_, i) => rawCriPod(cri, services!, join(root, "raw"), `${prefix}-${i}`)),
    );
    const used = process.cpuUsage(selfBefore);
    clientCpu = (used.user + used.system) / 1000;
  } else {
    const set = sleepingPodSet(services!, root, prefix, COUNT);
    const rootDir = join(root, `rd-${version.replace(".", "")}`);
    const usage = join(root, "usage");
    const run = Bun.spawnSync(
      [
        "/usr/bin/time",
        ...["-f", "%U %S", "-o", usage],
        binary,
        ...["runonce", "-c", set.dir, "--container_runtime", "remote", "--container_runtime_endpoint", endpoint],
        ...["--pod_logs_dir", join(rootDir, "logs"), ...commonFlags(rootDir)],
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    if (run.exitCode !== 0) throw new Error(`runonce on containerd ${version} exited ${run.exitCode}: ${run.stdout}`);
    const [user, system] = readFileSync(usage, "utf8").trim().split("\n").pop()!.split(" ").map(Number);
    clientCpu = (user! + system!) * 1000;
  }
  const wall = Date.now() - t0;
  const machineAfter = machineJiffies();
  const after = processesOf(endpoint);
  const sample: Sample = {
    wall,
    clientCpu,
    daemonCpu: cpuMs(after.daemon) - daemonBefore,
    // The new shims' CPU with their reaped runc children: what the twenty sandboxes and containers cost them.
    shimCpu: after.shims.filter((pid) => !shimsBefore.has(pid)).reduce((sum, pid) => sum + cpuMs(pid, true), 0),
    machineBusy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total),
    trace: trace(logSince(log, offset), t0),
  };
  for (const s of await cri.listPodSandbox())
    if (s.metadata.name.startsWith(`${prefix}-`)) {
      await cri.stopPodSandbox(s.id);
      await cri.removePodSandbox(s.id);
    }
  cri.close();
  return sample;
}

const loadAtStart = loadavg()
  .map((l) => l.toFixed(1))
  .join(" ");
const samples: Record<string, Sample[]> = {};
for (let round = 0; round < rounds; round++)
  for (const version of versions)
    for (const subject of round % 2 === 0 ? (["raw", "runonce"] as const) : (["runonce", "raw"] as const))
      (samples[`${version} ${subject}`] ??= []).push(await measure(version, subject, `ct-${subject}-${round}`));
removeDir(root);

console.log(
  `${machine()} (${cpus().length} cores); load average ${loadAtStart} at the start, ${loadavg()
    .map((l) => l.toFixed(1))
    .join(
      " ",
    )} at the end; medians of ${rounds} rounds of ${COUNT} pods; times in ms from the client's start (spawn, for runonce)`,
);
console.log(
  "| containerd | client | wall | client CPU | containerd CPU | shims + runc CPU | theirs ÷ (wall × cores) | machine busy | sandboxes sent, first–last | sandboxes returned, first–last | median gap between returns | starts returned, first–last |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const version of versions)
  for (const subject of ["raw", "runonce"]) {
    const list = samples[`${version} ${subject}`]!;
    const m = (f: (s: Sample) => number) => median(list.map(f)).toFixed(0);
    const span = (kind: string) =>
      `${m((s) => s.trace[kind]?.[0] ?? Number.NaN)}–${m((s) => s.trace[kind]?.at(-1) ?? Number.NaN)}`;
    const busy = median(list.map((s) => (s.clientCpu + s.daemonCpu + s.shimCpu) / (s.wall * cpus().length)));
    console.log(
      `| ${version} | ${subject} | ${m((s) => s.wall)} | ${m((s) => s.clientCpu)} | ${m((s) => s.daemonCpu)} | ${m((s) => s.shimCpu)} | ${(busy * 100).toFixed(0)} % | ${(median(list.map((s) => s.machineBusy)) * 100).toFixed(0)} % | ${span("RunPodSandbox sent")} | ${span("RunPodSandbox returned")} | ${m((s) => median(gaps(s.trace["RunPodSandbox returned"] ?? [])))} | ${span("StartContainer returned")} |`,
    );
  }
