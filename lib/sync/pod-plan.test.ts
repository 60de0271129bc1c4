// computePodActions over a table, in the manner of the Go kubelet's TestComputePodActions: each row
// is a pod, its containers as observed, back-off state and the time; the expected plan is spelled out.
import { describe, expect, test } from "bun:test";
import type { Pod, V1Container, V1PodSpec } from "../api/types.ts";
import type { BackoffEntry } from "../node/flowcontrol/backoff.ts";
import { POD_INFRA_CONTAINER_NAME, type ContainerDetails, type PodSandboxDetails } from "../container/runtime.ts";
import { observedPod, type Instance } from "../testing/containers.ts";
import { testPod } from "../testing/pods.ts";
import {
  computePodActions,
  noneObserved,
  nothingObserved,
  observedLabels,
  sandboxesNewestFirst,
  type PodActions,
} from "./pod-plan.ts";

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
    kill: plan.containersToKill.map(
      (k) => `${k.container.id}${k.sidecar ? " (sidecar)" : ""} ${k.reason}: ${k.message}`,
    ),
    remove: [...plan.sandboxesToRemove, ...plan.containersToRemove],
    init: plan.initContainersToStart.map(start),
    start: plan.containersToStart.map(start),
    keep: plan.containersToKeep.map((k) => k.container.id),
    resize: plan.containersToResize.map((r) => `${r.container.id} ${r.resources.join("+")}`),
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
  init: [],
  start: [],
  keep: [],
  resize: [],
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
  /** Ids of running containers whose startup probe failed. */
  startupFailed?: string[];
  /** Ids of running containers whose startup probe passed. */
  started?: string[];
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
const proxy = { name: "proxy", image: "local/busybox:stable", restartPolicy: "Always" };
const probedProxy = { ...proxy, startupProbe: { exec: { command: ["true"] } } };
const logs = { name: "logs", image: "local/busybox:stable", restartPolicy: "Always" };
/** A pod with a sidecar (proxy) before a regular init container (two), or the init containers given. */
const sidecarPod = (
  restartPolicy: "Always" | "OnFailure" | "Never" = "Always",
  initContainers: V1PodSpec["initContainers"] = [proxy, two],
) => pod({ restartPolicy, initContainers });
const UID = pod().metadata.uid;
const limited = (cpu: string, memory: string, extra: Record<string, unknown> = {}) => ({
  ...app,
  resources: { limits: { cpu, memory } },
  ...extra,
});
/** A container spec as the pod defaults it: what an earlier version of the manifest created. */
const createdAs = (container: V1Container) => pod({ containers: [container] }).spec.containers[0]!;
const restartOnMemory = { resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }] };

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
    want: { killPod: true, sandbox: undefined, createSandbox: "#0 no sandbox", init: ["one#0 init"] },
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
    name: "a container that failed its startup probe is killed and restarted, in the Go kubelet's words",
    pod: pod(),
    instances: [SANDBOX, ok("app")],
    startupFailed: ["app-0"],
    want: {
      kill: ["app-0 StartupProbe: Container app failed startup probe, will be restarted"],
      start: ["app#1"],
    },
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
    want: { init: ["two#0 init"] },
  },
  {
    name: "a failed init container is retried under OnFailure",
    pod: initPod("OnFailure"),
    instances: [SANDBOX, dead("one", 2, { init: true })],
    want: { init: ["one#1 init restart"] },
  },
  {
    name: "a failed init container is retried under Always (init containers restart OnFailure)",
    pod: initPod("Always"),
    instances: [SANDBOX, dead("one", 0, { init: true }), dead("two", 1, { init: true, attempt: 1 })],
    want: { init: ["two#2 init restart"] },
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
  {
    name: "sidecar not started: a fresh pod starts it first, and nothing after it",
    pod: sidecarPod(),
    instances: [SANDBOX],
    want: { init: ["proxy#0 init"] },
  },
  {
    name: "sidecar running (no startup probe): it is kept and the next init container starts beside it",
    pod: sidecarPod(),
    instances: [SANDBOX, ok("proxy", { init: true })],
    want: { keep: ["proxy-0"], init: ["two#0 init"] },
  },
  {
    name: "sidecar started but not probed: the next init container waits for its startup probe",
    pod: sidecarPod("Always", [probedProxy, two]),
    instances: [SANDBOX, ok("proxy", { init: true })],
    want: { keep: ["proxy-0"] },
  },
  {
    name: "sidecar whose startup probe passed: the next init container starts",
    pod: sidecarPod("Always", [probedProxy, two]),
    instances: [SANDBOX, ok("proxy", { init: true })],
    started: ["proxy-0"],
    want: { keep: ["proxy-0"], init: ["two#0 init"] },
  },
  {
    name: "sidecar running and regular init containers done: the app containers start beside it",
    pod: sidecarPod(),
    instances: [SANDBOX, ok("proxy", { init: true }), dead("two", 0, { init: true })],
    want: { keep: ["proxy-0"], start: ["app#0"] },
  },
  // A sidecar that exited restarts whatever the pod's restartPolicy and exit code.
  ...(
    [
      ["before the pod was initialized: it restarts, and the next waits", "Always", [dead("proxy", 0, { init: true })]],
      [
        "beside the app: restarted even under restartPolicy Never, the app kept",
        "Never",
        [dead("proxy", 137, { init: true }), dead("two", 0, { init: true }), ok("app")],
      ],
    ] as const
  ).map(
    ([what, policy, instances]): Row => ({
      name: `sidecar exited ${what}`,
      pod: sidecarPod(policy),
      instances: [SANDBOX, ...instances],
      want: { init: ["proxy#1 init restart"], ...(policy === "Never" ? { keep: ["app-0"] } : {}) },
    }),
  ),
  {
    name: "sidecar exited beside the app waits out its back-off",
    pod: sidecarPod(),
    instances: [SANDBOX, dead("proxy", 1, { init: true, attempt: 2 }), ok("app")],
    backoff: { proxy: { delayMs: 20_000, agoMs: 5000 } },
    want: {
      keep: ["app-0"],
      backOff: [`proxy (init) 15000ms: back-off 20s restarting failed container=proxy pod=web_default(${UID})`],
    },
  },
  {
    name: "sidecar that failed its liveness probe is killed and restarted",
    pod: sidecarPod(),
    instances: [SANDBOX, ok("proxy", { init: true }), ok("app")],
    liveness: ["proxy-0"],
    want: {
      kill: ["proxy-0 (sidecar) LivenessProbe: Init container proxy failed liveness probe"],
      init: ["proxy#1 init restart"],
      keep: ["app-0"],
    },
  },
  {
    name: "sidecar that failed its startup probe is killed and restarted (Init container … failed startup probe)",
    pod: sidecarPod(),
    instances: [SANDBOX, ok("proxy", { init: true }), ok("app")],
    startupFailed: ["proxy-0"],
    want: {
      kill: ["proxy-0 (sidecar) StartupProbe: Init container proxy failed startup probe"],
      init: ["proxy#1 init restart"],
      keep: ["app-0"],
    },
  },
  {
    name: "sidecar whose spec changed is replaced, its back-off forgotten",
    pod: sidecarPod(),
    instances: [SANDBOX, ok("proxy", { init: true, hash: "old" }), ok("app")],
    want: {
      kill: ["proxy-0 (sidecar) SpecChanged: Init container proxy definition changed"],
      init: ["proxy#1 init reset"],
      keep: ["app-0"],
    },
  },
  {
    name: "job done with sidecars running: they are stopped last one first, and none restarts",
    pod: sidecarPod("Never", [proxy, logs, two]),
    instances: [
      SANDBOX,
      ok("proxy", { init: true }),
      dead("logs", 1, { init: true }),
      ok("logs", { init: true, attempt: 1 }),
      dead("two", 0, { init: true }),
      dead("app", 0),
    ],
    want: {
      kill: [
        "logs-1 (sidecar) PodCompleted: Stopping container logs",
        "proxy-0 (sidecar) PodCompleted: Stopping container proxy",
      ],
    },
  },
  {
    name: "job done with a sidecar dead: the sidecar is not restarted",
    pod: sidecarPod("OnFailure"),
    instances: [SANDBOX, dead("proxy", 143, { init: true }), dead("two", 0, { init: true }), dead("app", 0)],
    want: {},
  },
  {
    name: "a failing app under OnFailure keeps its sidecar while it backs off",
    pod: sidecarPod("OnFailure"),
    instances: [SANDBOX, ok("proxy", { init: true }), dead("two", 0, { init: true }), dead("app", 1)],
    backoff: { app: { delayMs: 10_000, agoMs: 0 } },
    want: {
      keep: ["proxy-0"],
      backOff: [`app 10000ms: back-off 10s restarting failed container=app pod=web_default(${UID})`],
    },
  },
  // Deleted: the app stops first, then the sidecars one at a time, last one first (by spec, or by creation).
  ...(
    [
      ["the app stops first, then the sidecars, last one first", true, ["proxy", "app", "logs"]],
      [
        "without the spec: the app first, then the init containers, last created first",
        false,
        ["proxy", "logs", "app"],
      ],
    ] as const
  ).map(
    ([what, withSpec, order]): Row => ({
      name: `deletion order ${what}`,
      ...(withSpec ? { pod: sidecarPod("Always", [proxy, logs]) } : {}),
      deleted: true,
      instances: [SANDBOX, ...order.map((name) => ok(name, { init: name !== "app" }))],
      want: {
        killPod: true,
        ...(withSpec ? {} : { grace: 20 }),
        sandbox: undefined,
        kill: [
          "app-0 PodDeleted: Stopping container app",
          "logs-0 (sidecar) PodDeleted: Stopping container logs",
          "proxy-0 (sidecar) PodDeleted: Stopping container proxy",
        ],
        stopSandboxes: ["POD-0"],
        remove: ["POD-0", ...order.map((name) => `${name}-0`)],
      },
    }),
  ),
  {
    name: "resize: a cpu and memory limit edit (resizePolicy NotRequired) is applied to the running container",
    pod: pod({ containers: [limited("500m", "64Mi")] }),
    instances: [SANDBOX, ok("app", { createdFrom: createdAs(limited("200m", "32Mi")) })],
    want: { keep: ["app-0"], resize: ["app-0 cpu+memory"] },
  },
  {
    name: "resize: a memory edit under resizePolicy RestartContainer restarts the container",
    pod: pod({ containers: [limited("200m", "64Mi", restartOnMemory)] }),
    instances: [SANDBOX, ok("app", { createdFrom: createdAs(limited("200m", "32Mi", restartOnMemory)) })],
    want: {
      kill: ["app-0 SpecChanged: Container app resize requires restart"],
      start: ["app#1 reset"],
    },
  },
  {
    name: "resize: a cpu edit is applied in place though memory would need a restart (the policy is per resource)",
    pod: pod({ containers: [limited("500m", "32Mi", restartOnMemory)] }),
    instances: [SANDBOX, ok("app", { createdFrom: createdAs(limited("200m", "32Mi", restartOnMemory)) })],
    want: { keep: ["app-0"], resize: ["app-0 cpu"] },
  },
  {
    name: "resize: a container already resized (its labels older than its resources) is left alone",
    pod: pod({ containers: [limited("500m", "64Mi")] }),
    instances: [
      SANDBOX,
      ok("app", {
        createdFrom: createdAs(limited("200m", "32Mi")),
        resources: { cpu_period: 100_000, cpu_quota: 50_000, cpu_shares: 512, memory_limit_in_bytes: 64 * 2 ** 20 },
      }),
    ],
    want: { keep: ["app-0"] },
  },
  {
    name: "resize: resources edited back to what the container was created with are applied again",
    pod: pod({ containers: [limited("200m", "32Mi")] }),
    instances: [
      SANDBOX,
      ok("app", {
        resources: { cpu_period: 100_000, cpu_quota: 50_000, cpu_shares: 512, memory_limit_in_bytes: 64 * 2 ** 20 },
      }),
    ],
    want: { keep: ["app-0"], resize: ["app-0 cpu+memory"] },
  },
  {
    name: "resize: a sidecar's resources-only edit resizes it in place beside the app",
    pod: sidecarPod("Always", [{ ...proxy, resources: { limits: { cpu: "500m", memory: "64Mi" } } }]),
    instances: [
      SANDBOX,
      ok("proxy", {
        init: true,
        createdFrom: sidecarPod("Always", [{ ...proxy, resources: { limits: { cpu: "200m", memory: "64Mi" } } }]).spec
          .initContainers![0],
      }),
      ok("app"),
    ],
    want: { keep: ["proxy-0", "app-0"], resize: ["proxy-0 cpu"] },
  },
  {
    name: "resize: an edit of resources and another field replaces the container",
    pod: pod({ containers: [limited("500m", "64Mi", { command: ["sleep", "60"] })] }),
    instances: [SANDBOX, ok("app", { createdFrom: createdAs(limited("200m", "32Mi")) })],
    want: {
      kill: ["app-0 SpecChanged: Container app definition changed, will be restarted"],
      start: ["app#1 reset"],
    },
  },
  {
    name: "resize: a removed limit restarts the container (no runtime lifts a limit in place)",
    pod: pod({ containers: [{ ...app, resources: { limits: { cpu: "200m" } } }] }),
    instances: [SANDBOX, ok("app", { createdFrom: createdAs(limited("200m", "32Mi")) })],
    want: {
      kill: ["app-0 SpecChanged: Container app resize requires restart"],
      start: ["app#1 reset"],
    },
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
        livenessFailed: new Map([
          ...(row.liveness ?? []).map((id) => [id, "liveness"] as const),
          ...(row.startupFailed ?? []).map((id) => [id, "startup"] as const),
        ]),
        startupPassed: (id) => (row.started ?? []).includes(id),
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
      livenessFailed: new Map(),
      backoff: new Map<string, BackoffEntry>(),
      now: NOW,
    };
    expect(computePodActions(input)).toEqual(computePodActions(input));
  });
});

describe("what the runtime shows of a pod", () => {
  const sandbox = (id: string, attempt: number, createdAt: number) =>
    ({
      id,
      metadata: { name: "web", namespace: "default", uid: "u", attempt },
      createdAt,
      labels: { from: id },
    }) as unknown as PodSandboxDetails;
  const container = { labels: { from: "container" } } as unknown as ContainerDetails;

  test("nothing is left of a pod only when the runtime shows neither a sandbox nor a container", () => {
    expect(nothingObserved(noneObserved())).toBe(true);
    expect(nothingObserved({ sandboxes: [sandbox("s", 0, 0)], containers: [] })).toBe(false);
    expect(nothingObserved({ sandboxes: [], containers: [container] })).toBe(false);
  });

  test("a pod's labels are read from its sandbox, else from a container, else there are none", () => {
    expect(observedLabels({ sandboxes: [sandbox("s", 0, 0)], containers: [container] })).toEqual({ from: "s" });
    expect(observedLabels({ sandboxes: [], containers: [container] })).toEqual({ from: "container" });
    expect(observedLabels(noneObserved())).toBeUndefined();
  });

  test("sandboxes are ordered newest attempt first, then newest created first", () => {
    const order = sandboxesNewestFirst([sandbox("a", 0, 5), sandbox("b", 1, 1), sandbox("c", 0, 9)]).map((s) => s.id);
    expect(order).toEqual(["b", "c", "a"]);
  });
});
