import { beforeEach, describe, expect, test } from "bun:test";
import type { Pod } from "../../api/types.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testPod } from "../../testing/pods.ts";
import {
  createNodeShutdownManager,
  groupPods,
  type Logind,
  migrateConfig,
  SHUTDOWN_MESSAGE,
  shutdownGroups,
} from "./node-shutdown.ts";

/** The groups of shutdownGracePeriod and shutdownGracePeriodCriticalPods alone (ms). */
const periods = (grace: number, critical: number) =>
  shutdownGroups({
    shutdownGracePeriod: grace,
    shutdownGracePeriodCriticalPods: critical,
    shutdownGracePeriodByPodPriority: [],
  });
/** The groups of shutdownGracePeriodByPodPriority: [priority, seconds] pairs. */
const byPriority = (...pairs: Array<[number, number]>) =>
  shutdownGroups({
    shutdownGracePeriod: 0,
    shutdownGracePeriodCriticalPods: 0,
    shutdownGracePeriodByPodPriority: pairs.map(([priority, shutdownGracePeriodSeconds]) => ({
      priority,
      shutdownGracePeriodSeconds,
    })),
  });

/** A logind that grants locks at once and lets the test emit PrepareForShutdown. */
function fakeLogind(inhibitDelayMaxMs = 30_000) {
  const events: string[] = [];
  let listener: ((active: boolean) => void) | undefined;
  const logind: Logind = {
    inhibitDelayMaxMs,
    async inhibitShutdown() {
      events.push("lock");
      return async () => void events.push("release");
    },
    onPrepareForShutdown: (fn) => (listener = fn),
    close: () => events.push("close"),
  };
  return { logind, events, prepareForShutdown: (active: boolean) => listener!(active) };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("node shutdown groups", () => {
  test("shutdownGracePeriod and shutdownGracePeriodCriticalPods make a regular group and a critical one", () => {
    expect(periods(30_000, 10_000)).toEqual([
      { priority: 0, periodSeconds: 20 },
      { priority: 2_000_000_000, periodSeconds: 10 },
    ]);
    expect(periods(30_000, 0)).toEqual([
      { priority: 0, periodSeconds: 30 },
      { priority: 2_000_000_000, periodSeconds: 0 },
    ]);
  });

  test("migrateConfig makes no group when shutdownGracePeriod is 0 or shorter than the critical pods' period", () => {
    expect(migrateConfig(0, 0)).toEqual([]);
    expect(migrateConfig(10_000, 20_000)).toEqual([]);
    expect(periods(0, 0)).toEqual([]);
  });

  test("shutdownGracePeriodByPodPriority is used as given, sorted by priority, and wins over the migration", () => {
    expect(byPriority([100_000, 10], [0, 60], [10_000, 180], [1000, 120])).toEqual([
      { priority: 0, periodSeconds: 60 },
      { priority: 1000, periodSeconds: 120 },
      { priority: 10_000, periodSeconds: 180 },
      { priority: 100_000, periodSeconds: 10 },
    ]);
    expect(
      shutdownGroups({
        shutdownGracePeriod: 30_000,
        shutdownGracePeriodCriticalPods: 0,
        shutdownGracePeriodByPodPriority: [{ priority: 5, shutdownGracePeriodSeconds: 7 }],
      }),
    ).toEqual([{ priority: 5, periodSeconds: 7 }]);
  });

  test("pods go to the group of the highest priority at or below theirs; critical classes count as critical", () => {
    const regular = testPod("regular", {});
    const critical = testPod("critical", { priorityClassName: "system-node-critical" });
    const negative = testPod("negative", { priority: -5 });
    const grouped = groupPods([regular, critical, negative], periods(30_000, 10_000));
    expect(grouped.map((g) => g.pods.map((p) => p.metadata.name))).toEqual([["regular", "negative"], ["critical"]]);
  });

  test("a pod above the highest group goes to the highest, below the lowest to the lowest, between to the lower", () => {
    const pod = (name: string, priority: number) => testPod(name, { priority });
    const grouped = groupPods(
      [pod("top", 200_000), pod("low", 10), pod("bottom", 5), pod("edge", 10_000), pod("between", 9_999)],
      byPriority([100_000, 10], [10, 60], [10_000, 180], [1000, 120]),
    );
    expect(grouped.map((g) => [g.group.priority, g.pods.map((p) => p.metadata.name)])).toEqual([
      [10, ["low", "bottom"]],
      [1000, ["between"]],
      [10_000, ["edge"]],
      [100_000, ["top"]],
    ]);
  });
});

describe("node shutdown manager", () => {
  let clock: FakeClock;
  let stops: Array<{ name: string; grace: number; reason: string; message: string; at: number }>;
  let pods: Pod[];
  let finish: Map<string, () => void>;

  beforeEach(() => {
    clock = new FakeClock();
    stops = [];
    finish = new Map();
    pods = [
      testPod("web", { terminationGracePeriodSeconds: 60 }),
      testPod("quick", { terminationGracePeriodSeconds: 5 }),
      testPod("dns", { priorityClassName: "system-cluster-critical" }),
    ];
  });
  const manager = (logind: Logind, log: Logger = silentLogger) =>
    createNodeShutdownManager(
      { groups: periods(30_000, 10_000), setting: "shutdownGracePeriod", clock, log },
      {
        connect: async () => logind,
        activePods: () => pods,
        stopPod: (pod, grace, reason, message) => {
          stops.push({ name: pod.metadata.name, grace, reason, message, at: clock.now() });
          return new Promise<void>((resolve) => finish.set(pod.metadata.name, resolve));
        },
      },
    );

  test("PrepareForShutdown stops regular pods within their period, then critical ones, then releases the lock", async () => {
    const fake = fakeLogind();
    const m = manager(fake.logind);
    const stop = new AbortController();
    const running = m.run(stop.signal);
    await settle();
    expect(fake.events).toEqual(["lock"]);
    const start = clock.now();
    fake.prepareForShutdown(true);
    await settle();
    expect(m.shuttingDown()).toBe(true);
    expect(stops.map((s) => [s.name, s.grace])).toEqual([
      ["web", 20],
      ["quick", 5],
    ]);
    expect(stops[0]).toMatchObject({ reason: "Terminated", message: SHUTDOWN_MESSAGE });
    finish.get("quick")!();
    // "web" does not stop: the critical group starts when the regular group's 20 s are over.
    await clock.advance(19_999);
    expect(stops).toHaveLength(2);
    await clock.advance(1);
    await settle();
    expect(stops.map((s) => [s.name, s.grace, s.at - start])).toEqual([
      ["web", 20, 0],
      ["quick", 5, 0],
      ["dns", 10, 20_000],
    ]);
    expect(fake.events).toEqual(["lock"]);
    finish.get("dns")!();
    await settle();
    await settle();
    expect(fake.events).toEqual(["lock", "release"]);
    stop.abort();
    await running;
    expect(fake.events).toEqual(["lock", "release", "close"]);
  });

  test("the shutdown's start is recorded before any pod stops and its end before the lock is released", async () => {
    const fake = fakeLogind();
    pods = [testPod("web", { terminationGracePeriodSeconds: 1 })];
    const state = {
      restore: () => void fake.events.push("restore"),
      started: async () => void fake.events.push(`started, ${stops.length} stopped`),
      ended: async () => void fake.events.push(`ended, ${stops.length} stopped`),
    };
    const m = createNodeShutdownManager(
      { groups: periods(30_000, 10_000), setting: "shutdownGracePeriod", clock, log: silentLogger },
      {
        connect: async () => fake.logind,
        activePods: () => pods,
        stopPod: async (pod) => void stops.push({ name: pod.metadata.name, grace: 0, reason: "", message: "", at: 0 }),
        state,
      },
    );
    const stop = new AbortController();
    const running = m.run(stop.signal);
    await settle();
    fake.prepareForShutdown(true);
    for (let i = 0; i < 5; i++) await settle();
    expect(fake.events).toEqual(["restore", "lock", "started, 0 stopped", "ended, 1 stopped", "release"]);
    stop.abort();
    await running;
  });

  test("a cancelled shutdown takes the lock again and the node is ready again", async () => {
    const fake = fakeLogind();
    pods = [];
    const m = manager(fake.logind);
    const stop = new AbortController();
    const running = m.run(stop.signal);
    await settle();
    fake.prepareForShutdown(true);
    await settle();
    await settle();
    fake.prepareForShutdown(false);
    await settle();
    await settle();
    expect(m.shuttingDown()).toBe(false);
    expect(fake.events).toEqual(["lock", "release", "lock"]);
    stop.abort();
    await running;
  });

  test("an InhibitDelayMaxSec below the period and an absent logind are reported in one line each", async () => {
    const warnings: string[] = [];
    const log: Logger = { ...silentLogger, warn: (m) => warnings.push(m) };
    const stop = new AbortController();
    stop.abort();
    await manager(fakeLogind(5_000).logind, log).run(stop.signal);
    expect(warnings).toEqual([
      "systemd-logind's InhibitDelayMaxSec (5s) is shorter than shutdownGracePeriod (30s): logind shuts down after 5s whatever the pods; raise InhibitDelayMaxSec in /etc/systemd/logind.conf.d/",
    ]);
    warnings.length = 0;
    await createNodeShutdownManager(
      { groups: periods(30_000, 0), setting: "shutdownGracePeriod", clock, log },
      {
        connect: () => Promise.reject(new Error("cannot reach systemd-logind on the system D-Bus (unix:path=/x)")),
        activePods: () => [],
        stopPod: async () => {},
      },
    ).run(stop.signal);
    expect(warnings).toEqual([
      "node shutdown is not watched (shutdownGracePeriod 30s): cannot reach systemd-logind on the system D-Bus (unix:path=/x)",
    ]);
  });

  test("with shutdownGracePeriodByPodPriority the periods together are compared with InhibitDelayMaxSec", async () => {
    const warnings: string[] = [];
    const log: Logger = { ...silentLogger, warn: (m) => warnings.push(m) };
    const stop = new AbortController();
    stop.abort();
    await createNodeShutdownManager(
      { groups: byPriority([0, 4], [1000, 3], [10_000, 2]), setting: "shutdownGracePeriodByPodPriority", clock, log },
      { connect: async () => fakeLogind(8_000).logind, activePods: () => [], stopPod: async () => {} },
    ).run(stop.signal);
    expect(warnings).toEqual([
      "systemd-logind's InhibitDelayMaxSec (8s) is shorter than the periods of shutdownGracePeriodByPodPriority together (9s): logind shuts down after 8s whatever the pods; raise InhibitDelayMaxSec in /etc/systemd/logind.conf.d/",
    ]);
  });
});
