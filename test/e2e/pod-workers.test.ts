// Pod workers end to end, on each runtime of the matrix: with five pods waiting out a long grace period
// (their containers ignore SIGTERM) and an image pull stalled in flight, a newly added pod starts, and a
// crash-looping pod restarts when its back-off ends, as soon as they do on the same node idle (the idle
// figures are measured first, in the same test, on the same kubelet). A pod deleted while its own pull is
// stalled stops at once; a container waiting out its grace period shows as not ready.
import { afterAll, beforeAll, expect } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  startStalledRegistry,
  trustStalledRegistry,
  type StalledRegistry,
} from "../../lib/testing/stalled-registry.ts";
import { type Kubelet, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

/** Grace period of the terminating pods: longer than the part of the test that runs while they terminate. */
const GRACE_SECONDS = 45;
/** What a loaded machine may add to a start or a restart: far below the grace period a pod waiting on another waits. */
const LOAD_MARGIN_MS = (GRACE_SECONDS * 1000) / 5;
/** The crash-loop back-off's first two steps (the Go kubelet's 10 s, doubling). */
const BACKOFF_MS = [10_000, 20_000];

interface StartedState {
  startedAt?: string;
}
interface CrashStatus {
  restartCount: number;
  state?: { running?: StartedState; terminated?: StartedState };
  lastState?: { terminated?: StartedState };
}

describeOnRuntimes("pod workers", (services, rt) => {
  const manifests = tempDir("pw-manifests");
  const rootDir = tempDir("pw-root");
  const stubborn = [0, 1, 2, 3, 4].map((i) => `e2e-pw-stubborn-${i}`);
  const pods = [...stubborn, "e2e-pw-crash", "e2e-pw-idle", "e2e-pw-busy", "e2e-pw-stalled", "e2e-pw-edited"];
  let registry: StalledRegistry;
  let kubelet: Kubelet;
  /** Writes a pod manifest (JSON, which the file source reads as the YAML it is) with one container, "app". */
  const write = (name: string, app: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name },
        spec: { ...spec, containers: [{ name: "app", ...app }] },
      }),
    );
  // sh as PID 1 ignores a signal it has no trap for: the empty trap makes the ignoring explicit.
  const sleeper = (extra: Record<string, unknown> = {}) => ({
    image: services.busybox,
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.1; done"],
    ...extra,
  });
  const graceful = { terminationGracePeriodSeconds: GRACE_SECONDS };

  /** Adds a pod and returns how long it took from the manifest's write to its container's start (ms). */
  const startLatency = async (name: string) => {
    const written = Date.now();
    write(name, sleeper());
    const running = await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    const startedAt = (await rt.runtime.inspectContainer(running.id)).startedAt;
    return Date.parse(startedAt ?? "") - written;
  };

  /** When each instance of the crash-looping container started, by restart count (ms since the epoch). */
  const crashStarts = new Map<number, number>();
  let watching = true;
  const watchCrashLoop = async () => {
    while (watching) {
      const pod = (await kubelet.pod("e2e-pw-crash").catch(() => undefined)) as
        | { status?: { containerStatuses?: CrashStatus[] } }
        | undefined;
      const s = pod?.status?.containerStatuses?.[0];
      const startedAt = s && (s.state?.running ?? s.state?.terminated ?? s.lastState?.terminated)?.startedAt;
      if (s && startedAt && !crashStarts.has(s.restartCount)) crashStarts.set(s.restartCount, Date.parse(startedAt));
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** How late restart `n` came after its back-off ended (ms): its start minus the previous start plus the back-off. */
  const lateness = async (n: number) => {
    const started = await kubelet.waitFor(`restart ${n} of e2e-pw-crash`, () => crashStarts.get(n), 90_000);
    return started - crashStarts.get(n - 1)! - BACKOFF_MS[n - 2]!;
  };

  beforeAll(async () => {
    registry = await startStalledRegistry();
    if (rt.kind === "remote") trustStalledRegistry(services.dir, registry.host);
    for (const name of stubborn) write(name, sleeper(), graceful);
    write("e2e-pw-crash", { image: services.busybox, command: ["sh", "-c", "sleep 1; exit 1"] });
    const pause = ["--network_container_image", services.pause];
    kubelet = await startKubelet(["run", "-c", manifests, ...rt.flags(rootDir), ...pause]);
    void watchCrashLoop();
  });
  afterAll(async () => {
    watching = false;
    await kubelet?.stop("SIGKILL");
    await rt.removePods(...pods);
    await registry?.close();
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("with five pods waiting out their grace period and a pull stalled, a new pod starts and a crash loop restarts as on an idle node", async () => {
    for (const name of stubborn) await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    // Idle: nothing terminating, nothing pulling.
    const idleStart = await startLatency("e2e-pw-idle");
    const idleLate = await lateness(2);

    // Busy: every stubborn pod waits out its grace period, and a pull hangs on a blob that never ends.
    for (const name of stubborn) rmSync(join(manifests, `${name}.yaml`));
    write("e2e-pw-stalled", { image: registry.image("stalled/app") });
    await kubelet.waitFor("a Killing event for every deleted pod", async () => {
      const { items } = (await (await kubelet.api("/events")).json()) as {
        items: Array<{ reason: string; involvedObject: { name: string } }>;
      };
      return stubborn.every((name) => items.some((e) => e.reason === "Killing" && e.involvedObject.name === name));
    });
    await registry.blobRequested;
    const busyStart = await startLatency("e2e-pw-busy");
    const busyLate = await lateness(3);
    // The load was still there: the deleted pods' containers are still waiting out their grace period, their
    // workers terminating, as /metrics shows (set at each resync).
    for (const name of stubborn) expect(await rt.running(name, "app")).toBeDefined();
    await kubelet.waitFor("five terminating pod workers in /metrics", async () =>
      (await (await kubelet.api("/metrics")).text()).includes(
        'kubelet_working_pods{config="orphan",lifecycle="terminating",static="true"} 5',
      ),
    );
    expect(await rt.running("e2e-pw-stalled", "app")).toBeUndefined();

    console.log(
      `pod workers [${rt.label}]: new pod start ${idleStart} ms idle, ${busyStart} ms busy; ` +
        `crash-loop restart late by ${idleLate} ms idle, ${busyLate} ms busy`,
    );
    // Waiting on another pod would cost a whole grace period (or for ever, behind the stalled pull); the margin over
    // the idle figures is for a loaded machine (1 s was exceeded at load 48 in CI: 3.5 s against 0.04 s idle).
    expect(busyStart).toBeLessThan(idleStart + LOAD_MARGIN_MS);
    expect(busyLate).toBeLessThan(idleLate + LOAD_MARGIN_MS);
  }, 180_000);

  test("a container waiting out its grace period after an edit shows in /pods as not ready, its pod not Ready", async () => {
    write("e2e-pw-edited", sleeper(), graceful);
    const readiness = (pod: {
      status?: { conditions?: Array<{ type: string; status: string }>; containerStatuses?: Array<{ ready: boolean }> };
    }) => [pod.status?.containerStatuses?.[0]?.ready, pod.status?.conditions?.find((c) => c.type === "Ready")?.status];
    await kubelet.waitForPod("e2e-pw-edited", "ready", (p) => readiness(p)[0] === true, 60_000);
    const old = (await rt.running("e2e-pw-edited", "app"))!;
    write("e2e-pw-edited", sleeper({ env: [{ name: "EDITED", value: "1" }] }), graceful);
    const pod = await kubelet.waitForPod("e2e-pw-edited", "not ready", (p) => readiness(p)[0] === false);
    expect(readiness(pod)).toEqual([false, "False"]);
    // Still the old container, waiting out its grace period (it ignores SIGTERM).
    expect((await rt.running("e2e-pw-edited", "app"))?.id).toBe(old.id);
  });

  test("a pod deleted while its own pull is stalled is stopped without waiting for the pull", async () => {
    write("e2e-pw-stalled", { image: registry.image("stalled/app") });
    await registry.blobRequested;
    await kubelet.waitFor("the stalled pod's sandbox", () => rt.readySandbox("e2e-pw-stalled"), 60_000);
    rmSync(join(manifests, "e2e-pw-stalled.yaml"));
    await kubelet.waitFor(
      "the stalled pod's sandbox removed",
      async () => (await rt.podSandboxes("e2e-pw-stalled")).length === 0,
      15_000,
    );
    // The pull never ends: the pod was stopped while it stalled, and no container of it was ever made.
    expect(await rt.podContainers("e2e-pw-stalled")).toEqual([]);
    expect(await kubelet.pod("e2e-pw-stalled")).toBeUndefined();
  });
});
