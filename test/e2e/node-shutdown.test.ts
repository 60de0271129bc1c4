// Graceful node shutdown end to end: a private dbus-daemon with a stand-in systemd-logind
// (lib/testing/stand-in-logind.ts) that grants the delay inhibitor lock, reports it on
// stdout and emits PrepareForShutdown when told; the kubelet stops regular pods, then critical ones,
// within their periods (or the groups of shutdownGracePeriodByPodPriority, lowest first), reports them
// Failed/Terminated, the node not ready, refuses new pods (NodeShutdown), and releases the lock; a
// cancelled shutdown takes the lock again and admits pods again.
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type StandInLogind, startStandInLogind } from "../../lib/testing/stand-in-logind.ts";
import { type ApiPod, type Kubelet, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, type RuntimeUnderTest } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

const GRACE = 6;
const CRITICAL = 3;
/**
 * What the runtime's own stop and this test's polling add to a pod's stop as observed here, on a loaded machine (at
 * load 50: 3.1–3.7 s for a 3 s period). A period not kept costs the pod's own grace, 30 s.
 */
const OBSERVED_MARGIN_MS = 1000;
const MESSAGE = "Pod was terminated in response to imminent node shutdown.";

/** A stand-in logind in `dir` and a kubelet started with `args` on its bus. */
async function startWithLogind(dir: string, delayMaxSeconds: number, args: string[]) {
  const logind = await startStandInLogind(dir, delayMaxSeconds);
  process.env.DBUS_SYSTEM_BUS_ADDRESS = logind.address;
  const kubelet = await startKubelet(args).finally(() => delete process.env.DBUS_SYSTEM_BUS_ADDRESS);
  return { logind, kubelet };
}

/**
 * A describe block's directories (the order file and the config file go in `dir`) and its pods: `pod` writes a
 * manifest whose container, on SIGTERM, runs `trap` and then writes its name to the order file.
 */
function scene(prefix: string, image: string) {
  const dir = tempDir(prefix);
  const manifests = tempDir(`${prefix}-manifests`);
  const rootDir = tempDir(`${prefix}-root`);
  const pod = (name: string, extra: string, trap: string) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `{ apiVersion: v1, kind: Pod, metadata: { name: ${name} }, spec: { ${extra} terminationGracePeriodSeconds: 30, volumes: [{ name: shared, hostPath: { path: "${dir}" } }], containers: [{ name: app, image: "${image}", volumeMounts: [{ name: shared, mountPath: /shared }], command: ["sh", "-c", "trap '${trap}echo ${name} >> /shared/order; exit 0' TERM; while true; do sleep 0.1; done"] }] } }\n`,
    );
  return { dir, manifests, rootDir, pod };
}

/** When (ms after `began`) each pod's container stopped running, once all have. */
async function stopTimes(kubelet: Kubelet, rt: RuntimeUnderTest, names: string[], began: number) {
  const stoppedAt: Record<string, number> = {};
  await kubelet.waitFor(
    "every pod stopped",
    async () => {
      for (const name of names)
        if (stoppedAt[name] === undefined && !(await rt.running(name, "app"))) stoppedAt[name] = Date.now() - began;
      return Object.keys(stoppedAt).length === names.length;
    },
    30_000,
  );
  return stoppedAt;
}

const podStatus = (p: ApiPod) => p.status as { phase?: string; reason?: string; message?: string };

/** Waits for each pod to be reported Failed because of the shutdown. */
async function expectTerminatedForShutdown(kubelet: Kubelet, names: string[]) {
  for (const name of names) {
    const stopped = await kubelet.waitForPod(name, "Failed", (p) => podStatus(p).phase === "Failed");
    expect(podStatus(stopped)).toMatchObject({ phase: "Failed", reason: "Terminated", message: MESSAGE });
  }
}

describeOnRuntimes("graceful node shutdown", (services, rt) => {
  const { dir, manifests, rootDir, pod } = scene("shutdown", services.busybox);
  let logind: StandInLogind;
  let kubelet: Kubelet;

  beforeAll(async () => {
    // The regular pod takes a second to stop: the critical one must not get its SIGTERM before.
    pod("e2e-shutdown-regular", "", "sleep 1; ");
    pod("e2e-shutdown-critical", "priorityClassName: system-node-critical,", "");
    ({ logind, kubelet } = await startWithLogind(dir, 5, [
      ...rt.runFlags(manifests, rootDir),
      "--shutdown_grace_period",
      `${GRACE}s`,
      "--shutdown_grace_period_critical_pods",
      `${CRITICAL}s`,
    ]));
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    logind?.stop();
    await rt.removePods("e2e-shutdown-regular", "e2e-shutdown-critical");
    for (const d of [dir, manifests, rootDir]) removeDir(d);
  });

  test("the lock is taken at start, and an InhibitDelayMaxSec below the period is reported", async () => {
    await kubelet.waitFor("the delay lock", () => logind.lines.find((l) => l.startsWith("inhibit ")));
    expect(logind.lines.find((l) => l.startsWith("inhibit "))).toMatch(
      /^inhibit shutdown kubelet delay \d+ 'Kubelet needs time to handle node shutdown'$/,
    );
    expect(kubelet.output).toContain(
      `systemd-logind's InhibitDelayMaxSec (5s) is shorter than shutdownGracePeriod (${GRACE}s)`,
    );
  });

  test("a PrepareForShutdown forged by another process is ignored, naming its sender and logind's; no pod stops", async () => {
    for (const name of ["e2e-shutdown-regular", "e2e-shutdown-critical"])
      await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    await kubelet.waitFor("the delay lock", () => logind.lines.find((l) => l.startsWith("inhibit ")));
    // The forger broadcasts, then writes to the kubelet's connection: once the second is in, so is the first.
    const forger = logind.forgePrepareForShutdown(true);
    const line = await kubelet.waitFor("the forged signal handled", () =>
      kubelet.output
        .split("\n")
        .find((l) => l.includes("ignored PrepareForShutdown") || l.includes("node is shutting down")),
    );
    expect(line).toMatch(
      new RegExp(`ignored PrepareForShutdown from ${forger}, not systemd-logind \\(:\\d+\\.\\d+\\)`),
    );
    expect(kubelet.output).not.toContain("node is shutting down");
    expect(await (await kubelet.api("/healthz?verbose")).text()).not.toContain("[-]shutdown failed");
  }, 90_000);

  test("PrepareForShutdown stops regular pods, then critical ones, within their periods; statuses say why; the lock is released", async () => {
    for (const name of ["e2e-shutdown-regular", "e2e-shutdown-critical"])
      await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    const began = Date.now();
    logind.prepareForShutdown(true);
    const stoppedAt = await stopTimes(kubelet, rt, ["e2e-shutdown-regular", "e2e-shutdown-critical"], began);
    // Each within its group's period, and the critical pod only after the regular one had finished.
    expect(stoppedAt["e2e-shutdown-regular"]).toBeLessThan((GRACE - CRITICAL) * 1000 + OBSERVED_MARGIN_MS);
    expect(stoppedAt["e2e-shutdown-critical"]).toBeLessThan(GRACE * 1000 + OBSERVED_MARGIN_MS);
    expect(readFileSync(join(dir, "order"), "utf8")).toBe("e2e-shutdown-regular\ne2e-shutdown-critical\n");
    await expectTerminatedForShutdown(kubelet, ["e2e-shutdown-regular", "e2e-shutdown-critical"]);
    const released = await kubelet.waitFor("the lock released", () =>
      logind.lines.find((l) => l.startsWith("release ")),
    );
    expect(released).toMatch(/^release shutdown kubelet delay \d+ \d+ms-after-shutdown$/);
    const verbose = await (await kubelet.api("/healthz?verbose")).text();
    expect(verbose).toContain("[-]shutdown failed: systemd-logind announced a shutdown (PrepareForShutdown)");
  }, 90_000);

  test("without logind on the bus, one line says node shutdown is not watched and the kubelet runs on", async () => {
    process.env.DBUS_SYSTEM_BUS_ADDRESS = `unix:path=${join(dir, "no-bus")}`;
    const alone = await startKubelet([
      "run",
      ...rt.flags(tempDir("shutdown-alone")),
      "--shutdown_grace_period",
      "10s",
      "--hostname_override",
      "e2e-shutdown-alone",
    ]).finally(() => delete process.env.DBUS_SYSTEM_BUS_ADDRESS);
    const line = await alone.waitFor("the warning", () =>
      alone.output.split("\n").find((l) => l.includes("node shutdown is not watched")),
    );
    expect(line).toContain(
      `node shutdown is not watched (shutdownGracePeriod 10s): cannot reach systemd-logind on the system D-Bus (unix:path=${join(dir, "no-bus")})`,
    );
    await alone.stop();
  });
});

describeOnRuntimes("graceful node shutdown by pod priority", (services, rt) => {
  const { dir, manifests, rootDir, pod } = scene("shutdown-priority", services.busybox);
  const names = ["e2e-shutdown-low", "e2e-shutdown-mid", "e2e-shutdown-top"];
  /** Seconds each group gets, lowest priority first. */
  const PERIODS = [4, 3, 2];
  let logind: StandInLogind;
  let kubelet: Kubelet;

  beforeAll(async () => {
    // Each group takes less time to stop than the one before: were they stopped together, the order file
    // would list them highest priority first.
    pod("e2e-shutdown-low", "", "sleep 1; ");
    pod("e2e-shutdown-mid", "priority: 1000,", "sleep 0.5; ");
    pod("e2e-shutdown-top", "priorityClassName: system-node-critical,", "");
    writeFileSync(
      join(dir, "kubelet.yaml"),
      `kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
shutdownGracePeriodByPodPriority:
- { priority: 2000000000, shutdownGracePeriodSeconds: ${PERIODS[2]} }
- { priority: 0, shutdownGracePeriodSeconds: ${PERIODS[0]} }
- { priority: 1000, shutdownGracePeriodSeconds: ${PERIODS[1]} }
`,
    );
    ({ logind, kubelet } = await startWithLogind(dir, 60, [
      ...rt.runFlags(manifests, rootDir),
      "--config_file",
      join(dir, "kubelet.yaml"),
    ]));
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    logind?.stop();
    await rt.removePods(...names, "e2e-shutdown-late", "e2e-shutdown-after");
    for (const d of [dir, manifests, rootDir]) removeDir(d);
  });

  test("three priority groups stop lowest first, each within its period; a pod added meanwhile is refused with NodeShutdown; the start and end are kept and exported; a cancelled shutdown admits again", async () => {
    for (const name of names) await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    await kubelet.waitFor("the delay lock", () => logind.lines.find((l) => l.startsWith("inhibit ")));
    const began = Date.now();
    logind.prepareForShutdown(true);
    await kubelet.waitFor("the node shutting down", async () =>
      (await (await kubelet.api("/healthz?verbose")).text()).includes("[-]shutdown failed"),
    );
    pod("e2e-shutdown-late", "", "");
    const stoppedAt = await stopTimes(kubelet, rt, names, began);
    let deadline = 0;
    for (const [index, name] of names.entries()) {
      deadline += PERIODS[index]! * 1000;
      expect(stoppedAt[name]).toBeLessThan(deadline + OBSERVED_MARGIN_MS);
    }
    expect(readFileSync(join(dir, "order"), "utf8")).toBe(`${names.join("\n")}\n`);
    await expectTerminatedForShutdown(kubelet, names);
    const late = await kubelet.waitForPod("e2e-shutdown-late", "rejected", (p) => podStatus(p).phase === "Failed");
    expect(podStatus(late)).toMatchObject({
      phase: "Failed",
      reason: "NodeShutdown",
      message: "Pod was rejected: Pod was rejected as the node is shutting down.",
    });
    await kubelet.waitFor("the lock released", () => logind.lines.find((l) => l.startsWith("release ")));
    const metrics = await (await kubelet.api("/metrics")).text();
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
    const start = gauge("kubelet_graceful_shutdown_start_time_seconds");
    expect(start).toBeGreaterThanOrEqual(Math.floor(began / 1000));
    expect(gauge("kubelet_graceful_shutdown_end_time_seconds")).toBeGreaterThan(start);
    expect(JSON.parse(readFileSync(join(rootDir, "graceful_node_shutdown_state"), "utf8"))).toEqual({
      startTime: new Date(start * 1000).toISOString(),
      endTime: expect.any(String),
    });

    logind.prepareForShutdown(false);
    await kubelet.waitFor(
      "the lock taken again",
      () => logind.lines.filter((l) => l.startsWith("inhibit ")).length === 2,
    );
    pod("e2e-shutdown-after", "", "");
    await kubelet.waitFor(
      "a pod added after the cancel running",
      () => rt.running("e2e-shutdown-after", "app"),
      60_000,
    );
  }, 120_000);
});
