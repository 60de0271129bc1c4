// Node managers' cost (issue 11): kubelet CPU over an idle window with 50 pods, this build (image and
// container GC, eviction, the resource analyzer) against a baseline build without them, same pods,
// same daemon, same run, interleaved A-B-A-B so drift on the shared machine shows.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/managers.bench.ts --baseline <kubelet binary>
//   (or KUBELET_BASELINE=<binary> npm run bench managers)
//   [--idle-seconds 60] [--rounds 2]
// A baseline binary: git archive main | tar -x -C /tmp/base && ln -s $PWD/node_modules /tmp/base/ &&
//   (cd /tmp/base && bun build.ts)  →  /tmp/base/dist/kubelet
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { baseFlags, freePort, removeCgroupRoot, removeDir, tempDir } from "../test/e2e/harness.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const baseline = arg("--baseline") ?? process.env.KUBELET_BASELINE;
if (!baseline) {
  // `npm run bench` runs every bench without arguments: this one needs a second build to compare with.
  console.log("skipped: needs --baseline <kubelet binary built without the managers> (or $KUBELET_BASELINE)");
  process.exit(0);
}
const idleSeconds = Number(arg("--idle-seconds")) || 60;
const rounds = Number(arg("--rounds")) || 2;
const PODS = 50;

const manifests = tempDir("bench-managers");
const rootDir = tempDir("bench-managers-root");
for (let i = 0; i < PODS; i++)
  writeFileSync(
    join(manifests, `idle-${i}.yaml`),
    `apiVersion: v1
kind: Pod
metadata: { name: bench-idle-${i} }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["sleep", "36000"] }]
`,
  );

const runningApps = () =>
  spawnSync(
    "docker",
    [
      "-H",
      services.dockerHost,
      "ps",
      "-q",
      "--filter",
      "label=io.kubernetes.container.name=app",
      "--filter",
      "name=bench-idle-",
    ],
    { encoding: "utf8" },
  )
    .stdout.split("\n")
    .filter(Boolean).length;

const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime, clock ticks (100/s)
};

/** Starts `binary` on the pods, waits until all run and one analyzer/GC cycle has passed, measures idle CPU. */
async function idleCpu(binary: string): Promise<number> {
  const port = await freePort();
  const kubelet: ChildProcess = spawn(
    binary,
    [
      "run",
      "-c",
      manifests,
      ...baseFlags(services!, rootDir),
      "--port",
      String(port),
      "--network_container_image",
      services!.pause,
    ],
    { stdio: "ignore" },
  );
  const deadline = Date.now() + 300_000;
  while (runningApps() < PODS) {
    if (Date.now() > deadline) throw new Error("pods did not all run");
    await Bun.sleep(500);
  }
  await Bun.sleep(15_000); // past start-up: the first GC, image detection and disk walks
  const t0 = cpuTicks(kubelet.pid!);
  await Bun.sleep(idleSeconds * 1000);
  const seconds = (cpuTicks(kubelet.pid!) - t0) / 100;
  kubelet.kill("SIGTERM");
  await new Promise((r) => kubelet.once("exit", r));
  return (seconds / idleSeconds) * 100;
}

const results: Array<{ build: string; percent: number }> = [];
for (let round = 0; round < rounds; round++) {
  results.push({ build: "baseline", percent: await idleCpu(baseline) });
  results.push({ build: "managers", percent: await idleCpu(KUBELET_BINARY) });
}
spawnSync("sh", [
  "-c",
  `docker -H ${services.dockerHost} rm -f $(docker -H ${services.dockerHost} ps -aq --filter name=bench-idle-)`,
]);
removeCgroupRoot(rootDir);
removeDir(manifests);
removeDir(rootDir);

const mean = (build: string) => {
  const xs = results.filter((r) => r.build === build).map((r) => r.percent);
  return xs.reduce((a, b) => a + b, 0) / xs.length;
};
console.log(`idle CPU of the kubelet, ${PODS} pods, ${idleSeconds} s windows, ${rounds} rounds (baseline, managers):`);
for (const r of results) console.log(`  ${r.build.padEnd(9)} ${r.percent.toFixed(2)} % of a core`);
console.log(
  `mean: baseline ${mean("baseline").toFixed(2)} %, with managers ${mean("managers").toFixed(2)} % (+${(mean("managers") - mean("baseline")).toFixed(2)} points)`,
);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, shared with other test runs`,
);
