// A timed stop on a fake runtime and a fake clock: whether a container ignored SIGTERM.
import { describe, expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { ignoredSigtermMessage, stopContainerTimed } from "./timed-stop.ts";

/** A running container whose stop takes `takesMs` and ends with `exitCode`. */
function stopping(takesMs: number, exitCode: number) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const id = runtime.seed(
    { name: "c", image: "local/busybox:stable", labels: {} },
    { running: true, state: "CONTAINER_RUNNING" },
  );
  runtime.stopContainer = async () => {
    await clock.sleep(takesMs);
    runtime.exit(id, exitCode);
  };
  return { clock, runtime, id };
}

describe("stopContainerTimed", () => {
  test("a stop that took the whole grace period and ended in SIGKILL (137) ignored SIGTERM", async () => {
    const s = stopping(30_000, 137);
    const outcome = stopContainerTimed(s.runtime, s.clock, s.id, 30);
    await s.clock.advance(30_000);
    expect(await outcome).toEqual({ seconds: 30, ignoredSigterm: true });
  });

  test("a stop within a second of a grace period the runtime rounded still counts as the whole", async () => {
    const s = stopping(29_400, 137);
    const outcome = stopContainerTimed(s.runtime, s.clock, s.id, 29.6);
    await s.clock.advance(29_400);
    expect((await outcome).ignoredSigterm).toBe(true);
  });

  test("a quick stop, an exit on SIGTERM (143) and a stop with no grace period did not ignore SIGTERM", async () => {
    for (const [takesMs, exitCode, grace] of [
      [1_000, 137, 30],
      [30_000, 143, 30],
      [0, 137, 0],
    ] as const) {
      const s = stopping(takesMs, exitCode);
      const outcome = stopContainerTimed(s.runtime, s.clock, s.id, grace);
      await s.clock.advance(takesMs);
      expect((await outcome).ignoredSigterm).toBe(false);
    }
  });

  test("the message names the container and the grace period in whole seconds", () => {
    expect(ignoredSigtermMessage("nginx", 30)).toBe("container nginx ignored SIGTERM; killed after 30s");
  });
});
