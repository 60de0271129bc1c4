import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { noConfigs } from "../../api/config-objects.ts";
import { LABEL } from "../../container/runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { resetNode, type ResetStep } from "./node-reset.ts";
import { createCgroupManager } from "../cm/cgroups.ts";
import { createVolumeManager } from "../volumes/volumes.ts";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A node with pod `web` (running app, grace 5 s) and `job` (exited task), their pod directories, log directories
 * and cgroups (on a temporary cgroup v2 tree: `web`'s under cgroupfs names, `job`'s under systemd's).
 */
async function node() {
  const rootDir = mkdtempSync(join(tmpdir(), "node-reset-"));
  const mountPoint = mkdtempSync(join(tmpdir(), "node-reset-cgroup-"));
  dirs.push(rootDir, mountPoint);
  writeFileSync(join(mountPoint, "cgroup.controllers"), "cpu memory pids");
  const podCgroups = [
    "kubepods/besteffort/poduid-web",
    "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poduid_job.slice",
    "kubepods/besteffort/poduid-stranger",
  ];
  for (const path of podCgroups) mkdirSync(join(mountPoint, path), { recursive: true });
  const cgroups = (["cgroupfs", "systemd"] as const).map((driver) =>
    createCgroupManager({
      driver,
      root: "/",
      cfsQuota: false,
      cfsPeriodUs: 0,
      pidsLimit: -1,
      mountPoint,
      log: silentLogger,
    }),
  );
  const podLogsDir = join(rootDir, "pod-logs");
  const runtime = new FakeRuntime();
  const pod = async (uid: string, name: string, grace: string) => {
    const sandbox = testSandboxConfig(uid, name, { labels: { [LABEL.terminationGracePeriod]: grace } });
    const sandboxId = await runtime.runPodSandbox(sandbox);
    const id = await runtime.createContainer(
      sandboxId,
      testContainerConfig(sandbox, "app", 0, "local/busybox:stable", ["sleep", "60"]),
      sandbox,
    );
    await runtime.startContainer(id);
    mkdirSync(join(rootDir, "pods", uid, "volumes"), { recursive: true });
    mkdirSync(join(podLogsDir, `default_${name}_${uid}`, "app"), { recursive: true });
    return id;
  };
  const web = await pod("uid-web", "web", "5");
  const job = await pod("uid-job", "job", "30");
  runtime.exit(job, 0);
  mkdirSync(join(rootDir, "backoff"));
  writeFileSync(join(rootDir, "backoff", "crashloop.json"), "{}");
  writeFileSync(join(rootDir, "allocated_pods_state.json"), "{}");
  mkdirSync(join(rootDir, "device-plugins"));
  writeFileSync(join(rootDir, "device-plugins", "kubelet_internal_checkpoint"), "{}");
  mkdirSync(join(rootDir, "pod-resources"));
  writeFileSync(join(rootDir, "kubelet.lock"), `${process.pid}\n`);
  mkdirSync(join(podLogsDir, "default_stranger_uid-stranger"));
  writeFileSync(join(rootDir, "operator-notes.txt"), "mine");
  const volumes = createVolumeManager({ rootDir, configs: noConfigs });
  const options = { rootDir, podLogsDir, lockFile: join(rootDir, "kubelet.lock") };
  return { rootDir, podLogsDir, mountPoint, runtime, volumes, cgroups, options, web, job };
}

const changing = ["stopContainer", "removeContainer", "stopPodSandbox", "removePodSandbox"];

describe("resetNode", () => {
  test("removes every container and sandbox the runtime lists, stopping a running container with its pod's grace period first", async () => {
    const n = await node();
    await resetNode({ ...n.options, dryRun: false }, n);
    expect(n.runtime.containers.size).toBe(0);
    const calls = n.runtime.calls.filter((c) => changing.includes(c.method));
    expect(calls.filter((c) => c.method === "stopContainer").map((c) => c.args)).toEqual([[n.web, 5]]);
    // Pods stop in parallel: in no set order.
    expect(
      calls
        .filter((c) => c.method === "removeContainer")
        .map((c) => c.args[0])
        .sort(),
    ).toEqual([n.web, n.job].sort());
    // A pod's containers go before its sandbox.
    const order = calls.map((c) => c.method);
    expect(order.indexOf("removeContainer")).toBeLessThan(order.indexOf("removePodSandbox"));
  });

  test("removes the pod directories, the back-off state and allocations, the lock and those pods' log directories, and leaves what it did not write", async () => {
    const n = await node();
    const steps = await resetNode({ ...n.options, dryRun: false }, n);
    expect(existsSync(join(n.rootDir, "pods"))).toBe(false);
    expect(existsSync(join(n.rootDir, "backoff"))).toBe(false);
    expect(existsSync(join(n.rootDir, "kubelet.lock"))).toBe(false);
    expect(readdirSync(n.podLogsDir)).toEqual(["default_stranger_uid-stranger"]);
    expect(readdirSync(n.rootDir).sort()).toEqual(["operator-notes.txt", "pod-logs"]);
    // Pods stop in parallel: their containers and sandboxes in no set order, the rest after them.
    expect([
      ...steps
        .slice(0, 4)
        .map((s) => s.kind)
        .sort(),
      ...steps.slice(4).map((s) => s.kind),
    ]).toEqual([
      "container",
      "container",
      "pod sandbox",
      "pod sandbox",
      "pod cgroup",
      "pod cgroup",
      "pod directory",
      "pod directory",
      "pod log directory",
      "pod log directory",
      "state",
      "state",
      "state",
      "state",
    ]);
  });

  test("removes those pods' cgroups under either driver's names, and no other pod's", async () => {
    const n = await node();
    await resetNode({ ...n.options, dryRun: false }, n);
    expect(existsSync(join(n.mountPoint, "kubepods/besteffort/poduid-web"))).toBe(false);
    expect(
      existsSync(join(n.mountPoint, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poduid_job.slice")),
    ).toBe(false);
    expect(existsSync(join(n.mountPoint, "kubepods/besteffort/poduid-stranger"))).toBe(true);
  });

  test("a pod cgroup that processes still use is an error naming the pod", async () => {
    const n = await node();
    writeFileSync(join(n.mountPoint, "kubepods/besteffort/poduid-web/cgroup.procs"), "1234\n");
    await expect(resetNode({ ...n.options, dryRun: false }, n)).rejects.toThrow(
      "cannot remove the cgroup of pod uid-web: processes still run in it",
    );
  });

  test("removes root_dir itself once nothing else is in it", async () => {
    const n = await node();
    rmSync(join(n.rootDir, "operator-notes.txt"));
    await resetNode({ ...n.options, podLogsDir: join(n.rootDir, "elsewhere"), dryRun: false }, n);
    expect(readdirSync(n.rootDir)).toEqual(["pod-logs"]);
    rmSync(n.podLogsDir, { recursive: true });
    await resetNode({ ...n.options, dryRun: false }, n);
    expect(existsSync(n.rootDir)).toBe(false);
  });

  test("a dry run announces the same steps and changes neither the runtime nor the disk", async () => {
    const real = await node();
    const expected = await resetNode({ ...real.options, dryRun: false }, real);
    const n = await node();
    const announced: ResetStep[] = [];
    const steps = await resetNode({ ...n.options, dryRun: true, onStep: (s) => announced.push(s) }, n);
    // Sorted: pods stop in parallel, in no set order.
    const relative = (list: ResetStep[], root: string) =>
      list.map((s) => JSON.stringify({ ...s, target: s.target.replace(root, "") })).sort();
    expect(relative(steps, n.rootDir)).toEqual(relative(expected, real.rootDir));
    expect(announced).toEqual(steps);
    expect(n.runtime.calls.filter((c) => changing.includes(c.method))).toEqual([]);
    expect(n.runtime.containers.size).toBe(4);
    expect(readdirSync(join(n.rootDir, "pods")).sort()).toEqual(["uid-job", "uid-web"]);
    expect(existsSync(join(n.rootDir, "backoff", "crashloop.json"))).toBe(true);
    expect(existsSync(join(n.rootDir, "kubelet.lock"))).toBe(true);
    expect(readdirSync(n.podLogsDir)).toHaveLength(3);
    expect(existsSync(join(n.mountPoint, "kubepods/besteffort/poduid-web"))).toBe(true);
  });

  test("a container whose sandbox is already gone is still removed, named with its pod", async () => {
    const n = await node();
    const sandboxes = await n.runtime.listPodSandboxes();
    const web = sandboxes.find((s) => s.metadata.name === "web")!;
    await n.runtime.stopPodSandbox(web.id);
    await n.runtime.removePodSandbox(web.id);
    const steps = await resetNode({ ...n.options, dryRun: false }, n);
    expect(steps.filter((s) => s.kind === "container").map((s) => s.pod)).toContain("default/web");
    expect(n.runtime.containers.size).toBe(0);
  });

  /** `count` running pods of grace period `grace` s, whose PID 1 ignores SIGTERM: each stop waits it out, then kills. */
  async function stubbornPods(count: number, grace: number) {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    const stopsAt: number[] = [];
    runtime.stopContainer = async (id, graceSeconds) => {
      stopsAt.push(clock.now());
      await clock.sleep(graceSeconds * 1000);
      runtime.exit(id, 137);
    };
    for (let i = 0; i < count; i++) {
      const sandbox = testSandboxConfig(`uid-${i}`, `pod-${i}`, {
        labels: { [LABEL.terminationGracePeriod]: String(grace) },
      });
      const sandboxId = await runtime.runPodSandbox(sandbox);
      const config = testContainerConfig(sandbox, "httpd", 0, "local/busybox:stable", ["httpd", "-f"]);
      await runtime.startContainer(await runtime.createContainer(sandboxId, config, sandbox));
    }
    const rootDir = mkdtempSync(join(tmpdir(), "node-reset-"));
    dirs.push(rootDir);
    const volumes = createVolumeManager({ rootDir, configs: noConfigs });
    const options = { rootDir, podLogsDir: join(rootDir, "pod-logs"), lockFile: join(rootDir, "kubelet.lock") };
    return { clock, runtime, stopsAt, deps: { runtime, volumes, cgroups: [], clock }, options };
  }

  test("pods stop in parallel: three pods that wait out a 10 s grace period are all stopped after 10 s, not 30", async () => {
    const n = await stubbornPods(3, 10);
    const began = n.clock.now();
    let done = false;
    const reset = resetNode({ ...n.options, dryRun: false }, n.deps).then(() => (done = true));
    await n.clock.advance(10_000);
    await reset;
    expect(done).toBe(true);
    expect(n.clock.now() - began).toBe(10_000);
    expect(n.stopsAt.map((at) => at - began)).toEqual([0, 0, 0]);
    expect(n.runtime.containers.size).toBe(0);
  });

  test("each pod's stop is told as it begins, with its grace period, and as it ends, with the containers that ignored SIGTERM", async () => {
    const n = await stubbornPods(2, 10);
    const told: string[] = [];
    const reset = resetNode(
      {
        ...n.options,
        dryRun: false,
        onPodStopping: (pod, grace) => void told.push(`stopping ${pod} ${grace}s`),
        onPodStopped: (pod, { seconds, ignoredSigterm }) =>
          void told.push(`stopped ${pod} in ${seconds}s: ${JSON.stringify(ignoredSigterm)}`),
      },
      n.deps,
    );
    await n.clock.advance(10_000);
    await reset;
    const ignored = JSON.stringify([{ container: "httpd", graceSeconds: 10 }]);
    expect(told.sort()).toEqual([
      `stopped default/pod-0 in 10s: ${ignored}`,
      `stopped default/pod-1 in 10s: ${ignored}`,
      "stopping default/pod-0 10s",
      "stopping default/pod-1 10s",
    ]);
  });

  test("at most `concurrency` pods stop at once", async () => {
    const n = await stubbornPods(3, 10);
    const reset = resetNode({ ...n.options, dryRun: false, concurrency: 2 }, n.deps);
    await n.clock.advance(20_000);
    await reset;
    expect(n.stopsAt.map((at) => at - n.stopsAt[0]!)).toEqual([0, 0, 10_000]);
  });
});
