// The rollout controller against the in-memory etcd and a fake clock, with simulated nodes that run
// whatever their keys hold (a start taking START_MS, a missing image never starting) and report back
// as kubelets do: batches, a bad image rolled back, pause and resume, a killed driver taken over, CAS.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ANNOTATION, type Pod } from "../api/types.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import { ETCD_DAEMONS, etcdPodKey, selectorMatches } from "../sources/etcd.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { fleetApply, placementKeys, type PlacementTarget } from "./fleet-apply.ts";
import { listRevisions } from "./fleet-revisions.ts";
import {
  driveRollout,
  readRollout,
  type RolloutClient,
  type RolloutState,
  type RolloutStrategy,
  rolloutKeys,
} from "./fleet-rollout.ts";
import { pauseRollout, startRollout, unpauseRollout } from "./fleet-rollout-start.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-rollout-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const START_MS = 1500;
const webPod = (image: string, extra: Record<string, unknown> = {}) =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web", namespace: "default", annotations: {}, ...extra },
    spec: { containers: [{ name: "app", image }] },
  }) as unknown as Pod;

const strategy = (over: Partial<RolloutStrategy> = {}): RolloutStrategy => ({
  maxUnavailable: "1",
  maxSurge: "0",
  minReadySeconds: 0,
  progressDeadlineSeconds: 60,
  onFailure: "rollback",
  revisionHistoryLimit: 10,
  ...over,
});

/**
 * Nodes that read their keys as the etcd source does (their own pods/ key over the every-node one) and report the
 * node record, the manifest they run and the pod's status: Ready START_MS after a change, never for image "missing".
 */
function simulatedFleet(etcd: FakeEtcd, clock: FakeClock, names: string[], labels: Record<string, string> = {}) {
  const down = new Set<string>();
  const seen = new Map<string, { hash: string; since: number; image: string }>();
  /** Nodes that ever ran each manifest hash. */
  const ran = new Map<string, Set<string>>();
  /** Most nodes seen not Ready at once. */
  let maxNotReady = 0;
  const converge = () => {
    let notReady = 0;
    for (const node of names) {
      if (down.has(node)) {
        for (const key of [...etcd.data.keys()])
          if (key.includes(`/${node}/status/`) || key === fleetKeys.node(node) || key === fleetKeys.revisions(node))
            etcd.data.delete(key);
        continue;
      }
      etcd.data.set(fleetKeys.node(node), {
        value: JSON.stringify({
          metadata: { name: node, labels: { ...labels, "kubernetes.io/hostname": node } },
          status: { conditions: [{ type: "Ready", status: "True" }] },
        }),
        lease: "0",
        modRevision: etcd.revision,
      });
      const own = etcd.data.get(etcdPodKey(node, "default", "web"))?.value;
      const daemon = etcd.data.get(`${ETCD_DAEMONS}default/web`)?.value;
      const daemonPod = daemon ? (JSON.parse(daemon) as Pod) : undefined;
      const pod = own
        ? (JSON.parse(own) as Pod)
        : daemonPod && selectorMatches(daemonPod.spec.nodeSelector, { ...labels, "kubernetes.io/hostname": node })
          ? daemonPod
          : undefined;
      if (!pod) continue;
      const hash = pod.metadata.annotations![ANNOTATION.manifestHash]!;
      const image = pod.spec.containers[0]!.image!;
      const before = seen.get(node);
      if (before?.hash !== hash) seen.set(node, { hash, since: clock.now(), image });
      const at = seen.get(node)!;
      ran.get(hash)?.add(node) ?? ran.set(hash, new Set([node]));
      const started = image !== "missing" && clock.now() - at.since >= START_MS;
      if (!started) notReady++;
      const status = started
        ? {
            phase: "Running",
            conditions: [{ type: "Ready", status: "True" }],
            containerStatuses: [
              { name: "app", containerID: `sim://${node}/${hash}`, ready: true, state: { running: {} } },
            ],
          }
        : {
            phase: "Pending",
            conditions: [{ type: "Ready", status: "False" }],
            containerStatuses: [
              {
                name: "app",
                ready: false,
                state: { waiting: { reason: image === "missing" ? "ErrImagePull" : "ContainerCreating" } },
              },
            ],
          };
      etcd.data.set(fleetKeys.status(node, "default", "web"), {
        value: JSON.stringify(status),
        lease: "0",
        modRevision: etcd.revision,
      });
      etcd.data.set(fleetKeys.revisions(node), {
        value: JSON.stringify({ "default/web": hash }),
        lease: "0",
        modRevision: etcd.revision,
      });
    }
    maxNotReady = Math.max(maxNotReady, notReady);
  };
  return {
    converge,
    down,
    ran,
    get maxNotReady() {
      return maxNotReady;
    },
    resetMax() {
      maxNotReady = 0;
    },
  };
}

function file(image: string): string {
  const path = join(dir, `web-${image.replace(/\W/g, "_")}.yaml`);
  writeFileSync(path, JSON.stringify(webPod(image)));
  return path;
}

/** A fleet of `n` nodes with web placed on `target` at image v1, converged. */
async function placed(n: number, target?: PlacementTarget) {
  const etcd = new FakeEtcd();
  const clock = new FakeClock();
  const names = Array.from({ length: n }, (_, i) => `node-${i}`);
  const fleet = simulatedFleet(etcd, clock, names);
  const sink = { write: () => true } as unknown as NodeJS.WritableStream;
  await fleetApply(file("v1"), target ?? { nodes: names }, {
    client: etcd,
    dryRun: false,
    out: sink,
    err: sink,
    allowPrivileged: false,
  });
  fleet.converge();
  await clock.advance(START_MS);
  fleet.converge();
  fleet.resetMax();
  const client = etcd as unknown as RolloutClient;
  return { etcd, clock, names, fleet, client };
}

/** Runs `work` while time passes in steps of 250 ms and the nodes converge after each. */
async function run<T>(ctx: { clock: FakeClock; fleet: { converge(): void } }, work: Promise<T>, limitMs = 600_000) {
  let done = false;
  let value: T | undefined;
  let failure: unknown;
  work.then(
    (v) => ((done = true), (value = v)),
    (e) => ((done = true), (failure = e)),
  );
  for (let t = 0; !done && t < limitMs; t += 250) {
    ctx.fleet.converge();
    await ctx.clock.advance(250);
  }
  if (failure) throw failure;
  if (!done) throw new Error("the driver did not return");
  return value as T;
}

const hashOn = (etcd: FakeEtcd, node: string) =>
  JSON.parse(etcd.data.get(etcdPodKey(node, "default", "web"))!.value).metadata.annotations[ANNOTATION.manifestHash];

async function begin(ctx: Awaited<ReturnType<typeof placed>>, image: string, over: Partial<RolloutStrategy> = {}) {
  const result = await startRollout(
    { client: ctx.client, clock: ctx.clock, who: "ann@ops", strategy: strategy(over) },
    webPod(image),
  );
  if (!("started" in result)) throw new Error(JSON.stringify(result));
  return result.started;
}

test("a rollout takes the nodes in batches of --max-unavailable, each Ready before the next, and completes", async () => {
  const ctx = await placed(6);
  const started = await begin(ctx, "v2", { maxUnavailable: "2" });
  expect(started.batches).toEqual([
    ["node-0", "node-1"],
    ["node-2", "node-3"],
    ["node-4", "node-5"],
  ]);
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.phase).toBe("Complete");
  expect(end.results.map((r) => [r.index, r.result, r.ready])).toEqual([
    [1, "Ready", 2],
    [2, "Ready", 2],
    [3, "Ready", 2],
  ]);
  expect(ctx.fleet.maxNotReady).toBe(2);
  expect(new Set(ctx.names.map((n) => hashOn(ctx.etcd, n)))).toEqual(new Set([started.hash]));
  const placement = JSON.parse(ctx.etcd.data.get(placementKeys.placement("default", "web"))!.value);
  expect(placement.hash).toBe(started.hash);
  expect((await listRevisions(ctx.client, "default", "web")).map((r) => [r.revision, r.createdBy])).toEqual([
    [1, "kubelet fleet apply"],
    [2, "ann@ops"],
  ]);
});

test("a bad image fails the first batch and is rolled back: no node outside it ever had the bad spec", async () => {
  const ctx = await placed(10);
  const started = await begin(ctx, "missing", { maxUnavailable: "10%" });
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.phase).toBe("RolledBack");
  expect(end.reason).toBe("ErrImagePull");
  expect(end.results.map((r) => `${r.phase} ${r.index}/${r.of} ${r.result}`)).toEqual([
    "Progressing 1/10 Failed",
    "RollingBack 1/1 Ready",
  ]);
  expect([...(ctx.fleet.ran.get(started.hash) ?? [])]).toEqual(["node-0"]);
  expect(new Set(ctx.names.map((n) => hashOn(ctx.etcd, n)))).toEqual(new Set([started.fromHash]));
  const placement = JSON.parse(ctx.etcd.data.get(placementKeys.placement("default", "web"))!.value);
  expect(placement.hash).toBe(started.fromHash);
});

test("with --on-failure pause a failed batch holds the rollout paused, the batch left as it is", async () => {
  const ctx = await placed(4);
  const started = await begin(ctx, "missing", { onFailure: "pause" });
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect([end.phase, end.reason, end.batch]).toEqual(["Paused", "ErrImagePull", 0]);
  expect(hashOn(ctx.etcd, "node-0")).toBe(started.hash);
  expect(hashOn(ctx.etcd, "node-1")).toBe(started.fromHash);
});

test("a batch not Ready by --progress-deadline fails with ProgressDeadlineExceeded and is rolled back", async () => {
  const ctx = await placed(3);
  await begin(ctx, "v2", { progressDeadlineSeconds: 1 });
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.results[0]).toMatchObject({ result: "Failed", reason: "ProgressDeadlineExceeded" });
  expect(end.message).toContain("not Ready within --progress-deadline 1s: node node-0");
});

test("--min-ready-seconds holds a batch until its pods have been Ready that long", async () => {
  const ctx = await placed(2);
  await begin(ctx, "v2", { minReadySeconds: 10 });
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.phase).toBe("Complete");
  // The start (1.5 s) and 10 s Ready, per batch.
  expect(end.results.every((r) => r.seconds >= 11.5)).toBe(true);
});

test("a second rollout of the pod while one is under way is refused, naming the running one", async () => {
  const ctx = await placed(3);
  await begin(ctx, "v2");
  const second = await startRollout(
    { client: ctx.client, clock: ctx.clock, who: "bob@ops", strategy: strategy() },
    webPod("v3"),
  );
  expect(second).toEqual({
    refused: expect.stringContaining(
      "rollout of default/web to revision 2 (Progressing, batch 1/3, started by ann@ops at 2026-01-01T00:00:01.500Z) is under way",
    ),
  });
});

test("two rollouts begun at once: the one whose compare-and-swap lost is refused and writes nothing", async () => {
  const ctx = await placed(3);
  let rival: Promise<unknown> | undefined;
  const racing: RolloutClient = {
    ...ctx.client,
    get: ctx.etcd.get.bind(ctx.etcd),
    list: ctx.etcd.list.bind(ctx.etcd) as RolloutClient["list"],
    applyIf: async (expected, changes) => {
      rival ??= begin(ctx, "v3");
      await rival;
      return ctx.etcd.applyIf(expected, changes);
    },
  } as RolloutClient;
  const lost = await startRollout(
    { client: racing, clock: ctx.clock, who: "bob@ops", strategy: strategy() },
    webPod("v2"),
  );
  expect(lost).toEqual({ refused: expect.stringContaining("began first") });
  const { state } = await readRollout(ctx.client, "default", "web");
  expect(state!.startedBy).toBe("ann@ops");
  expect((await listRevisions(ctx.client, "default", "web")).map((r) => r.pod.spec.containers[0]!.image)).toEqual([
    "v1",
    "v3",
  ]);
});

test("a driver stopped mid-rollout leaves it where it was; once its lease is gone another driver finishes it", async () => {
  const ctx = await placed(4);
  await begin(ctx, "v2");
  const stop = new AbortController();
  let lease = "";
  const first = await run(
    ctx,
    driveRollout(
      {
        client: ctx.client,
        clock: ctx.clock,
        signal: stop.signal,
        onProgress: (s) => {
          lease = s.driver?.lease ?? lease;
          if (s.results.length === 2) stop.abort();
        },
      },
      "default",
      "web",
    ),
  );
  expect([first.phase, first.batch]).toEqual(["Progressing", 2]);
  // As a SIGKILL leaves it: the lease not revoked, still alive, so a second driver is refused.
  ctx.etcd.leases.add(lease);
  const refused = await driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web").catch((e) => e);
  expect(refused).toMatchObject({ code: "Conflict" });
  expect(refused.message).toContain(`is driven by pid ${process.pid}`);
  ctx.etcd.expire(lease);
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.phase).toBe("Complete");
  expect(end.results.map((r) => r.index)).toEqual([1, 2, 3, 4]);
});

test("pause stops the driver at its next read; resume goes on from the batch it was in", async () => {
  const ctx = await placed(4);
  await begin(ctx, "v2");
  let paused: Promise<RolloutState> | undefined;
  const first = await run(
    ctx,
    driveRollout(
      {
        client: ctx.client,
        clock: ctx.clock,
        onProgress: (s) => {
          if (s.results.length === 1) paused ??= pauseRollout(ctx.client, "default", "web");
        },
      },
      "default",
      "web",
    ),
  );
  expect(first.phase).toBe("Paused");
  expect((await paused)!.pausedPhase).toBe("Progressing");
  expect((await unpauseRollout(ctx.client, "default", "web")).phase).toBe("Progressing");
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.phase).toBe("Complete");
  expect(end.results.map((r) => r.index)).toEqual([1, 2, 3, 4]);
});

test("down and cordoned nodes count as unavailable: their keys are written, the batch does not wait for them", async () => {
  const ctx = await placed(4);
  ctx.fleet.down.add("node-1");
  ctx.fleet.converge();
  ctx.etcd.data.set(rolloutKeys.cordon("node-0"), { value: "{}", lease: "0", modRevision: 1 });
  const started = await begin(ctx, "v2", { maxUnavailable: "2", progressDeadlineSeconds: 30 });
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect(end.phase).toBe("Complete");
  expect(end.results[0]).toMatchObject({
    ready: 0,
    unavailable: { "node-0": "cordoned", "node-1": "down (no lease)" },
    result: "Ready",
  });
  expect(end.results[0]!.seconds).toBeLessThan(30);
  // The node that comes back reads the current revision from its key.
  expect(hashOn(ctx.etcd, "node-1")).toBe(started.hash);
  ctx.fleet.down.delete("node-1");
  ctx.fleet.converge();
  expect(JSON.parse(ctx.etcd.data.get(fleetKeys.revisions("node-1"))!.value)["default/web"]).toBe(started.hash);
});

test("a selector placement moves node by node through the nodes' own keys; the every-node key takes the pod at the end", async () => {
  const ctx = await placed(4, { selector: {} });
  const started = await begin(ctx, "v2", { maxUnavailable: "2" });
  const daemonKey = `${ETCD_DAEMONS}default/web`;
  const daemonHash = () =>
    JSON.parse(ctx.etcd.data.get(daemonKey)!.value).metadata.annotations[ANNOTATION.manifestHash];
  const ownKeys = () => [...ctx.etcd.data.keys()].filter((k) => k.endsWith("/pods/default/web")).sort();
  let midway: { own: string[]; daemon: string } | undefined;
  const end = await run(
    ctx,
    driveRollout(
      {
        client: ctx.client,
        clock: ctx.clock,
        onProgress: (s) => {
          if (s.results.length === 1 && !midway) midway = { own: ownKeys(), daemon: daemonHash() };
        },
      },
      "default",
      "web",
    ),
  );
  expect(end.phase).toBe("Complete");
  expect(midway).toEqual({
    own: [etcdPodKey("node-0", "default", "web"), etcdPodKey("node-1", "default", "web")],
    daemon: started.fromHash,
  });
  expect(ownKeys()).toEqual([]);
  expect(daemonHash()).toBe(started.hash);
  expect(ctx.fleet.maxNotReady).toBe(2);
});

test("an apply of the pod while its rollout is under way pauses the rollout instead of writing over it", async () => {
  const ctx = await placed(4);
  await begin(ctx, "v2");
  const stop = new AbortController();
  const onProgress = (s: RolloutState) => s.results.length === 1 && stop.abort();
  const first = await run(
    ctx,
    driveRollout({ client: ctx.client, clock: ctx.clock, signal: stop.signal, onProgress }, "default", "web"),
  );
  const sink = { write: () => true } as unknown as NodeJS.WritableStream;
  const options = { client: ctx.etcd, dryRun: false, out: sink, err: sink, allowPrivileged: false };
  expect(await fleetApply(file("v9"), { nodes: ctx.names }, options)).toBe(0);
  ctx.etcd.expire(first.driver!.lease);
  const end = await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  expect([end.phase, end.reason, end.batch]).toEqual(["Paused", "PlacementChanged", 1]);
  expect(end.message).toContain("changed by another command (kubelet fleet apply or delete)");
});

test("revisions beyond --revision-history-limit are pruned, oldest first, never the current one", async () => {
  const ctx = await placed(1);
  for (const image of ["v2", "v3", "v4", "v5"]) {
    await begin(ctx, image, { revisionHistoryLimit: 2 });
    await run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web"));
  }
  expect((await listRevisions(ctx.client, "default", "web")).map((r) => r.revision)).toEqual([2, 3, 4, 5]);
});
