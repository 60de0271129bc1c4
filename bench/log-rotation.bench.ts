// Container log rotation on containerd (issue 29): one container writing log lines at full speed for a
// minute, under the Go kubelet's defaults (10Mi, 5 files, checked every 10 s). Reports the log
// directory's largest size against the bound (containerLogMaxSize × containerLogMaxFiles plus one
// interval's growth at the writer's measured speed), the rotations, and the kubelet's CPU against a
// baseline in the same run: the same writer under a kubelet whose size (100Gi) is never reached.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/log-rotation.bench.ts [--seconds 60]
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { cpuSeconds, machine, startKubelet, until } from "./support.ts";
import { removeDir } from "../test/e2e/harness.ts";

const services = testServices();
if (!services?.containerd) throw new Error("services are not running: bash scripts/services.sh up");
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const seconds = Number(arg("--seconds")) || 60;
const MAX_SIZE = 10 * 2 ** 20;
const MAX_FILES = 5;
const INTERVAL_MS = 10_000;

async function run(maxSize: string) {
  const kubelet = await startKubelet(services!, "remote", { extraFlags: ["--container_log_max_size", maxSize] });
  writeFileSync(
    join(kubelet.dir, "writer.yaml"),
    `{ apiVersion: v1, kind: Pod, metadata: { name: bench-logrot }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: app, image: "${services!.busybox}", command: ["sh", "-c", "while true; do echo 'a log line of about one hundred bytes, written as fast as the shell can: 0123456789abcdefghij'; done"] }] } }\n`,
  );
  const logDir = () => {
    const pods = join(kubelet.rootDir, "logs");
    const pod = existsSync(pods) ? readdirSync(pods).find((d) => d.includes("bench-logrot")) : undefined;
    return pod ? join(pods, pod, "app") : undefined;
  };
  await until(() => logDir() !== undefined && existsSync(join(logDir()!, "0.log")));
  const dir = logDir()!;
  const cpuBefore = cpuSeconds(kubelet.child.pid!);
  const rotated = new Set<string>();
  let most = 0;
  let fastest = 0;
  let previous: { at: number; ino: number; size: number } | undefined;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const names = readdirSync(dir);
    most = Math.max(
      most,
      names.reduce((n, f) => n + (statSync(join(dir, f), { throwIfNoEntry: false })?.size ?? 0), 0),
    );
    for (const n of names) if (/^0\.log\.\d{8}-\d{6}/.test(n)) rotated.add(n.replace(/\.gz$/, ""));
    const current = statSync(join(dir, "0.log"), { throwIfNoEntry: false });
    const now = Date.now();
    if (current && previous?.ino === current.ino && now > previous.at)
      fastest = Math.max(fastest, (current.size - previous.size) / (now - previous.at));
    previous = current && { at: now, ino: current.ino, size: current.size };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const cpu = cpuSeconds(kubelet.child.pid!) - cpuBefore;
  // The kubelet stops the pod it no longer has a manifest for (a stopped kubelet would leave it running).
  rmSync(join(kubelet.dir, "writer.yaml"));
  const ctr = ["-a", services!.containerd!.replace("unix://", ""), "-n", "k8s.io", "tasks", "ls"];
  await until(() => !/RUNNING/.test(spawnSync("ctr", ctr, { encoding: "utf8" }).stdout));
  await kubelet.stop();
  removeDir(kubelet.dir);
  removeDir(kubelet.rootDir);
  return { most, rotations: rotated.size, fastest, cpu };
}

const baseline = await run("100Gi");
const rotating = await run("10Mi");
const bound = MAX_SIZE * MAX_FILES + rotating.fastest * INTERVAL_MS;
const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
console.log(
  `log rotation, ${seconds}s at full speed (writer up to ${mb(rotating.fastest * 1000)}/s): log directory at most ${mb(rotating.most)}, bound ${mb(bound)} (10Mi × 5 + one 10 s interval), ${rotating.rotations} rotations`,
);
console.log(
  `kubelet CPU over the window: ${rotating.cpu.toFixed(2)} s rotating, ${baseline.cpu.toFixed(2)} s baseline (size never reached, directory reached ${mb(baseline.most)})`,
);
console.log(machine());
