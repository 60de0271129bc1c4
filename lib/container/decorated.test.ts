// Pull options pass whole through the decorators the composition root builds.
import { expect, test } from "bun:test";
import { noopMetrics } from "../metrics.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { decorateRuntime } from "./decorated.ts";
import type { PullOptions, PullProgress } from "./runtime.ts";

/** The runtime under both decorations (run's) and under node scoping alone (runonce's and plan's). */
const stacks = (fake: FakeRuntime) => [
  decorateRuntime(fake, { nodeName: "node-a", metrics: noopMetrics }),
  decorateRuntime(fake, { nodeName: "node-a" }),
];

test("pullImage's options reach the runtime as the very object the caller passed, progress flowing back", async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  fake.pullDelayMs = 2;
  fake.pullProgressEveryMs = 1;
  for (const runtime of stacks(fake)) {
    const heard: PullProgress[] = [];
    const options: PullOptions = {
      auth: { username: "u", password: "p" },
      signal: new AbortController().signal,
      onProgress: (progress) => heard.push(progress),
    };
    const pulled = runtime.pullImage("registry.example/app:1", options);
    await clock.advance(2);
    await pulled;
    expect(fake.calls.findLast((c) => c.method === "pullImage")?.args[1]).toBe(options);
    expect(heard.map((p) => p.bytes)).toEqual([1, 2]);
  }
});

test("whether the runtime reports pull progress shows through the decorators", () => {
  for (const reports of [true, false]) {
    const fake = new FakeRuntime();
    fake.reportsPullProgress = reports;
    for (const runtime of stacks(fake)) expect(runtime.reportsPullProgress).toBe(reports);
  }
});
