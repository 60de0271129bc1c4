// The rollout controller against the in-memory etcd and a fake clock, with simulated nodes
// (lib/testing/rollout-fleet.ts): batches, a bad image rolled back, a deadline, pause and resume, a
// killed driver taken over, down and cordoned nodes, a selector placement, an apply during a rollout,
// --max-surge's copies beside the old pod.
import { expect, test } from "bun:test";
import { ANNOTATION } from "../api/types.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import { ETCD_DAEMONS, etcdPodKey } from "../sources/etcd.ts";
import { begin, drive, file, hashOn, placed, strategy, webPod } from "../testing/rollout-fleet.ts";
import { fleetApply, placementKeys } from "./fleet-apply.ts";
import { listRevisions } from "./fleet-revisions.ts";
import { driveRollout, type RolloutState, rolloutKeys } from "./fleet-rollout.ts";
import { surgeName } from "./fleet-rollout-plan.ts";
import { pauseRollout, startRollout, unpauseRollout } from "./fleet-rollout-start.ts";

test("a rollout takes the nodes in batches of --max-unavailable, each Ready before the next, and completes", async () => {
  const ctx = await placed(6);
  const started = await begin(ctx, "v2", { maxUnavailable: "2" });
  expect(started.batches).toEqual([
    ["node-0", "node-1"],
    ["node-2", "node-3"],
    ["node-4", "node-5"],
  ]);
  const end = await drive(ctx);
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
  const end = await drive(ctx);
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
  const end = await drive(ctx);
  expect([end.phase, end.reason, end.batch]).toEqual(["Paused", "ErrImagePull", 0]);
  expect(hashOn(ctx.etcd, "node-0")).toBe(started.hash);
  expect(hashOn(ctx.etcd, "node-1")).toBe(started.fromHash);
});

test("a batch not Ready by --progress-deadline fails with ProgressDeadlineExceeded and is rolled back", async () => {
  const ctx = await placed(3);
  await begin(ctx, "v2", { progressDeadlineSeconds: 1 });
  const end = await drive(ctx);
  expect(end.results[0]).toMatchObject({ result: "Failed", reason: "ProgressDeadlineExceeded" });
  expect(end.message).toContain("not Ready within --progress-deadline 1s: node node-0");
});

test("--min-ready-seconds holds a batch until its pods have been Ready that long", async () => {
  const ctx = await placed(2);
  await begin(ctx, "v2", { minReadySeconds: 10 });
  const end = await drive(ctx);
  expect(end.phase).toBe("Complete");
  // The start (1.5 s) and 10 s Ready, per batch.
  expect(end.results.every((r) => r.seconds >= 11.5)).toBe(true);
});

test("a driver stopped mid-rollout leaves it where it was; once its lease is gone another driver finishes it", async () => {
  const ctx = await placed(4);
  await begin(ctx, "v2");
  const stop = new AbortController();
  let lease = "";
  const first = await drive(ctx, {
    signal: stop.signal,
    onProgress: (s) => {
      lease = s.driver?.lease ?? lease;
      if (s.results.length === 2) stop.abort();
    },
  });
  expect([first.phase, first.batch]).toEqual(["Progressing", 2]);
  // As a SIGKILL leaves it: the lease not revoked, still alive, so a second driver is refused.
  ctx.etcd.leases.add(lease);
  const refused = await driveRollout({ client: ctx.client, clock: ctx.clock }, "default", "web").catch((e) => e);
  expect(refused).toMatchObject({ code: "Conflict" });
  expect(refused.message).toContain(`is driven by pid ${process.pid}`);
  ctx.etcd.expire(lease);
  const end = await drive(ctx);
  expect(end.phase).toBe("Complete");
  expect(end.results.map((r) => r.index)).toEqual([1, 2, 3, 4]);
});

test("pause stops the driver at its next read; resume goes on from the batch it was in", async () => {
  const ctx = await placed(4);
  await begin(ctx, "v2");
  let paused: Promise<RolloutState> | undefined;
  const first = await drive(ctx, {
    onProgress: (s) => {
      if (s.results.length === 1) paused ??= pauseRollout(ctx.client, "default", "web");
    },
  });
  expect(first.phase).toBe("Paused");
  expect((await paused)!.pausedPhase).toBe("Progressing");
  expect((await unpauseRollout(ctx.client, "default", "web")).phase).toBe("Progressing");
  const end = await drive(ctx);
  expect(end.phase).toBe("Complete");
  expect(end.results.map((r) => r.index)).toEqual([1, 2, 3, 4]);
});

test("down and cordoned nodes count as unavailable: their keys are written, the batch does not wait for them", async () => {
  const ctx = await placed(4);
  ctx.fleet.down.add("node-1");
  ctx.fleet.converge();
  ctx.etcd.data.set(rolloutKeys.cordon("node-0"), { value: "{}", lease: "0", modRevision: 1 });
  const started = await begin(ctx, "v2", { maxUnavailable: "2", progressDeadlineSeconds: 30 });
  const end = await drive(ctx);
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
  const end = await drive(ctx, {
    onProgress: (s) => {
      if (s.results.length === 1 && !midway) midway = { own: ownKeys(), daemon: daemonHash() };
    },
  });
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
  const first = await drive(ctx, { signal: stop.signal, onProgress });
  const sink = { write: () => true } as unknown as NodeJS.WritableStream;
  const options = { client: ctx.etcd, dryRun: false, out: sink, err: sink, allowPrivileged: false };
  expect(await fleetApply(file("v9"), { nodes: ctx.names }, options)).toBe(0);
  ctx.etcd.expire(first.driver!.lease);
  const end = await drive(ctx);
  expect([end.phase, end.reason, end.batch]).toEqual(["Paused", "PlacementChanged", 1]);
  expect(end.message).toContain("changed by another command (kubelet fleet apply or delete)");
});

test("a driver whose lease was lost (etcd away past its TTL) takes a new one and goes on", async () => {
  const ctx = await placed(3);
  await begin(ctx, "v2");
  const leases: string[] = [];
  const end = await drive(ctx, {
    onProgress: (s) => {
      if (s.driver && !leases.includes(s.driver.lease)) leases.push(s.driver.lease);
      if (s.results.length === 1 && leases.length === 1) ctx.etcd.expire(s.driver!.lease);
    },
  });
  expect(end.phase).toBe("Complete");
  expect(leases).toHaveLength(2);
});

/** The surge copies of web at `hash` left in etcd. */
const copyKeys = (ctx: Awaited<ReturnType<typeof placed>>, hash: string) =>
  [...ctx.etcd.data.keys()].filter((k) => k.endsWith(`/pods/default/${surgeName("web", hash)}`));

/** After a surge rollout to `hash`: no copy left, every node's own key at `at`, and never a node without a Ready web. */
const settled = (ctx: Awaited<ReturnType<typeof placed>>, hash: string, at: string) => {
  expect(ctx.fleet.maxWithoutReady).toBe(0);
  expect(copyKeys(ctx, hash)).toEqual([]);
  expect(new Set(ctx.names.map((n) => hashOn(ctx.etcd, n)))).toEqual(new Set([at]));
};

test("with --max-surge 1 and --max-unavailable 0 a node's old pod is replaced only once its copy is Ready: never a node without a Ready web", async () => {
  const ctx = await placed(3);
  const started = await begin(ctx, "v2", { maxUnavailable: "0", maxSurge: "1" });
  expect([started.batches, started.surge]).toEqual([[["node-0"], ["node-1"], ["node-2"]], 1]);
  const steps: string[] = [];
  const end = await drive(ctx, {
    onProgress: (s) => {
      const step = `${s.batch}:${s.surgeStep ?? "-"}:${copyKeys(ctx, started.hash).join(",")}`;
      if (steps.at(-1) !== step) steps.push(step);
    },
  });
  expect(end.phase).toBe("Complete");
  // The copy written beside the old pod, then the pod's own key given the new one, then the copy gone.
  const copy = etcdPodKey("node-0", "default", surgeName("web", started.hash));
  expect(steps.slice(0, 4)).toEqual(["0:-:", `0:copy:${copy}`, `0:replace:${copy}`, "1:-:"]);
  settled(ctx, started.hash, started.hash);
});

test("--max-unavailable 25% and --max-surge 25% of 4 nodes: batches of 2, the first node of each surged, the other in place", async () => {
  const ctx = await placed(4);
  const started = await begin(ctx, "v2", { maxUnavailable: "25%", maxSurge: "25%" });
  expect([started.batches, started.surge]).toEqual([
    [
      ["node-0", "node-1"],
      ["node-2", "node-3"],
    ],
    1,
  ]);
  const end = await drive(ctx);
  expect(end.phase).toBe("Complete");
  // The in-place node restarts while the surged one's copy starts, the surged one's pod after: one at a time, and
  // only the in-place node is ever without a Ready web.
  expect([ctx.fleet.maxNotReady, ctx.fleet.maxWithoutReady]).toEqual([1, 1]);
});

test("a surge copy that cannot start fails its batch before the old pod is touched; the copy is removed and the rollout rolled back", async () => {
  const ctx = await placed(3);
  const started = await begin(ctx, "missing", { maxUnavailable: "0", maxSurge: "1" });
  const end = await drive(ctx);
  expect([end.phase, end.reason]).toEqual(["RolledBack", "ErrImagePull"]);
  expect(end.message).toContain("node node-0: container app: ErrImagePull");
  // No node's own pod ever ran the bad spec, and none lost its Ready web.
  expect(ctx.fleet.ran.get(started.hash)).toBeUndefined();
  settled(ctx, started.hash, started.fromHash);
});

/** A surge rollout of 3 nodes paused in its first batch's `step`. */
async function pausedAt(step: "copy" | "replace") {
  const ctx = await placed(3);
  const started = await begin(ctx, "v2", { maxUnavailable: "0", maxSurge: "1" });
  let paused: Promise<RolloutState> | undefined;
  const first = await drive(ctx, {
    onProgress: (s) => {
      if (s.surgeStep === step) paused ??= pauseRollout(ctx.client, "default", "web");
    },
  });
  expect([first.phase, first.surgeStep]).toEqual(["Paused", step]);
  return { ctx, started, first };
}

test("an undo of a rollout paused mid-surge removes the batch's surge copies with it", async () => {
  const { ctx, started } = await pausedAt("copy");
  expect(copyKeys(ctx, started.hash)).toHaveLength(1);
  const undone = await startRollout(
    { client: ctx.client, clock: ctx.clock, who: "ann@ops", strategy: strategy(), supersede: true },
    webPod("v1"),
  );
  expect("started" in undone).toBe(true);
  expect(copyKeys(ctx, started.hash)).toEqual([]);
});

/** A rollout of `n` nodes to v2 with --max-surge 1 --max-unavailable 0, begun, v2 crash-looping where `crash` says. */
async function surgeCrashing(n: number, crash: string) {
  const ctx = await placed(n);
  ctx.fleet.crashes.add(crash);
  return { ctx, started: await begin(ctx, "v2", { maxUnavailable: "0", maxSurge: "1" }) };
}

test("a surge rollout failing in its third batch rolls the batches done back with copies of the old pod beside: never a node without a Ready web", async () => {
  const { ctx, started } = await surgeCrashing(3, "node-2:v2");
  const back: string[] = [];
  const end = await drive(ctx, {
    onProgress: (s) => {
      const step = `${s.batches[s.batch]?.join(",")}:${s.surgeStep ?? "-"}`;
      if (s.phase === "RollingBack" && s.batch < s.batches.length && back.at(-1) !== step) back.push(step);
    },
  });
  expect([end.phase, end.reason]).toEqual(["RolledBack", "CrashLoopBackOff"]);
  expect(end.results.map((r) => `${r.phase} ${r.index}/${r.of} ${r.result}`)).toEqual([
    "Progressing 1/3 Ready",
    "Progressing 2/3 Ready",
    "Progressing 3/3 Failed",
    "RollingBack 1/3 Ready",
    "RollingBack 2/3 Ready",
    "RollingBack 3/3 Ready",
  ]);
  // node-2's copy failed before its own pod was touched: nothing to move back there; node-1 and node-0 each get a
  // copy of the old pod first, replaced once it is Ready.
  expect(back).toEqual([
    "node-2:-",
    "node-1:-",
    "node-1:copy",
    "node-1:replace",
    "node-0:-",
    "node-0:copy",
    "node-0:replace",
  ]);
  settled(ctx, started.fromHash, started.fromHash);
  expect(copyKeys(ctx, started.hash)).toEqual([]);
});

test("a batch failing after its copy served (its own pod crash-looping) keeps the copy as a stray until the rollback moved the node back", async () => {
  const { ctx, started } = await surgeCrashing(2, "node-1:v2:web");
  const strays: string[] = [];
  const end = await drive(ctx, {
    onProgress: (s) => {
      const seen = JSON.stringify(s.strays ?? {});
      if (strays.at(-1) !== seen) strays.push(seen);
    },
  });
  expect([end.phase, end.reason]).toEqual(["RolledBack", "CrashLoopBackOff"]);
  expect(strays).toEqual(["{}", JSON.stringify({ "node-1": surgeName("web", started.hash) }), "{}"]);
  settled(ctx, started.hash, started.fromHash);
  expect(copyKeys(ctx, started.fromHash)).toEqual([]);
});

test("an undo of a rollout paused after its copy served keeps the copy until the undo moved the node", async () => {
  const { ctx, started, first } = await pausedAt("replace");
  const undone = await startRollout(
    { client: ctx.client, clock: ctx.clock, who: "ann@ops", strategy: first.strategy, supersede: true },
    webPod("v1"),
  );
  if (!("started" in undone)) throw new Error(JSON.stringify(undone));
  expect(undone.started.strays).toEqual({ "node-0": surgeName("web", started.hash) });
  expect(copyKeys(ctx, started.hash)).toHaveLength(1);
  const end = await drive(ctx);
  expect(end.phase).toBe("Complete");
  settled(ctx, started.hash, started.fromHash);
});

test("an etcd call timing out under load (DEADLINE_EXCEEDED) is made again at the next poll: the rollout goes on", async () => {
  const ctx = await placed(3);
  await begin(ctx, "v2");
  // Every 3rd read of a node's status times out or is refused by etcd3's circuit breaker, as at load 40 with 1,000
  // nodes.
  let reads = 0;
  const get = ctx.etcd.get.bind(ctx.etcd);
  const client = {
    ...ctx.client,
    get: (key: string) => {
      if (key.includes("/status/") && ++reads % 3 === 0)
        return Promise.reject(
          new Error(
            reads % 6 === 0
              ? "Execution prevented because the circuit breaker is open"
              : "4 DEADLINE_EXCEEDED: Deadline exceeded after 4.959s",
          ),
        );
      return get(key);
    },
  } as typeof ctx.client;
  for (const m of ["list", "applyIf", "grantLease", "keepAlive", "leaseTimeToLive", "revokeLease"] as const)
    (client as Record<string, unknown>)[m] = (ctx.etcd as unknown as Record<string, Function>)[m]!.bind(ctx.etcd);
  const end = await drive(ctx, { client });
  expect(end.phase).toBe("Complete");
  expect(reads).toBeGreaterThan(6);
});

test("etcd away longer than a batch's --progress-deadline ends the driver with etcd's error", async () => {
  const ctx = await placed(2);
  await begin(ctx, "v2", { progressDeadlineSeconds: 5 });
  const client = { ...ctx.client } as Record<string, unknown>;
  for (const m of ["get", "list", "applyIf", "grantLease", "keepAlive", "leaseTimeToLive", "revokeLease"] as const)
    client[m] = (ctx.etcd as unknown as Record<string, Function>)[m]!.bind(ctx.etcd);
  let away = 0;
  const list = client.list as (prefix: string) => Promise<unknown>;
  client.list = (prefix: string) =>
    away ? Promise.reject(Object.assign(new Error("cannot reach etcd"), { code: "Unavailable" })) : list(prefix);
  const failed = drive(ctx, {
    client: client as typeof ctx.client,
    onProgress: (s) => {
      if (s.written) away ||= ctx.clock.now();
    },
  });
  await expect(failed).rejects.toThrow("cannot reach etcd");
  // Tried at each poll until the deadline, not given up at the first refusal.
  expect(ctx.clock.now() - away).toBeGreaterThan(5000);
});
