// Crash reaction (issue 12): a container's process dies (SIGKILL from outside, as an OOM kill or a
// crash would end it) → the kubelet begins the restart (the replacement container is created) → it
// runs. 20 crashes, one per pod, so each is a first restart (no crash-loop back-off: the kubelet, like
// the Go kubelet, restarts at once the first time). Both ends are the Docker daemon's own event
// timestamps, so neither the bench's polling nor its clock is in the figure. Baseline in the same run:
// dockerd's own restart policy (`always`) bringing back the same containers killed the same way.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/crash.bench.ts [--crashes 20]
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";
import { removeDir } from "../test/e2e/harness.ts";
import { engineApi, machine, ms, percentile, sleepingPod, startKubelet, until, type DockerEvent } from "./support.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const crashes = process.argv.includes("--crashes") ? Number(process.argv[process.argv.indexOf("--crashes") + 1]) : 20;
const engine = engineApi(services);
const stopEvents = new AbortController();
const events = await engine.events(stopEvents.signal);

/** Kills a container's main process from outside Docker, the way the kernel or a bug would end it. */
async function crash(id: string): Promise<void> {
  const { State } = await engine.request("GET", `/containers/${id}/json`);
  process.kill(State.Pid, "SIGKILL");
}

const elapsedMs = (from: DockerEvent, to: DockerEvent) => (to.timeNano - from.timeNano) / 1e6;

// --- baseline: dockerd's restart policy, same image, same command, same kind of kill
const baseline: number[] = [];
for (let i = 0; i < crashes; i++) {
  const { Id } = await engine.request("POST", `/containers/create?name=crashbench_raw_${i}`, {
    Image: services.busybox,
    Cmd: ["sleep", "3600"],
    HostConfig: { NetworkMode: "none", RestartPolicy: { Name: "always" } },
  });
  await engine.request("POST", `/containers/${Id}/start`);
  await events.next((e) => e.id === Id && e.Action === "start");
  await crash(Id);
  const died = await events.next((e) => e.id === Id && e.Action === "die");
  const started = await events.next((e) => e.id === Id && e.Action === "start");
  baseline.push(elapsedMs(died, started));
}
await engine.removeAll({ name: ["crashbench_raw_"] });

// --- the kubelet: one pod per crash, each app container killed once
const kubelet = await startKubelet(services, "docker");
for (let i = 0; i < crashes; i++)
  writeFileSync(join(kubelet.dir, `crash${i}.yaml`), sleepingPod(services, `crash${i}`));
const appOf = (pod: string) => ({ label: [`io.kubernetes.pod.name=${pod}`, "io.kubernetes.container.name=app"] });
await until(
  async () => (await engine.list({ name: ["k8s_app_crash"], status: ["running"] })).length === crashes,
  300_000,
);
// Let the start-up syncs (and the events they cause) settle, so each crash meets an idle kubelet.
await Bun.sleep(3000);
const restartBegun: number[] = [];
const runningAgain: number[] = [];
for (let i = 0; i < crashes; i++) {
  const pod = `crash${i}`;
  const [first] = await engine.list({ ...appOf(pod), status: ["running"] });
  const isReplacement = (action: string) => (e: DockerEvent) =>
    e.Action === action &&
    e.id !== first!.Id &&
    e.Actor.Attributes["io.kubernetes.pod.name"] === pod &&
    e.Actor.Attributes["io.kubernetes.container.name"] === "app";
  await crash(first!.Id);
  const died = await events.next((e) => e.id === first!.Id && e.Action === "die");
  const created = await events.next(isReplacement("create"));
  const started = await events.next(isReplacement("start"));
  restartBegun.push(elapsedMs(died, created));
  runningAgain.push(elapsedMs(died, started));
}
for (let i = 0; i < crashes; i++) rmSync(join(kubelet.dir, `crash${i}.yaml`));
await until(async () => (await engine.list({ label: ["io.kubernetes.pod.name"] })).length === 0, 300_000);
await kubelet.stop();
stopEvents.abort();
removeDir(kubelet.dir);
removeDir(kubelet.rootDir);

const figure = (values: number[]) => `p50 ${ms(percentile(values, 50))}, p95 ${ms(percentile(values, 95))}`;
const ratio = (p: number) => `${(percentile(runningAgain, p) / percentile(baseline, p)).toFixed(2)}×`;
console.log(
  `${machine()}; ${crashes} crashes (SIGKILL of the app's process), one per pod; times are dockerd's event stamps`,
);
console.log(`kubelet: exit → restart begun (replacement created): ${figure(restartBegun)} (target < 200 ms)`);
console.log(
  `kubelet: exit → running again: ${figure(runningAgain)}; dockerd restart policy: exit → running again: ${figure(baseline)}; ratio p50 ${ratio(50)}, p95 ${ratio(95)}`,
);
