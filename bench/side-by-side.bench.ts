// Issue 26's table, measured as the issue measures it: whole processes from a cold start, interleaved round by
// round, clean-up not timed, medians of the rounds:
//   `kubelet runonce` of one pod and of 20 pods (the same YAML) on containerd and on Docker, against `podman kube
//   play` (Debian's podman 4.3, rootful, its own root, network none, the local pause as infra image: support.ts
//   podmanCommand); `kubelet runonce` with no pods (start-up alone: wall time and peak RSS); and, for the CRI, a raw
//   in-process CRI client (RunPodSandbox + CreateContainer + StartContainer on a connected client) plus the
//   process's own start-up (the no-pod runonce on containerd) as the floor, for one pod and for twenty started at once.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/side-by-side.bench.ts [--rounds 5]
// (podman: apt-get install podman; without it its column is left empty)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadavg } from "node:os";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { commonFlags } from "../test/e2e/harness-runtimes.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { engineApi, machine, podmanCommand, podmanPlay, rawCriPod, sleepingPodSet } from "./support.ts";

const services = testServices();
if (!services?.containerd) throw new Error("services are not running: bash scripts/services.sh up");
const rounds = process.argv.includes("--rounds") ? Number(process.argv[process.argv.indexOf("--rounds") + 1]) : 5;
const root = tempDir("bench-side-by-side");
const cri = createCriClient({ runtimeEndpoint: services.containerd, requestTimeoutMs: 120_000 });
const engine = engineApi(services);
const podman = podmanCommand(services);
const loadAtStart = loadavg()
  .map((l) => l.toFixed(1))
  .join(" ");

const manifests = (prefix: string, count: number) => sleepingPodSet(services, root, prefix, count);

const runtimeFlags = {
  containerd: [
    "--container_runtime",
    "remote",
    "--container_runtime_endpoint",
    services.containerd,
    "--pod_logs_dir",
    join(root, "containerd", "logs"),
  ],
  docker: ["--docker_endpoint", services.dockerHost, "--network_container_image", services.pause],
};
type Runtime = keyof typeof runtimeFlags;

/**
 * One cold `kubelet runonce` under GNU time (Debian's `time`; Bun's resourceUsage reports the largest child so far):
 * wall time until it exited (0: every pod running), its CPU time and peak RSS.
 */
function runonce(runtime: Runtime, dir: string): { ms: number; cpuS: number; rssMb: number } {
  const usage = join(root, "usage");
  const started = performance.now();
  const run = Bun.spawnSync(
    [
      "/usr/bin/time",
      "-f",
      "%U %S %M",
      "-o",
      usage,
      KUBELET_BINARY,
      "runonce",
      "-c",
      dir,
      ...runtimeFlags[runtime],
      ...commonFlags(join(root, runtime)),
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const ms = performance.now() - started;
  if (run.exitCode !== 0) throw new Error(`kubelet runonce on ${runtime} exited ${run.exitCode}: ${run.stdout}`);
  const [user, system, kb] = readFileSync(usage, "utf8").trim().split("\n").pop()!.split(" ").map(Number);
  return { ms, cpuS: user! + system!, rssMb: kb! / 1024 };
}

/** Removes the pods named `<prefix>-…` that a runonce left running (not timed). */
async function clean(runtime: Runtime, prefix: string): Promise<void> {
  if (runtime === "docker") return engine.removeAll({ name: [`_${prefix}-`] });
  for (const s of await cri.listPodSandbox())
    if (s.metadata.name.startsWith(`${prefix}-`)) {
      await cri.stopPodSandbox(s.id);
      await cri.removePodSandbox(s.id);
    }
}

/** The floor on the CRI: the three calls of one pod from a client already connected in this process. */
async function rawPod(name: string): Promise<number> {
  const raw = await rawCriPod(cri, services!, join(root, "raw"), name);
  await cri.stopPodSandbox(raw.sandbox);
  await cri.removePodSandbox(raw.sandbox);
  return raw.ms;
}

/** Twenty pods from the same connected client, all at once: the floor of a parallel cold start on the CRI. */
async function rawPods(prefix: string, count: number): Promise<number> {
  const started = performance.now();
  const pods = await Promise.all(
    Array.from({ length: count }, (_, i) => rawCriPod(cri, services!, join(root, "raw"), `${prefix}-${i}`)),
  );
  const ms = performance.now() - started;
  for (const raw of pods) {
    await cri.stopPodSandbox(raw.sandbox);
    await cri.removePodSandbox(raw.sandbox);
  }
  return ms;
}

const one = manifests("sbs-one", 1);
const twenty = manifests("sbs-twenty", 20);
const empty = manifests("sbs-empty", 0);
const samples: Record<string, number[]> = {};
const rss: Record<string, number[]> = {};
const add = (key: string, value: number): void => void (samples[key] ??= []).push(value);

// A warm-up of every subject (images in page cache, containerd's and podman's first-use work), not counted.
for (const runtime of ["containerd", "docker"] as const) {
  runonce(runtime, one.dir);
  await clean(runtime, "sbs-one");
}
if (podman) podmanPlay(podman, one.podmanFile);
await rawPod("sbs-raw-warm");

for (let round = 0; round < rounds; round++) {
  // Each round in a rotated order, so no subject always follows the same one.
  /** Cold runonce of the pods named `<prefix>-…` on both runtimes, recorded under `<runtime> <key>`, then removed. */
  const kubelets = async (key: string, set: { dir: string }, prefix: string) => {
    for (const runtime of ["containerd", "docker"] as const) {
      const r = runonce(runtime, set.dir);
      add(`${runtime} ${key}`, r.ms);
      add(`${runtime} ${key} cpu`, r.cpuS * 1000);
      if (key === "empty") (rss[runtime] ??= []).push(r.rssMb);
      else await clean(runtime, prefix);
    }
  };
  const steps: Array<() => Promise<void>> = [
    () => kubelets("empty", empty, "sbs-empty"),
    () => kubelets("1", one, "sbs-one"),
    async () => add("raw 1", await rawPod(`sbs-raw-${round}`)),
    async () => add("raw 20", await rawPods(`sbs-raw20-${round}`, 20)),
    async () => {
      if (podman) add("podman 1", podmanPlay(podman, one.podmanFile));
    },
    async () => {
      await kubelets("20", twenty, "sbs-twenty");
      if (podman) add("podman 20", podmanPlay(podman, twenty.podmanFile));
    },
  ];
  for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]!();
}
cri.close();
removeDir(root);

const median = (values: number[] | undefined) =>
  values?.length ? [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]! : Number.NaN;
const s = (key: string) => median(samples[key]) / 1000;
const sec = (v: number) => (Number.isNaN(v) ? "—" : `${v.toFixed(2)} s`);
const ratio = (a: number, b: number) => (Number.isNaN(a / b) ? "" : ` (${(a / b).toFixed(2)}× podman)`);
/** A kubelet cell: wall time, its ratio to podman, and the process's own CPU time (the figure load disturbs least). */
const kubelet = (key: string, podmanKey?: string) =>
  `${sec(s(key))}${podmanKey ? ratio(s(key), s(podmanKey)) : ""}, CPU ${sec(s(`${key} cpu`))}`;

console.log(`${machine()} at the end, ${loadAtStart} at the start; medians of ${rounds} rounds`);
console.log("| work | kubelet on containerd | kubelet on Docker | podman kube play |");
console.log("| --- | --- | --- | --- |");
for (const n of ["1", "20"])
  console.log(
    `| ${n} pod${n === "1" ? "" : "s"}, cold process → running | ${kubelet(`containerd ${n}`, `podman ${n}`)} | ${kubelet(`docker ${n}`, `podman ${n}`)} | ${sec(s(`podman ${n}`))} |`,
  );
console.log(
  `| runonce with no pods (start-up alone) | ${kubelet("containerd empty")}, ${median(rss.containerd).toFixed(0)} MB peak | ${kubelet("docker empty")}, ${median(rss.docker).toFixed(0)} MB peak | — |`,
);
const floor = s("raw 1") + s("containerd empty");
console.log(
  `| 1 pod on containerd vs raw in-process CRI client ${sec(s("raw 1"))} + the process's start-up ${sec(s("containerd empty"))} = ${sec(floor)} | ${(s("containerd 1") / floor).toFixed(2)}× | | |`,
);
const floor20 = s("raw 20") + s("containerd empty");
console.log(
  `| 20 pods on containerd vs the raw client starting all 20 at once ${sec(s("raw 20"))} + the process's start-up ${sec(s("containerd empty"))} = ${sec(floor20)} | ${(s("containerd 20") / floor20).toFixed(2)}× | | |`,
);
if (!podman) console.log("podman: not installed (apt-get install podman)");
