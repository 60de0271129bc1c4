// Beginning, pausing and resuming a rollout against the in-memory etcd: one compare-and-swap
// transaction each, a second rollout of the pod refused naming the first, revisions recorded and pruned.
import { expect, test } from "bun:test";
import { begin, drive, placed, strategy, webPod } from "../testing/rollout-fleet.ts";
import { listRevisions } from "./fleet-revisions.ts";
import { readRollout, type RolloutClient } from "./fleet-rollout.ts";
import { pauseRollout, startRollout, unpauseRollout } from "./fleet-rollout-start.ts";

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

test("revisions beyond --revision-history-limit are pruned, oldest first, never the current one", async () => {
  const ctx = await placed(1);
  for (const image of ["v2", "v3", "v4", "v5"]) {
    await begin(ctx, image, { revisionHistoryLimit: 2 });
    await drive(ctx);
  }
  expect((await listRevisions(ctx.client, "default", "web")).map((r) => r.revision)).toEqual([2, 3, 4, 5]);
});

test("a rollout of the manifest already placed changes nothing; a pod never placed is refused", async () => {
  const ctx = await placed(2);
  const options = { client: ctx.client, clock: ctx.clock, who: "ann@ops", strategy: strategy() };
  expect(await startRollout(options, webPod("v1"))).toEqual({ unchanged: { revision: 1, hash: expect.any(String) } });
  expect(await readRollout(ctx.client, "default", "web")).toEqual({ state: undefined, modRevision: 0 });
  expect(await startRollout(options, webPod("v1", "db"))).toEqual({
    refused:
      "pod default/db is not placed: no placement under /registry/placements/default/db (place it with kubelet fleet apply first)",
  });
});

test("pause holds a rollout under way, resume returns it to the phase it was paused in; an ended one cannot be paused", async () => {
  const ctx = await placed(2);
  await begin(ctx, "v2");
  expect((await pauseRollout(ctx.client, "default", "web")).phase).toBe("Paused");
  expect((await unpauseRollout(ctx.client, "default", "web")).phase).toBe("Progressing");
  await drive(ctx);
  const failure = await pauseRollout(ctx.client, "default", "web").catch((e) => e);
  expect(failure).toMatchObject({ code: "NotRunning" });
  expect(failure.message).toContain("has ended: nothing to pause");
});

test("undo replaces a paused rollout; a new rollout does not", async () => {
  const ctx = await placed(2);
  await begin(ctx, "v2");
  await pauseRollout(ctx.client, "default", "web");
  const options = { client: ctx.client, clock: ctx.clock, who: "ann@ops", strategy: strategy() };
  expect(await startRollout(options, webPod("v3"))).toEqual({ refused: expect.stringContaining("is under way") });
  const undo = await startRollout({ ...options, supersede: true }, webPod("v1"));
  expect("started" in undo && [undo.started.revision, undo.started.fromRevision]).toEqual([3, 2]);
});
