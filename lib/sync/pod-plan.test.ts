// computePodActions over a table, in the manner of the Go kubelet's TestComputePodActions: each row
// is a pod, its containers as observed, back-off state and the time; the expected plan is spelled out.
import { describe, expect, test } from "bun:test";
import type { Pod, V1PodSpec } from "../api/types.ts";
import type { BackoffEntry } from "../node/backoff.ts";
import { POD_INFRA_CONTAINER_NAME } from "../container/runtime.ts";
import { observedPod, type Instance } from "../testing/containers.ts";
import { testPod } from "../testing/pods.ts";
import { computePodActions, type PodActions } from "./pod-plan.ts";

const NOW = Date.parse("2026-01-01T00:10:00Z");
const NETWORK = "none";
const app = { name: "app", image: "local/busybox:stable", command: ["sleep", "3600"] };
const side = { name: "side", image: "local/busybox:stable" };
const one = { name: "one", image: "local/busybox:stable" };
const two = { name: "two", image: "local/busybox:stable" };

const pod = (spec: Partial<V1PodSpec> = {}) => testPod("web", { containers: [app], ...spec });

/** The plan as short strings, so a row states the whole expected plan. */
function summary(plan: PodActions) {
  const start = (s: {
    spec: { name: string };
    attempt: number;
    init: boolean;
    resetBackoff: boolean;
    restart: boolean;
  }) =>
    `${s.spec.name}#${s.attempt}${s.init ? " init" : ""}${s.resetBackoff ? " reset" : ""}${s.restart ? " restart" : ""}`;
  return {
    killPod: plan.killPod,
    grace: plan.graceSeconds,
    createSandbox: plan.createSandbox ? `#${plan.createSandbox.attempt} ${plan.createSandbox.reason}` : undefined,
    sandbox: plan.sandbox?.id,
    stopSandboxes: plan.sandboxesToStop.map((c) => c.id),
    kill: plan.containersToKill.map((k) => `${k.container.id} ${k.reason}: ${k.message}`),
    remove: [...plan.sandboxesToRemove, ...plan.containersToRemove],
    init: plan.nextInitContainer && start(plan.nextInitContainer),
    start: plan.containersToStart.map(start),
    keep: plan.containersToKeep.map((k) => k.container.id),
    backOff: plan.backingOff.map((b) => `${b.name}${b.init ? " (init)" : ""} ${b.waitMs}ms: ${b.message}`),
    podFailed: plan.podFailed,
  };
}

type Summary = ReturnType<typeof summary>;
const NOTHING: Summary = {
  killPod: false,
  grace: 30,
  createSandbox: undefined,
  sandbox: "POD-0",
  stopSandboxes: [],
  kill: [],
  remove: [],
  init: undefined,
  start: [],
  keep: [],
  backOff: [],
  podFailed: false,
};

interface Row {
  name: string;
  pod?: Pod;
  /** Omit for a pod no source wants and whose spec the kubelet never had (adopted after a restart). */
  deleted?: boolean;
  instances: Instance[];
  liveness?: string[];
  /** Back-off entries of `<container>`: delay and how long ago the last failure was. */
  backoff?: Record<string, { delayMs: number; agoMs: number }>;
  want: Partial<Summary>;
}

const initPod = (restartPolicy: "Always" | "OnFailure" | "Never" = "Always") =>
  pod({ restartPolicy, initContainers: [one, two] });
const policyPod = (restartPolicy: "Always" | "OnFailure" | "Never") => pod({ restartPolicy });
const ok = (name: string, extra: Partial<Instance> = {}): Instance => ({ name, ...extra });
const dead = (name: string, exitCode: number, extra: Partial<Instance> = {}): Instance => ({
  name,
  running: false,
  exitCode,
  ...extra,
});
const SANDBOX = ok(POD_INFRA_CONTAINER_NAME);

const rows: Row[] = [
  {
    name: "a fresh pod gets a sandbox and all its app containers",
    pod: pod({ containers: [app, side] }),
    instances: [],
    want: { killPod: true, sandbox: undefined, createSandbox: "#0 no sandbox", start: ["app#0", "side#0"] },
  },
  {
    name: "a fresh pod with init containers gets a sandbox and its first init container only",
    pod: initPod(),
    instances: [],
    want: { killPod: true, sandbox: undefined, createSandbox: "#0 no sandbox", init: "one#0 init" },
  },
  {
    name: "a running pod that matches its spec is left alone",
    pod: pod({ containers: [app, side] }),
    instances: [SANDBOX, ok("app"), ok("side")],
    want: { keep: ["app-0", "side-0"] },
  },
  {
    name: "a dead sandbox takes the pod down and comes back with the next attempt",
    pod: pod(),
    instances: [dead(POD_INFRA_CONTAINER_NAME, 0), ok("app")],
    want: {
      killPod: true,
      sandbox: undefined,
      createSandbox: "#1 not ready",
      kill: ["app-0 SandboxChanged: Stopping container app"],
      remove: ["POD-0", "app-0"],
      start: ["app#0"],
    },
  },
  {
    name: "a sandbox whose pod-level spec changed (hostNetwork) is stopped and replaced",
    pod: pod({ hostNetwork: true }),
    instances: [{ ...SANDBOX, hash: "old" }, ok("app")],
    want: {
      killPod: true,
      sandbox: undefined,
      createSandbox: "#1 changed",
      kill: ["app-0 SandboxChanged: Stopping container app"],
      stopSandboxes: ["POD-0"],
      remove: ["POD-0", "app-0"],
      start: ["app#0"],
    },
  },
  {
    name: "the sandbox attempt follows the highest earlier attempt",
    pod: pod(),
    // Listed lowest attempt first (as a runtime may list them): the plan must not take the first one listed.
    instances: [
      dead(POD_INFRA_CONTAINER_NAME, 0, { attempt: 1 }),
      dead(POD_INFRA_CONTAINER_NAME, 0, { attempt: 3 }),
      dead(POD_INFRA_CONTAINER_NAME, 0, { attempt: 2 }),
    ],
    want: {
      killPod: true,
      sandbox: undefined,
      createSandbox: "#4 not ready",
      remove: ["POD-1", "POD-3", "POD-2"],
      start: ["app#0"],
    },
  },
  {
    name: "app containers left without a sandbox are removed with it, dead or alive",
    pod: pod(),
    instances: [dead("app", 1, { attempt: 2 })],
    want: { killPod: true, sandbox: undefined, createSandbox: "#0 no sandbox", remove: ["app-2"], start: ["app#0"] },
  },
  {
    name: "a running container whose spec changed is replaced, its back-off forgotten",
    pod: pod(),
    instances: [SANDBOX, ok("app", { hash: "old" })],
    want: {
      kill: ["app-0 SpecChanged: Container app definition changed, will be restarted"],
      start: ["app#1 reset"],
    },
  },
  {
    name: "a dead container whose spec changed starts again even under restartPolicy Never",
    pod: policyPod("Never"),
    instances: [SANDBOX, dead("app", 0, { hash: "old" })],
    backoff: { app: { delayMs: 40_000, agoMs: 1000 } },
    want: { start: ["app#1 reset restart"] },
  },
  ...(
    [
      ["Always", 0, true],
      ["Always", 1, true],
      ["OnFailure", 0, false],
      ["OnFailure", 1, true],
      ["OnFailure", 137, true],
      ["Never", 0, false],
      ["Never", 1, false],
    ] as const
  ).map(
    ([policy, code, restarts]): Row => ({
      name: `restartPolicy ${policy}, exit code ${code}: ${restarts ? "restarted" : "left dead"}`,
      pod: policyPod(policy),
      instances: [SANDBOX, dead("app", code)],
      want: { start: restarts ? ["app#1 restart"] : [] },
    }),
  ),
  {
    name: "a crashed container waits out its back-off, with the Go kubelet's message",
    pod: pod(),
    instances: [SANDBOX, dead("app", 1, { attempt: 2 })],
    backoff: { app: { delayMs: 20_000, agoMs: 5000 } },
    want: {
      backOff: [`app 15000ms: back-off 20s restarting failed container=app pod=web_default(${pod().metadata.uid})`],
    },
  },
  {
    name: "a crashed container restarts once its back-off has expired",
    pod: pod(),
    instances: [SANDBOX, dead("app", 1, { attempt: 2 })],
    backoff: { app: { delayMs: 20_000, agoMs: 20_000 } },
    want: { start: ["app#3 restart"] },
  },
  {
    name: "a container that ran ten minutes before dying starts its back-off afresh",
    pod: pod(),
    instances: [SANDBOX, dead("app", 1, { attempt: 5, ranMs: 600_000 })],
    backoff: { app: { delayMs: 160_000, agoMs: 1000 } },
    want: { start: ["app#6 reset restart"] },
  },
  {
    name: "a container that failed its liveness probe is killed and restarted under Always",
    pod: pod(),
    instances: [SANDBOX, ok("app")],
    liveness: ["app-0"],
    want: {
      kill: ["app-0 LivenessProbe: Container app failed liveness probe, will be restarted"],
      start: ["app#1"],
    },
  },
  {
    name: "a container that failed its liveness probe is killed and not restarted under Never",
    pod: policyPod("Never"),
    instances: [SANDBOX, ok("app")],
    liveness: ["app-0"],
    want: { kill: ["app-0 LivenessProbe: Container app failed liveness probe"] },
  },
  {
    name: "a running init container is waited for: nothing else starts",
    pod: initPod(),
    instances: [SANDBOX, ok("one", { init: true })],
    want: {},
  },
  {
    name: "a completed init container hands over to the next",
    pod: initPod(),
    instances: [SANDBOX, dead("one", 0, { init: true })],
    want: { init: "two#0 init" },
  },
  {
    name: "a failed init container is retried under OnFailure",
    pod: initPod("OnFailure"),
    instances: [SANDBOX, dead("one", 2, { init: true })],
    want: { init: "one#1 init restart" },
  },
  {
    name: "a failed init container is retried under Always (init containers restart OnFailure)",
    pod: initPod("Always"),
    instances: [SANDBOX, dead("one", 0, { init: true }), dead("two", 1, { init: true, attempt: 1 })],
    want: { init: "two#2 init restart" },
  },
  {
    name: "a failed init container fails the pod under Never",
    pod: initPod("Never"),
    instances: [SANDBOX, dead("one", 1, { init: true })],
    want: { podFailed: true },
  },
  {
    name: "a failed init container waits out its back-off",
    pod: initPod(),
    instances: [SANDBOX, dead("one", 1, { init: true, attempt: 1 })],
    backoff: { one: { delayMs: 10_000, agoMs: 4000 } },
    want: {
      backOff: [
        `one (init) 6000ms: back-off 10s restarting failed container=one pod=web_default(${pod().metadata.uid})`,
      ],
    },
  },
  {
    name: "once every init container has completed, the app containers start",
    pod: initPod(),
    instances: [SANDBOX, dead("one", 0, { init: true }), dead("two", 0, { init: true })],
    want: { start: ["app#0"] },
  },
  {
    name: "init containers do not run again once app containers ran in this sandbox",
    pod: initPod(),
    instances: [SANDBOX, ok("app")],
    want: { keep: ["app-0"] },
  },
  {
    name: "containers the spec no longer names are stopped and removed; dead ones just removed",
    pod: pod(),
    instances: [SANDBOX, ok("app"), ok("old"), dead("older", 0)],
    want: {
      kill: ["old-0 NotInSpec: Container old is not in the pod spec"],
      remove: ["old-0", "older-0"],
      keep: ["app-0"],
    },
  },
  {
    name: "each app container is planned on its own: one kept, one restarted, one backing off",
    pod: pod({ containers: [app, side, { name: "third", image: "local/busybox:stable" }] }),
    instances: [SANDBOX, ok("app"), dead("side", 0), dead("third", 1)],
    backoff: { third: { delayMs: 10_000, agoMs: 0 } },
    want: {
      keep: ["app-0"],
      start: ["side#1 restart"],
      backOff: [`third 10000ms: back-off 10s restarting failed container=third pod=web_default(${pod().metadata.uid})`],
    },
  },
  {
    name: "a deleted pod is killed with its grace period: containers, then the sandbox, then removal",
    pod: pod({ terminationGracePeriodSeconds: 5 }),
    deleted: true,
    instances: [SANDBOX, ok("app"), dead("app", 1, { attempt: 1 })],
    want: {
      killPod: true,
      grace: 5,
      sandbox: undefined,
      kill: ["app-0 PodDeleted: Stopping container app"],
      stopSandboxes: ["POD-0"],
      remove: ["POD-0", "app-0", "app-1"],
    },
  },
  {
    name: "a deleted pod whose spec the kubelet never had takes its grace period from the labels",
    deleted: true,
    instances: [SANDBOX, ok("app")],
    want: {
      killPod: true,
      grace: 20,
      sandbox: undefined,
      kill: ["app-0 PodDeleted: Stopping container app"],
      stopSandboxes: ["POD-0"],
      remove: ["POD-0", "app-0"],
    },
  },
  {
    name: "a stale sandbox still running beside a dead one: the sandbox changed",
    pod: pod({ hostNetwork: true }),
    instances: [
      { ...SANDBOX, hash: "old", attempt: 1 },
      { ...dead(POD_INFRA_CONTAINER_NAME, 0), hash: "old" },
    ],
    want: {
      killPod: true,
      sandbox: undefined,
      createSandbox: "#2 changed",
      stopSandboxes: ["POD-1"],
      remove: ["POD-1", "POD-0"],
      start: ["app#0"],
    },
  },
  {
    name: "once one app container ran, init containers stay done and the other app containers start",
    pod: pod({ initContainers: [one], containers: [app, side] }),
    instances: [SANDBOX, ok("app")],
    want: { keep: ["app-0"], start: ["side#0"] },
  },
  {
    name: "a pod neither wanted nor on the runtime, its spec unknown, needs nothing",
    deleted: true,
    instances: [],
    want: { sandbox: undefined },
  },
  {
    name: "a deleted pod with nothing left on the runtime needs nothing",
    pod: pod(),
    deleted: true,
    instances: [],
    want: { sandbox: undefined },
  },
];

describe("computePodActions (the Go kubelet's TestComputePodActions table)", () => {
  test("the table has at least 25 rows", () => expect(rows.length).toBeGreaterThanOrEqual(25));

  for (const row of rows) {
    test(row.name, () => {
      const of = row.pod ?? pod();
      const entries = new Map<string, BackoffEntry>(
        Object.entries(row.backoff ?? {}).map(([name, b]) => [
          `${of.metadata.uid}/${name}`,
          { delayMs: b.delayMs, at: NOW - b.agoMs },
        ]),
      );
      const plan = computePodActions({
        pod: row.pod,
        deleted: row.deleted,
        observed: observedPod(of, row.instances, { now: NOW, networkMode: NETWORK }),
        networkMode: NETWORK,
        livenessFailed: new Set(row.liveness ?? []),
        backoff: entries,
        now: NOW,
      });
      expect(summary(plan)).toStrictEqual({ ...NOTHING, ...row.want });
    });
  }

  test("the plan is a function of its input: the same input twice gives equal plans", () => {
    const of = pod();
    const input = {
      pod: of,
      observed: observedPod(of, [SANDBOX, dead("app", 1)], { now: NOW, networkMode: NETWORK }),
      networkMode: NETWORK,
      livenessFailed: new Set<string>(),
      backoff: new Map<string, BackoffEntry>(),
      now: NOW,
    };
    expect(computePodActions(input)).toEqual(computePodActions(input));
  });
});
