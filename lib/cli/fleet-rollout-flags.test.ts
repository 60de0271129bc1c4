// `fleet rollout` command lines: each verb's request, the defaults, and a usage error naming the flag.
import { expect, test } from "bun:test";
import { ROLLOUT_EXIT, rolloutRequest } from "./fleet-rollout-flags.ts";

const usage = (message: string) => Object.assign(new Error(message), { code: "Usage" });
const request = (names: string[], options: Record<string, unknown> = {}) => rolloutRequest(names, options, usage);
const failure = (names: string[], options: Record<string, unknown> = {}) => {
  try {
    request(names, options);
  } catch (error) {
    return (error as Error).message;
  }
  return "no error";
};

test("POD -f FILE starts a rollout with Kubernetes' defaults: 25 % unavailable, no surge, 600 s deadline, rollback", () => {
  expect(request(["web"], { filename: "web.yaml" })).toEqual({
    verb: "start",
    pod: "web",
    namespace: "default",
    file: "web.yaml",
    changeCause: undefined,
    allowPrivileged: false,
    strategy: {
      maxUnavailable: "25%",
      maxSurge: "0",
      minReadySeconds: 0,
      progressDeadlineSeconds: 600,
      onFailure: "rollback",
      revisionHistoryLimit: 10,
    },
  });
  expect(
    request([], { filename: "web.yaml", maxUnavailable: "10%", onFailure: "pause", progressDeadline: "30s" }),
  ).toMatchObject({
    pod: undefined,
    strategy: { maxUnavailable: "10%", onFailure: "pause", progressDeadlineSeconds: 30 },
  });
});

test("status, history, pause, resume and undo take one POD; undo takes --to-revision", () => {
  expect(request(["status", "web"], { namespace: "ops" })).toEqual({ verb: "status", pod: "web", namespace: "ops" });
  expect(request(["undo", "web"], { toRevision: "3" })).toMatchObject({ verb: "undo", pod: "web", toRevision: 3 });
  expect(request(["resume", "web"])).toEqual({ verb: "resume", pod: "web", namespace: "default" });
  // A pod named like a verb is rolled out with -f.
  expect(request(["status"], { filename: "status.yaml" })).toMatchObject({ verb: "start", pod: "status" });
});

test("a wrong command line says what is expected", () => {
  expect(failure(["web"])).toBe(
    "fleet rollout needs POD -f FILE, or one of status, history, undo, pause, resume and a POD",
  );
  expect(failure(["status"])).toBe("fleet rollout status needs one POD");
  expect(failure(["web"], { filename: "w.yaml", maxUnavailable: "ten" })).toBe(
    '--max-unavailable "ten": expected a number of nodes or a percentage (e.g. --max-unavailable 10%)',
  );
  expect(failure(["web"], { filename: "w.yaml", onFailure: "retry" })).toBe(
    '--on-failure "retry": expected rollback or pause',
  );
  expect(failure(["web"], { filename: "w.yaml", minReadySeconds: "-1" })).toContain('--min-ready-seconds "-1"');
  expect(failure(["undo", "web"], { toRevision: "0" })).toContain('--to-revision "0": expected a revision number');
});

test("--max-unavailable 0 with --max-surge 0 is refused in a Deployment's words; either alone is taken", () => {
  expect(failure(["web"], { filename: "w.yaml", maxUnavailable: "0" })).toBe(
    '--max-unavailable "0": Invalid value: may not be 0 when `maxSurge` is 0 (give --max-unavailable 1 or --max-surge 1)',
  );
  expect(failure(["web"], { filename: "w.yaml", maxUnavailable: "0%", maxSurge: "0%" })).toContain(
    "may not be 0 when `maxSurge` is 0",
  );
  expect(request(["web"], { filename: "w.yaml", maxUnavailable: "0", maxSurge: "1" })).toMatchObject({
    strategy: { maxUnavailable: "0", maxSurge: "1" },
  });
});

test("exit codes tell a script complete (0) from failed, rolled back, paused and undriven", () => {
  expect(ROLLOUT_EXIT).toEqual({ complete: 0, failed: 1, usage: 2, rolledBack: 3, paused: 4, undriven: 5 });
});

test("undo records which strategy flags were given: the rest are taken from the rollout it undoes", () => {
  expect(request(["undo", "web"])).toMatchObject({ verb: "undo", given: {} });
  expect(request(["undo", "web"], { maxSurge: "10%", progressDeadline: "30" })).toMatchObject({
    given: { maxSurge: "10%", progressDeadlineSeconds: 30 },
  });
});
