// Create+start latency of 10 containers through createDockerRuntime against the docker CLI, on the
// test dockerd. Usage: bun bench/runtime.bench.ts [rounds]   (needs scripts/services.sh up)
import { execFileSync } from "node:child_process";
import { createDockerRuntime } from "../lib/container/docker/docker.ts";
import { LABEL } from "../lib/container/runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../lib/testing/cri-configs.ts";
import { testServices } from "../lib/testing/services.ts";

const services = testServices();
if (!services) throw new Error("test services are not running: run `bash scripts/services.sh up`");
const rounds = Number(process.argv[2] ?? 3);
const runtime = createDockerRuntime({
  endpoint: services.dockerHost,
  shim: { podInfraImage: services.pause, podNetworkMode: "none" },
});
const docker = (...args: string[]) =>
  execFileSync("docker", ["-H", services.dockerHost, ...args], { encoding: "utf8" }).trim();
const COUNT = 10;

// The containers join one sandbox per round, run before the clock starts: the CLI's join none.
async function throughRuntime(round: number): Promise<{ ms: number; ids: string[] }> {
  const sandbox = testSandboxConfig(`rt-bench-${round}-${Date.now()}`, `rt-bench${round}`);
  const ids: string[] = [await runtime.runPodSandbox(sandbox)];
  const started = performance.now();
  for (let i = 0; i < COUNT; i++) {
    const config = testContainerConfig(sandbox, "app", i, services!.busybox, ["sleep", "60"]);
    const id = await runtime.createContainer(ids[0]!, config, sandbox);
    await runtime.startContainer(id);
    ids.push(id);
  }
  return { ms: performance.now() - started, ids };
}

function throughCli(round: number): { ms: number; ids: string[] } {
  const started = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < COUNT; i++) {
    const id = docker(
      "create",
      "--name",
      `k8s_app_rt-cli${round}x${i}_default_rt-bench_0`,
      "--label",
      `${LABEL.podUid}=rt-bench`,
      "--network",
      "none",
      services!.busybox,
      "sleep",
      "60",
    );
    docker("start", id);
    ids.push(id);
  }
  return { ms: performance.now() - started, ids };
}

const results: Array<{ runtime: number; cli: number }> = [];
for (let round = 0; round < rounds; round++) {
  const a = await throughRuntime(round);
  docker("rm", "-f", ...a.ids);
  const b = throughCli(round);
  docker("rm", "-f", ...b.ids);
  results.push({ runtime: a.ms, cli: b.ms });
  console.log(
    `round ${round + 1}: createDockerRuntime ${a.ms.toFixed(0)} ms, docker CLI ${b.ms.toFixed(0)} ms for ${COUNT} containers`,
  );
}
const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const r = median(results.map((x) => x.runtime));
const c = median(results.map((x) => x.cli));
console.log(
  `median: createDockerRuntime ${r.toFixed(0)} ms (${(r / COUNT).toFixed(1)} ms/container), docker CLI ${c.toFixed(0)} ms; ratio runtime/CLI ${(r / c).toFixed(2)}`,
);
