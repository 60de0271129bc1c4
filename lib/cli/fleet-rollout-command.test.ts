// `kubelet fleet rollout` as its user sees it, over the in-memory etcd and simulated nodes: the lines
// printed per batch, the live view on a terminal, history, undo, status of a rollout nobody drives,
// and the exit code of each ending.
import { expect, test } from "bun:test";
import { begin, drive, file, placed, run } from "../testing/rollout-fleet.ts";
import { ROLLOUT_EXIT, type RolloutRequest } from "./fleet-rollout-flags.ts";
import { readRollout, type RolloutState } from "./fleet-rollout.ts";
import { runRollout } from "./fleet-rollout-command.ts";

const strategy = {
  maxUnavailable: "1",
  maxSurge: "0",
  minReadySeconds: 0,
  progressDeadlineSeconds: 60,
  onFailure: "rollback" as const,
  revisionHistoryLimit: 10,
};

function io(tty = false) {
  const out: string[] = [];
  const err: string[] = [];
  const stream = (into: string[]) =>
    ({ write: (t: string) => into.push(t) > 0, isTTY: tty }) as unknown as NodeJS.WritableStream;
  return { io: { out: stream(out), err: stream(err) }, out, err };
}

async function rollout(ctx: Awaited<ReturnType<typeof placed>>, request: RolloutRequest, tty = false) {
  const { io: streams, out, err } = io(tty);
  const code = await run(ctx, runRollout(request, { client: ctx.client, clock: ctx.clock }, streams));
  return { code, out: out.join(""), err: err.join("") };
}

const start = (image: string): Extract<RolloutRequest, { verb: "start" }> => ({
  verb: "start",
  namespace: "default",
  file: file(image),
  strategy,
});

test("a rollout prints a line per batch and its end, and exits 0 once complete; history lists the revisions", async () => {
  const ctx = await placed(2);
  const done = await rollout(ctx, { ...start("v2"), changeCause: "new image" });
  expect(done.code).toBe(ROLLOUT_EXIT.complete);
  expect(done.out).toMatch(
    /^rollout of default\/web to revision 2 \(manifest [0-9a-f]{16}\) started: 2 nodes in 2 batches\nbatch 1\/2: 1\/1 nodes Ready in [\d.]+s\nbatch 2\/2: 1\/1 nodes Ready in [\d.]+s\nrollout of default\/web complete: revision 2 on 2 nodes in 2 batches \(\d+(\.\d)?s\)\n$/,
  );
  const history = await rollout(ctx, { verb: "history", pod: "web", namespace: "default" });
  expect(history.out.split("\n")).toEqual([
    expect.stringMatching(/^REVISION\s+MANIFEST\s+CREATED\s+BY\s+CHANGE-CAUSE$/),
    expect.stringMatching(/^1\s+[0-9a-f]{16}\s+2026-01-01T\S+\s+kubelet fleet apply\s+<none>$/),
    expect.stringMatching(/^2 \*\s+[0-9a-f]{16}\s+2026-01-01T\S+\s+\S+@\S+\s+new image$/),
    "",
  ]);
});

test("a bad image exits 3 after its first batch, rolled back; undo of a complete rollout goes back to the revision before", async () => {
  const ctx = await placed(3);
  const bad = await rollout(ctx, start("missing"));
  expect(bad.code).toBe(ROLLOUT_EXIT.rolledBack);
  expect(bad.out).toContain("batch 1/3: 0/1 nodes FAILED (ErrImagePull) in");
  expect(bad.out).toContain("rollback batch 1/1: 1/1 nodes Ready in");
  expect(bad.out).toContain(
    "rollout of default/web to revision 2 rolled back to revision 1: ErrImagePull: node node-0: container app: ErrImagePull",
  );
  const v3 = await rollout(ctx, start("v3"));
  expect(v3).toMatchObject({ code: ROLLOUT_EXIT.complete, err: "" });
  const undo = await rollout(ctx, { verb: "undo", pod: "web", namespace: "default", strategy, given: {} });
  expect(undo.code).toBe(ROLLOUT_EXIT.complete);
  expect(undo.out).toContain("rollout of default/web complete: revision 4 on 3 nodes");
  const { state } = await readRollout(ctx.client, "default", "web");
  expect([state!.revision, state!.fromRevision]).toEqual([4, 3]);
  const history = await rollout(ctx, { verb: "history", pod: "web", namespace: "default" });
  expect(history.out).toMatch(/^4 \*\s+[0-9a-f]{16}\s+\S+\s+\S+\s+undo: back to revision 1$/m);
});

test("status of a rollout whose driver is gone exits 5 and says resume finishes it; resume does", async () => {
  const ctx = await placed(3);
  expect((await rollout(ctx, start("v2"))).code).toBe(ROLLOUT_EXIT.complete);
  // A rollout left mid-way: begun by another process that drove one batch and died.
  await begin(ctx, "v3");
  const stop = new AbortController();
  const onProgress = (s: RolloutState) => s.results.length === 1 && stop.abort();
  await drive(ctx, { signal: stop.signal, onProgress });
  const status = await rollout(ctx, { verb: "status", pod: "web", namespace: "default" });
  expect(status.code).toBe(ROLLOUT_EXIT.undriven);
  expect(status.out).toContain("batch 1/3: 1/1 nodes Ready in");
  expect(status.out).toContain(
    "no command drives it (the one that did stopped): kubelet fleet rollout resume web goes on from batch 2",
  );
  const resumed = await rollout(ctx, { verb: "resume", pod: "web", namespace: "default" });
  expect(resumed.code).toBe(ROLLOUT_EXIT.complete);
  expect(resumed.out).toStartWith("resuming rollout of default/web to revision 3 at batch 2/3\n");
  expect((await rollout(ctx, { verb: "status", pod: "web", namespace: "default" })).code).toBe(ROLLOUT_EXIT.complete);
});

test("on a terminal the progress is one view redrawn in place", async () => {
  const ctx = await placed(2);
  const live = await rollout(ctx, start("v2"), true);
  expect(live.code).toBe(0);
  expect(live.out).toContain("\x1b[H\x1b[2J");
  expect(live.out).toContain("[###############...............] 1/2 batches");
  expect(live.out).toMatch(/batch 2\/2: 1 nodes: 0 ready, 1 pending, 0 unavailable, 0 failed \(\d+s of 60s\)/);
});

test("--max-surge is refused for a pod with a fixed hostPort, naming the field, and taken for one without; a file of another pod is refused", async () => {
  const ctx = await placed(2);
  const path = file("v2", { ports: [{ containerPort: 80, hostPort: 8080 }] });

  const surge = await rollout(ctx, { ...start("v2"), file: path, strategy: { ...strategy, maxSurge: "1" } });
  expect(surge.code).toBe(ROLLOUT_EXIT.usage);
  expect(surge.err).toBe(
    "kubelet fleet rollout: --max-surge 1 needs the pod to run twice on a node, and default/web cannot: spec.containers[0].ports[0].hostPort 8080 is fixed; use --max-surge 0\n",
  );
  const plain = await rollout(ctx, { ...start("v2"), strategy: { ...strategy, maxSurge: "10%" } });
  expect({ code: plain.code, err: plain.err }).toEqual({ code: ROLLOUT_EXIT.complete, err: "" });
  const other = await rollout(ctx, { ...start("v2"), pod: "db" });
  expect(other.code).toBe(ROLLOUT_EXIT.failed);
  expect(other.err).toContain('holds pod "web", not "db"');
});

test("undo of a --max-surge rollout surges as it did: copies of the old pod beside, never a node without a Ready web; --max-surge 0 given replaces in place", async () => {
  const ctx = await placed(3);
  const surge = { ...strategy, maxUnavailable: "0", maxSurge: "1" };
  expect((await rollout(ctx, { ...start("v2"), strategy: surge })).code).toBe(ROLLOUT_EXIT.complete);
  ctx.fleet.resetMax();
  const undo = await rollout(ctx, { verb: "undo", pod: "web", namespace: "default", strategy, given: {} });
  expect({ code: undo.code, err: undo.err }).toEqual({ code: ROLLOUT_EXIT.complete, err: "" });
  const { state } = await readRollout(ctx.client, "default", "web");
  expect([state!.surge, state!.batches.length, state!.strategy.maxSurge]).toEqual([1, 3, "1"]);
  expect(ctx.fleet.maxWithoutReady).toBe(0);
  // Given on the command line, the undo's own flags win.
  ctx.fleet.resetMax();
  const given = { maxUnavailable: "1", maxSurge: "0" };
  const inPlace = await rollout(ctx, { verb: "undo", pod: "web", namespace: "default", strategy, given });
  expect(inPlace.code).toBe(ROLLOUT_EXIT.complete);
  expect((await readRollout(ctx.client, "default", "web")).state!.surge).toBeUndefined();
  expect(ctx.fleet.maxWithoutReady).toBe(1);
  const none = { maxUnavailable: "0" };
  const refused = await rollout(ctx, { verb: "undo", pod: "web", namespace: "default", strategy, given: none });
  expect(refused.code).toBe(ROLLOUT_EXIT.usage);
  expect(refused.err).toContain('--max-unavailable "0": Invalid value: may not be 0 when `maxSurge` is 0');
});
