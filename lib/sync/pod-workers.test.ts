// The pod worker's states and passes, on a fake clock: transitions, one pass at a time, retries.
import { describe, expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { createPodWorker, nextState, type PodGoal, type PodWorkerState } from "./pod-workers.ts";

describe("nextState", () => {
  const table: Array<[PodWorkerState, PodGoal, PodWorkerState]> = [
    ["syncing", "run", "syncing"],
    ["syncing", "stop", "terminating"],
    ["syncing", "rest", "terminated"],
    ["terminating", "run", "terminating"],
    ["terminating", "stop", "terminating"],
    ["terminating", "rest", "terminating"],
    ["terminated", "run", "syncing"],
    ["terminated", "stop", "terminating"],
    ["terminated", "rest", "terminated"],
  ];
  for (const [state, goal, next] of table)
    test(`a ${state} pod whose goal is ${goal} is ${next} next`, () => expect(nextState(state, goal)).toBe(next));
});

/** A worker whose passes are recorded and whose steps resolve only when the test says. */
function harness(initialGoal: PodGoal = "run") {
  const clock = new FakeClock();
  let goal = initialGoal;
  const passes: string[] = [];
  const settled: PodWorkerState[] = [];
  const failures: string[] = [];
  const gates: Array<() => void> = [];
  const signals: AbortSignal[] = [];
  let fail: Error | undefined;
  const step = (name: string) => async (signal?: AbortSignal) => {
    passes.push(name);
    if (signal) signals.push(signal);
    await new Promise<void>((resolve) => gates.push(resolve));
    if (fail) throw fail;
  };
  const worker = createPodWorker(
    { clock, retryMs: 3000 },
    {
      goal: () => goal,
      sync: step("sync"),
      terminate: step("terminate"),
      settled: (state) => settled.push(state),
      failed: (error) => failures.push(error.message),
    },
  );
  const finish = async () => {
    gates.shift()?.();
    await clock.advance(0);
  };
  return {
    clock,
    worker,
    passes,
    signals,
    settled,
    failures,
    finish,
    setGoal: (g: PodGoal) => (goal = g),
    failWith: (e: Error | undefined) => (fail = e),
  };
}

describe("pod worker", () => {
  test("a new worker is syncing before its first pass", () => {
    expect(harness().worker.state).toBe("syncing");
  });

  test("runs one pass at a time: updates during a pass coalesce into one more pass", async () => {
    const h = harness();
    h.worker.update();
    h.worker.update();
    h.worker.update();
    await h.clock.advance(0);
    expect(h.passes).toEqual(["sync"]);
    expect(h.worker.busy).toBe(true);
    await h.finish();
    expect(h.passes).toEqual(["sync", "sync"]);
    await h.finish();
    expect(h.passes).toEqual(["sync", "sync"]);
    expect(h.worker.busy).toBe(false);
    expect(h.settled).toEqual(["syncing"]);
  });

  test("a pod whose goal becomes stop terminates once and ends terminated", async () => {
    const h = harness();
    h.worker.update();
    await h.finish();
    h.setGoal("stop");
    h.worker.update();
    await h.clock.advance(0);
    expect(h.worker.state).toBe("terminating");
    await h.finish();
    expect(h.passes).toEqual(["sync", "terminate"]);
    expect(h.worker.state).toBe("terminated");
    expect(h.settled).toEqual(["syncing", "terminated"]);
  });

  test("a pod wanted again while it terminates finishes terminating first, then syncs anew", async () => {
    const h = harness("stop");
    h.worker.update();
    await h.clock.advance(0);
    h.setGoal("run");
    h.worker.update();
    await h.clock.advance(0);
    expect(h.passes).toEqual(["terminate"]);
    await h.finish();
    expect(h.passes).toEqual(["terminate", "sync"]);
    expect(h.worker.state).toBe("syncing");
  });

  test("a sync in flight is cancelled when the pod is told to stop; the termination follows it", async () => {
    const h = harness();
    h.worker.update();
    await h.clock.advance(0);
    h.worker.update(); // another sync asked for: the one in flight goes on
    expect(h.signals[0]!.aborted).toBe(false);
    h.setGoal("stop");
    h.worker.update();
    expect(h.signals[0]!.aborted).toBe(true);
    await h.finish();
    expect(h.passes).toEqual(["sync", "terminate"]);
  });

  test("a finished pod rests: no pass runs anything, its state is terminated", async () => {
    const h = harness("rest");
    h.worker.update();
    await h.clock.advance(0);
    expect(h.passes).toEqual([]);
    expect(h.worker.state).toBe("terminated");
    expect(h.settled).toEqual(["terminated"]);
  });

  test("a failed pass is reported and retried after the retry wait; an update before then runs at once", async () => {
    const h = harness();
    h.failWith(new Error("runtime down"));
    h.worker.update();
    await h.finish();
    expect(h.failures).toEqual(["runtime down"]);
    h.failWith(undefined);
    await h.clock.advance(2999);
    expect(h.passes).toEqual(["sync"]);
    await h.clock.advance(1);
    expect(h.passes).toEqual(["sync", "sync"]);
    await h.finish();
    h.worker.retryAfter(10_000);
    h.worker.update();
    await h.finish();
    await h.clock.advance(10_000);
    expect(h.passes).toEqual(["sync", "sync", "sync"]);
  });

  test("a stopped worker starts no pass and keeps no timer, and stopping it again is harmless", async () => {
    const h = harness();
    h.worker.retryAfter(1000);
    h.worker.stop();
    h.worker.stop();
    h.worker.update();
    h.worker.retryAfter(1000);
    expect(h.clock.pendingTimers).toBe(0);
    await h.clock.advance(2000);
    expect(h.passes).toEqual([]);
    expect(h.clock.pendingTimers).toBe(0);
  });
});
