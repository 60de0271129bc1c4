// Issue 41 item 7, cold start on the CRI: `kubelet runonce` of 1 and of 20 pods on containerd 1.6 and 1.7, one or more
// builds of the kubelet alternated round by round (before/after in the same run), against the floors the issue names
// in the same run: the raw in-process CRI client (RunPodSandbox + CreateContainer + StartContainer on a connected
// client; twenty pods all at once) plus the start-up of an empty program compiled with the release flags, and
// `podman kube play` of the same pods. Also the no-pod `runonce` (the kubelet's own start-up), as side-by-side's floor.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/cold-start.bench.ts [--rounds 11]
//        [--rounds20 5] [--binary base=/path/to/kubelet --binary after=dist/kubelet] [--containerd 1.6,1.7]
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadavg } from "node:os";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import type { CriClient } from "../lib/container/cri-types.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { commonFlags } from "../test/e2e/harness-runtimes.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { machine, podmanCommand, podmanPlay, rawCriPod, sleepingPodSet } from "./support.ts";

const services = testServices();
if (!services?.containerd) throw new Error("services are not running: bash scripts/services.sh up");
const args = process.argv.slice(2);
const values = (name: string) => args.flatMap((a, i) => (a === name && args[i + 1] ? [args[i + 1]!] : []));
const rounds = Number(values("--rounds")[0] ?? 11);
// Twenty pods take 10–40 s a subject on a shared machine: their rounds may be fewer (the first ones).
const rounds20 = Math.min(rounds, Number(values("--rounds20")[0] ?? rounds));
const binaries = (values("--binary").length ? values("--binary") : [`kubelet=${KUBELET_BINARY}`]).map((b) => {
  const [label, path] = b.includes("=") ? b.split("=", 2) : [b.split("/").pop()!, b];
  return { label: label!, path: resolve(path!) };
});
const endpoints: Record<string, string | undefined> = { "1.6": services.containerd, "1.7": services.containerd17 };
const versions = (values("--containerd")[0] ?? "1.6,1.7").split(",").filter((v) => {
  if (!endpoints[v]) console.error(`containerd ${v} is not among the test services: left out`);
  return endpoints[v] !== undefined;
});
const root = tempDir("bench-cold-start");
const clients = Object.fromEntries(
  versions.map((v) => [v, createCriClient({ runtimeEndpoint: endpoints[v]!, requestTimeoutMs: 120_000 })]),
) as Record<string, CriClient>;
const podman = podmanCommand(services);
const loadAtStart = loadavg()
  .map((l) => l.toFixed(1))
  .join(" ");

// The floor's process start-up: a program with no code, compiled with build.ts's release flags.
const bun = join(import.meta.dir, "../node_modules/.bin/bun");
writeFileSync(join(root, "empty.ts"), "export {};\n");
const emptyBuild = Bun.spawnSync(
  [bun, "build", "--compile", "--minify", "--sourcemap", "--bytecode", "--format", "esm", "empty.ts"],
  { cwd: root, stdout: "ignore", stderr: "pipe" },
);
if (emptyBuild.exitCode !== 0) throw new Error(`empty program: ${emptyBuild.stderr}`);
const emptyProgram = join(root, "empty");

const manifests = (prefix: string, count: number) => sleepingPodSet(services, root, prefix, count);

/** One cold `kubelet runonce` under GNU time: wall time until it exited 0 (every pod running), its CPU time. */
function runonce(binary: string, version: string, dir: string): { ms: number; cpuMs: number } {
  const usage = join(root, "usage");
  const rootDir = join(root, `rd-${version.replace(".", "")}`);
  const started = performance.now();
  const run = Bun.spawnSync(
    [
      "/usr/bin/time",
      ...["-f", "%U %S", "-o", usage],
      binary,
      ...["runonce", "-c", dir, "--container_runtime", "remote"],
      ...["--container_runtime_endpoint", endpoints[version]!, "--pod_logs_dir", join(rootDir, "logs")],
      ...commonFlags(rootDir),
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const ms = performance.now() - started;
  if (run.exitCode !== 0)
    throw new Error(`${binary} runonce on containerd ${version} exited ${run.exitCode}: ${run.stdout}`);
  const [user, system] = readFileSync(usage, "utf8").trim().split("\n").pop()!.split(" ").map(Number);
  return { ms, cpuMs: (user! + system!) * 1000 };
}

/** Removes the sandboxes named `<prefix>-…` (not timed). */
async function clean(version: string, prefix: string): Promise<void> {
  const cri = clients[version]!;
  for (const s of await cri.listPodSandbox())
    if (s.metadata.name.startsWith(`${prefix}-`)) {
      await cri.stopPodSandbox(s.id);
      await cri.removePodSandbox(s.id);
    }
}

/** `count` pods from the connected client, all at once: the floor of a parallel cold start. */
async function rawPods(version: string, prefix: string, count: number): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      rawCriPod(clients[version]!, services!, join(root, "raw"), `${prefix}-${i}`),
    ),
  );
  const ms = performance.now() - started;
  await clean(version, prefix);
  return ms;
}

const one = manifests("cs-one", 1);
const twenty = manifests("cs-twenty", 20);
const empty = manifests("cs-empty", 0);
const samples: Record<string, number[]> = {};
const add = (key: string, value: number): void => void (samples[key] ??= []).push(value);

// Warm-up, not counted: images in the page cache, each containerd's and podman's first-use work.
for (const version of versions) {
  for (const b of binaries) runonce(b.path, version, one.dir), await clean(version, "cs-one");
  await rawPods(version, "cs-raw-warm", 1);
}
if (podman) podmanPlay(podman, one.podmanFile);
Bun.spawnSync([emptyProgram]);

for (let round = 0; round < rounds; round++) {
  const steps: Array<() => Promise<void>> = [
    async () => {
      const started = performance.now();
      Bun.spawnSync([emptyProgram]);
      add("empty program", performance.now() - started);
    },
  ];
  for (const version of versions) {
    for (const [key, set] of [
      ["0", empty],
      ["1", one],
      ["20", twenty],
    ] as const)
      if (key !== "20" || round < rounds20)
        // The builds back to back on the same work, their order swapped every round: each follows the other as often.
        steps.push(async () => {
          for (const b of round % 2 === 0 ? binaries : [...binaries].reverse()) {
            const r = runonce(b.path, version, set.dir);
            add(`${version} ${b.label} ${key}`, r.ms);
            add(`${version} ${b.label} ${key} cpu`, r.cpuMs);
            await clean(version, key === "1" ? "cs-one" : "cs-twenty");
          }
        });
    steps.push(async () => add(`${version} raw 1`, await rawPods(version, `cs-raw1-${round}`, 1)));
    if (round < rounds20)
      steps.push(async () => add(`${version} raw 20`, await rawPods(version, `cs-raw20-${round}`, 20)));
  }
  if (podman) {
    steps.push(async () => add("podman 1", podmanPlay(podman, one.podmanFile)));
    if (round < rounds20) steps.push(async () => add("podman 20", podmanPlay(podman, twenty.podmanFile)));
  }
  // Each round in a rotated order, so that no subject always follows the same one.
  for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]!();
}
for (const cri of Object.values(clients)) cri.close();
removeDir(root);

const median = (key: string) => {
  const v = samples[key];
  return v?.length ? [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]! : Number.NaN;
};
const ms = (v: number) => (Number.isNaN(v) ? "—" : `${v.toFixed(0)} ms`);
const x = (a: number, b: number) => (Number.isNaN(a / b) ? "—" : `${(a / b).toFixed(2)}×`);
const loadAtEnd = loadavg()
  .map((l) => l.toFixed(1))
  .join(" ");
console.log(
  `${machine()}; load average ${loadAtStart} at the start, ${loadAtEnd} at the end; medians of ${rounds} rounds (20 pods: ${rounds20})`,
);
console.log(`empty program (release flags) start-up: ${ms(median("empty program"))}`);
if (podman) console.log(`podman kube play: 1 pod ${ms(median("podman 1"))}, 20 pods ${ms(median("podman 20"))}`);
else console.log("podman: not installed (apt-get install podman)");
console.log(
  "| containerd | build | runonce, no pods | 1 pod (CPU) | ÷ raw + empty program | ÷ raw + no-pod runonce | ÷ podman | 20 pods (CPU) | ÷ raw ×20 + empty program | ÷ podman |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const version of versions) {
  const raw1 = median(`${version} raw 1`);
  const raw20 = median(`${version} raw 20`);
  for (const b of binaries) {
    const k = (n: string) => median(`${version} ${b.label} ${n}`);
    console.log(
      `| ${version} | ${b.label} | ${ms(k("0"))} | ${ms(k("1"))} (${ms(k("1 cpu"))}) | ${x(k("1"), raw1 + median("empty program"))} | ${x(k("1"), raw1 + k("0"))} | ${x(k("1"), median("podman 1"))} | ${ms(k("20"))} (${ms(k("20 cpu"))}) | ${x(k("20"), raw20 + median("empty program"))} | ${x(k("20"), median("podman 20"))} |`,
    );
  }
  console.log(`| ${version} | raw CRI client | | ${ms(raw1)} | | | | ${ms(raw20)} | | |`);
}
