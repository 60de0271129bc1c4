// Graceful node shutdown end to end: a private dbus-daemon with a stand-in systemd-logind
// (fixtures/stand-in-logind.py, python3-dbus) that grants the delay inhibitor lock, reports it on
// stdout and emits PrepareForShutdown when told; the kubelet stops regular pods, then critical ones,
// within their periods, reports them Failed/Terminated, the node not ready, and releases the lock.
import { afterAll, beforeAll, expect } from "bun:test";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ApiPod, type Kubelet, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { describeOnRuntimes } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

const GRACE = 6;
const CRITICAL = 3;
const MESSAGE = "Pod was terminated in response to imminent node shutdown.";

/** A private bus and a stand-in logind on it; `lines` is what the stand-in reported. */
async function startLogind(dir: string, delayMaxSeconds: number) {
  const socket = join(dir, "bus");
  writeFileSync(
    join(dir, "bus.conf"),
    `<busconfig><type>system</type><listen>unix:path=${socket}</listen><auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/><allow user="*"/></policy></busconfig>`,
  );
  const address = `unix:path=${socket}`;
  const bus = spawn("dbus-daemon", ["--config-file", join(dir, "bus.conf"), "--nofork"], { stdio: "ignore" });
  await waitFor("the private bus", () => existsSync(socket));
  const logind = spawn(
    "/usr/bin/python3",
    [join(import.meta.dir, "fixtures", "stand-in-logind.py"), String(delayMaxSeconds * 1_000_000)],
    { env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address }, stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines: string[] = [];
  logind.stdout!.on("data", (d) => lines.push(...String(d).trim().split("\n")));
  const stop = () => [logind, bus].forEach((p: ChildProcess) => p.kill());
  await waitFor("the stand-in logind", () => lines.includes("ready")).catch((error) => {
    stop();
    throw error;
  });
  return {
    address,
    lines,
    /** org.kubelet.test.Control.Shutdown: the stand-in emits PrepareForShutdown(active). */
    prepareForShutdown(active: boolean) {
      const sent = spawnSync("dbus-send", [
        `--bus=${address}`,
        "--print-reply",
        "--dest=org.freedesktop.login1",
        "/org/freedesktop/login1",
        "org.kubelet.test.Control.Shutdown",
        `boolean:${active}`,
      ]);
      if (sent.status !== 0) throw new Error(`dbus-send: ${sent.stderr}`);
    },
    stop,
  };
}

describeOnRuntimes("graceful node shutdown", (services, rt) => {
  const dir = tempDir("shutdown");
  const manifests = tempDir("shutdown-manifests");
  const rootDir = tempDir("shutdown-root");
  let logind: Awaited<ReturnType<typeof startLogind>>;
  let kubelet: Kubelet;
  /** A pod that, on SIGTERM, runs `trap` and then writes its name to the shared order file. */
  const pod = (name: string, extra: string, trap: string) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `{ apiVersion: v1, kind: Pod, metadata: { name: ${name} }, spec: { ${extra} terminationGracePeriodSeconds: 30, volumes: [{ name: shared, hostPath: { path: "${dir}" } }], containers: [{ name: app, image: "${services.busybox}", volumeMounts: [{ name: shared, mountPath: /shared }], command: ["sh", "-c", "trap '${trap}echo ${name} >> /shared/order; exit 0' TERM; while true; do sleep 0.1; done"] }] } }\n`,
    );

  beforeAll(async () => {
    // The regular pod takes a second to stop: the critical one must not get its SIGTERM before.
    pod("e2e-shutdown-regular", "", "sleep 1; ");
    pod("e2e-shutdown-critical", "priorityClassName: system-node-critical,", "");
    logind = await startLogind(dir, 5);
    process.env.DBUS_SYSTEM_BUS_ADDRESS = logind.address;
    kubelet = await startKubelet([
      ...rt.runFlags(manifests, rootDir),
      "--shutdown_grace_period",
      `${GRACE}s`,
      "--shutdown_grace_period_critical_pods",
      `${CRITICAL}s`,
    ]);
    delete process.env.DBUS_SYSTEM_BUS_ADDRESS;
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

  test("PrepareForShutdown stops regular pods, then critical ones, within their periods; statuses say why; the lock is released", async () => {
    for (const name of ["e2e-shutdown-regular", "e2e-shutdown-critical"])
      await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    const began = Date.now();
    logind.prepareForShutdown(true);
    const stoppedAt: Record<string, number> = {};
    await kubelet.waitFor(
      "both pods stopped",
      async () => {
        for (const name of ["e2e-shutdown-regular", "e2e-shutdown-critical"])
          if (!stoppedAt[name] && !(await rt.running(name, "app"))) stoppedAt[name] = Date.now() - began;
        return Object.keys(stoppedAt).length === 2;
      },
      30_000,
    );
    // Each within its group's period, and the critical pod only after the regular one had finished.
    expect(stoppedAt["e2e-shutdown-regular"]).toBeLessThan((GRACE - CRITICAL) * 1000);
    expect(stoppedAt["e2e-shutdown-critical"]).toBeLessThan(GRACE * 1000);
    expect(readFileSync(join(dir, "order"), "utf8")).toBe("e2e-shutdown-regular\ne2e-shutdown-critical\n");
    for (const name of ["e2e-shutdown-regular", "e2e-shutdown-critical"]) {
      const status = (p: ApiPod) => p.status as { phase?: string; reason?: string; message?: string };
      const stopped = await kubelet.waitForPod(name, "Failed", (p) => status(p).phase === "Failed");
      expect(status(stopped)).toMatchObject({ phase: "Failed", reason: "Terminated", message: MESSAGE });
    }
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
