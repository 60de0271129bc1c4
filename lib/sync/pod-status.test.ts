// computePodStatus: phases by restart policy, conditions and their transition times, container
// statuses in the Kubernetes shape, QoS class — from observed containers built for each case.
import { describe, expect, test } from "bun:test";
import type { Pod, V1PodSpec, V1PodStatus } from "../api/types.ts";
import { type ContainerDetails, POD_INFRA_CONTAINER_NAME } from "../container/runtime.ts";
import { observedPod, type Instance } from "../testing/containers.ts";
import { testPod } from "../testing/pods.ts";
import { computePodStatus, instancesOf, shouldRestart, type Waiting } from "./pod-status.ts";

const NOW = Date.parse("2026-01-01T00:10:00Z");
const FIRST_SEEN = Date.parse("2026-01-01T00:00:00Z");
const app = { name: "app", image: "local/busybox:stable" };
const side = { name: "side", image: "local/busybox:stable" };
const SANDBOX: Instance = { name: POD_INFRA_CONTAINER_NAME };

function statusOf(
  pod: Pod,
  instances: Instance[],
  options: {
    waiting?: Record<string, Waiting>;
    ready?: string[];
    started?: string[];
    previous?: V1PodStatus;
    now?: number;
    podIP?: string;
    /** What the runtime reports beyond the instances (e.g. a CRI runtime's name). */
    observed?: (c: ContainerDetails) => ContainerDetails;
  } = {},
) {
  const { sandboxes, containers } = observedPod(pod, instances, { now: NOW });
  return computePodStatus({
    pod,
    sandboxes,
    containers: options.observed ? containers.map(options.observed) : containers,
    waiting: new Map(Object.entries(options.waiting ?? {})),
    isReady: (id) => (options.ready ?? []).includes(id),
    isStarted: (id) => (options.started ?? []).includes(id),
    hostIP: "10.0.0.1",
    podIP: options.podIP ?? "",
    firstSeen: FIRST_SEEN,
    previous: options.previous,
    now: options.now ?? NOW,
  });
}

const pod = (spec: Partial<V1PodSpec> = {}) => testPod("web", { containers: [app], ...spec });
const dead = (name: string, exitCode: number, extra: Partial<Instance> = {}): Instance => ({
  name,
  running: false,
  exitCode,
  ...extra,
});
const condition = (status: V1PodStatus, type: string) => status.conditions?.find((c) => c.type === type);

describe("pod phase", () => {
  const rows: Array<[string, Partial<V1PodSpec>, Instance[], string, Record<string, Waiting>?]> = [
    ["nothing created yet", {}, [], "Pending"],
    ["a running container", {}, [SANDBOX, { name: "app" }], "Running"],
    ["one running, one not yet created", { containers: [app, side] }, [SANDBOX, { name: "app" }], "Running"],
    ["one exited, one not yet created", { containers: [app, side] }, [SANDBOX, dead("app", 0)], "Pending"],
    ["Always, exited 0 (it will restart)", { restartPolicy: "Always" }, [SANDBOX, dead("app", 0)], "Running"],
    ["OnFailure, exited 0", { restartPolicy: "OnFailure" }, [SANDBOX, dead("app", 0)], "Succeeded"],
    ["OnFailure, exited 1 (it will restart)", { restartPolicy: "OnFailure" }, [SANDBOX, dead("app", 1)], "Running"],
    [
      "Never, all exited 0",
      { restartPolicy: "Never", containers: [app, side] },
      [SANDBOX, dead("app", 0), dead("side", 0)],
      "Succeeded",
    ],
    [
      "Never, one exited 1",
      { restartPolicy: "Never", containers: [app, side] },
      [SANDBOX, dead("app", 0), dead("side", 1)],
      "Failed",
    ],
    [
      "a crash-looping container waits, its last exit counts",
      { restartPolicy: "Never" },
      [SANDBOX, dead("app", 2)],
      "Failed",
      { app: { reason: "CrashLoopBackOff", message: "back-off" } },
    ],
    [
      "init container running",
      { initContainers: [{ name: "init", image: "x" }] },
      [SANDBOX, { name: "init", init: true }],
      "Pending",
    ],
    [
      "init container running under Never",
      { restartPolicy: "Never", initContainers: [{ name: "init", image: "x" }] },
      [SANDBOX, { name: "init", init: true }],
      "Pending",
    ],
    [
      "init container failed under Never",
      { restartPolicy: "Never", initContainers: [{ name: "init", image: "x" }] },
      [SANDBOX, dead("init", 1, { init: true })],
      "Failed",
    ],
    [
      "init container failed under OnFailure (it will retry)",
      { restartPolicy: "OnFailure", initContainers: [{ name: "init", image: "x" }] },
      [SANDBOX, dead("init", 1, { init: true })],
      "Pending",
    ],
    [
      "the second init container failed under Never, the third never ran",
      {
        restartPolicy: "Never",
        initContainers: [
          { name: "i1", image: "x" },
          { name: "i2", image: "x" },
          { name: "i3", image: "x" },
        ],
      },
      [SANDBOX, dead("i1", 0, { init: true }), dead("i2", 1, { init: true })],
      "Failed",
    ],
    [
      "init done, app running",
      { initContainers: [{ name: "init", image: "x" }] },
      [SANDBOX, dead("init", 0, { init: true }), { name: "app" }],
      "Running",
    ],
  ];
  for (const [name, spec, instances, phase, waiting] of rows)
    test(`${name}: ${phase}`, () => expect(statusOf(pod(spec), instances, { waiting }).phase).toBe(phase));
});

describe("container statuses", () => {
  test("a container not created yet waits in ContainerCreating (PodInitializing beside init containers), or in the sync's reason", () => {
    const [creating] = statusOf(pod(), []).containerStatuses!;
    expect(creating).toEqual({
      name: "app",
      image: "local/busybox:stable",
      imageID: "",
      restartCount: 0,
      ready: false,
      started: false,
      state: { waiting: { reason: "ContainerCreating" } },
    });
    const withInit = statusOf(pod({ initContainers: [{ name: "init", image: "local/busybox:stable" }] }), []);
    expect([...withInit.initContainerStatuses!, ...withInit.containerStatuses!].map((s) => s.state)).toEqual([
      { waiting: { reason: "PodInitializing" } },
      { waiting: { reason: "PodInitializing" } },
    ]);
    const pulling = statusOf(pod(), [], { waiting: { app: { reason: "ErrImagePull", message: "no such image" } } });
    expect(pulling.containerStatuses![0]!.state).toEqual({
      waiting: { reason: "ErrImagePull", message: "no such image" },
    });
  });

  test("a container without an image reference or image id reports them empty", () => {
    const [noImage] = statusOf(pod({ containers: [{ name: "app" }] }), []).containerStatuses!;
    expect(noImage!.image).toBe("");
    const [running] = statusOf(pod(), [SANDBOX, { name: "app" }], {
      observed: (c) => ({ ...c, imageId: "" }),
    }).containerStatuses!;
    expect(running!.imageID).toBe("");
  });

  test("a running container reports its start, ids, and readiness and start from the probes", () => {
    const status = statusOf(pod({ containers: [app, side] }), [SANDBOX, { name: "app" }, { name: "side" }], {
      ready: ["app-0"],
      started: ["side-0"],
    });
    const [a, s] = status.containerStatuses!;
    expect(a).toMatchObject({
      containerID: "docker://app-0",
      imageID: "docker-pullable://sha256:1",
      state: { running: { startedAt: new Date(NOW - 60_000).toISOString() } },
      lastState: {},
      ready: true,
      started: false,
      restartCount: 0,
    });
    expect(s).toMatchObject({ ready: false, started: true });
  });

  test("on a CRI runtime, container IDs carry the runtime's name and the image ID is its image_ref", () => {
    const [c] = statusOf(pod({ restartPolicy: "Always" }), [SANDBOX, dead("app", 1), { name: "app", attempt: 1 }], {
      observed: (c) => ({ ...c, runtimeName: "containerd" }),
    }).containerStatuses!;
    // The runtime's image_ref as it is: no docker-pullable:// prefix.
    expect(c).toMatchObject({ containerID: "containerd://app-1", imageID: "sha256:1" });
    expect(c!.lastState!.terminated!.containerID).toBe("containerd://app-0");
  });

  test("a dead container is terminated with its exit code, reason, times and id", () => {
    const [c] = statusOf(pod({ restartPolicy: "Never" }), [SANDBOX, dead("app", 3, { attempt: 2 })]).containerStatuses!;
    expect(c!.restartCount).toBe(2);
    expect(c!.state).toEqual({
      terminated: {
        exitCode: 3,
        reason: "Error",
        startedAt: new Date(NOW - 6000).toISOString(),
        finishedAt: new Date(NOW - 5000).toISOString(),
        containerID: "docker://app-2",
      },
    });
  });

  for (const [instance, reason] of [
    [dead("app", 0), "Completed"],
    [dead("app", 137, { oomKilled: true }), "OOMKilled"],
    [dead("app", 127, { error: "exec: nope: not found" }), "ContainerCannotRun"],
  ] as const)
    test(`the terminated reason of ${JSON.stringify(instance)} is ${reason}`, () => {
      const [c] = statusOf(pod({ restartPolicy: "Never" }), [SANDBOX, instance]).containerStatuses!;
      expect(c!.state!.terminated!.reason).toBe(reason);
      expect(c!.state!.terminated!.message).toBe(instance.error);
    });

  test("a crash-looping container waits with the back-off and shows its last run as lastState", () => {
    const waiting = { app: { reason: "CrashLoopBackOff", message: "back-off 10s" } };
    const [c] = statusOf(pod(), [SANDBOX, dead("app", 1, { attempt: 1 })], { waiting }).containerStatuses!;
    expect(c!.state).toEqual({ waiting: waiting.app });
    expect(c!.lastState!.terminated).toMatchObject({ exitCode: 1, containerID: "docker://app-1" });
    expect(c!.ready).toBe(false);
  });

  test("a restarted container shows the previous instance as lastState; a running one ignores waiting reasons", () => {
    const [c] = statusOf(pod(), [SANDBOX, dead("app", 1, { attempt: 0 }), { name: "app", attempt: 1 }], {
      waiting: { app: { reason: "CrashLoopBackOff", message: "stale" } },
    }).containerStatuses!;
    expect(c!.state!.running).toBeDefined();
    expect(c!.lastState!.terminated).toMatchObject({ exitCode: 1, containerID: "docker://app-0" });
    expect(c!.restartCount).toBe(1);
  });

  test("init containers get their own statuses", () => {
    const status = statusOf(pod({ initContainers: [{ name: "init", image: "x" }] }), [
      SANDBOX,
      dead("init", 0, { init: true }),
    ]);
    expect(status.initContainerStatuses!.map((s) => [s.name, s.state?.terminated?.reason])).toEqual([
      ["init", "Completed"],
    ]);
    expect(statusOf(pod(), []).initContainerStatuses).toBeUndefined();
  });
});

describe("sidecars (restartable init containers)", () => {
  const proxy = { name: "proxy", image: "x", restartPolicy: "Always", startupProbe: { exec: { command: ["true"] } } };
  const job = (restartPolicy: "Never" | "OnFailure" = "Never") =>
    pod({ restartPolicy, initContainers: [proxy, { name: "init", image: "x" }] });
  const running = { name: "proxy", init: true };

  test("a sidecar's status is in initContainerStatuses with started and ready from its probes", () => {
    const before = statusOf(job(), [SANDBOX, running]).initContainerStatuses![0]!;
    expect([before.name, !!before.state?.running, before.started, before.ready]).toEqual(["proxy", true, false, false]);
    const after = statusOf(job(), [SANDBOX, running], { started: ["proxy-0"], ready: ["proxy-0"] })
      .initContainerStatuses![0]!;
    expect([after.started, after.ready]).toEqual([true, true]);
  });

  test("a regular init container is started while it runs and ready once it completed", () => {
    const inits = (instances: Instance[]) =>
      statusOf(job(), instances, { started: ["proxy-0"] }).initContainerStatuses!.map((s) => [s.started, s.ready]);
    expect(inits([SANDBOX, running, { name: "init", init: true }])[1]).toEqual([true, false]);
    expect(inits([SANDBOX, running, dead("init", 0, { init: true })])[1]).toEqual([false, true]);
  });

  test("Initialized waits for the sidecar's start as well as the regular init containers' completion", () => {
    const initialized = (instances: Instance[], started: string[]) =>
      condition(statusOf(job(), instances, { started }), "Initialized")!.status;
    expect(initialized([SANDBOX, running, dead("init", 0, { init: true })], [])).toBe("False");
    expect(initialized([SANDBOX, running, dead("init", 0, { init: true })], ["proxy-0"])).toBe("True");
    expect(initialized([SANDBOX, dead("proxy", 1, { init: true }), { name: "app" }], [])).toBe("True");
  });

  const phases: Array<[string, Instance[], string]> = [
    [
      "app done, sidecar still running (being stopped)",
      [SANDBOX, running, dead("init", 0, { init: true }), dead("app", 0)],
      "Running",
    ],
    [
      "app succeeded, sidecar stopped by a signal",
      [SANDBOX, dead("proxy", 143, { init: true }), dead("init", 0, { init: true }), dead("app", 0)],
      "Succeeded",
    ],
    [
      "app failed, sidecar stopped cleanly",
      [SANDBOX, dead("proxy", 0, { init: true }), dead("init", 0, { init: true }), dead("app", 1)],
      "Failed",
    ],
    [
      "sidecar exited while the app runs",
      [SANDBOX, dead("proxy", 1, { init: true }), dead("init", 0, { init: true }), { name: "app" }],
      "Running",
    ],
    ["sidecar running, regular init container not yet run", [SANDBOX, running], "Pending"],
  ];
  for (const [name, instances, phase] of phases)
    test(`a Job-style pod (restartPolicy Never) with a sidecar: ${name}: ${phase}`, () =>
      expect(statusOf(job(), instances, { started: ["proxy-0"] }).phase).toBe(phase));

  test("ContainersReady needs the sidecars ready too", () => {
    const ready = (ids: string[]) =>
      condition(
        statusOf(job(), [SANDBOX, running, dead("init", 0, { init: true }), { name: "app" }], {
          started: ["proxy-0", "app-0"],
          ready: ids,
        }),
        "ContainersReady",
      )!.status;
    expect(ready(["app-0"])).toBe("False");
    expect(ready(["app-0", "proxy-0"])).toBe("True");
  });
});

describe("pod conditions", () => {
  const twoInits = {
    initContainers: [
      { name: "i1", image: "x" },
      { name: "i2", image: "x" },
    ],
    containers: [app, side],
  };
  const initialized = (instances: Instance[]) => condition(statusOf(pod(twoInits), instances), "Initialized")!.status;
  test("Initialized: every init container completed, or app containers already ran in this sandbox", () => {
    expect(initialized([SANDBOX, dead("i1", 0, { init: true }), dead("i2", 0, { init: true })])).toBe("True");
    expect(initialized([SANDBOX, dead("i1", 0, { init: true }), { name: "i2", init: true }])).toBe("False");
    expect(initialized([SANDBOX, dead("i1", 0, { init: true })])).toBe("False");
    expect(initialized([SANDBOX, { name: "app" }])).toBe("True");
  });

  test("ContainersReady needs every container ready; PodReadyToStartContainers needs a running sandbox", () => {
    const one = statusOf(pod({ containers: [app, side] }), [SANDBOX, { name: "app" }, { name: "side" }], {
      ready: ["app-0"],
    });
    expect(condition(one, "ContainersReady")!.status).toBe("False");
    const deadSandbox = statusOf(pod(), [{ ...SANDBOX, running: false }, { name: "app" }]);
    expect(condition(deadSandbox, "PodReadyToStartContainers")!.status).toBe("False");
    const appOnly = statusOf(pod(), [{ name: "app" }]);
    expect(condition(appOnly, "PodReadyToStartContainers")!.status).toBe("False");
  });

  test("a previous status without conditions gives every condition the current time", () => {
    const status = statusOf(pod(), [SANDBOX, { name: "app" }], { previous: { phase: "Running" }, now: NOW + 1 });
    expect(status.conditions!.every((c) => c.lastTransitionTime === new Date(NOW + 1).toISOString())).toBe(true);
  });

  test("a running, ready pod: every condition True, transition times from the injected clock", () => {
    const status = statusOf(pod(), [SANDBOX, { name: "app" }], { ready: ["app-0"] });
    expect(status.conditions).toEqual(
      ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: new Date(NOW).toISOString(),
      })),
    );
  });

  test("not ready: Ready and ContainersReady are False with reason ContainersNotReady; no sandbox is False too", () => {
    const status = statusOf(pod({ initContainers: [{ name: "init", image: "x" }] }), []);
    expect(condition(status, "PodReadyToStartContainers")).toMatchObject({ status: "False" });
    expect(condition(status, "PodReadyToStartContainers")!.reason).toBeUndefined();
    expect(condition(status, "Initialized")).toMatchObject({ status: "False", reason: "ContainersNotInitialized" });
    expect(condition(status, "Ready")).toMatchObject({ status: "False", reason: "ContainersNotReady" });
    expect(condition(status, "ContainersReady")).toMatchObject({ status: "False", reason: "ContainersNotReady" });
  });

  test("ready containers of a pod that is not Running do not make it Ready", () => {
    const status = statusOf(pod({ restartPolicy: "Never" }), [SANDBOX, dead("app", 0)], { ready: ["app-0"] });
    expect(status.phase).toBe("Succeeded");
    expect(condition(status, "ContainersReady")!.status).toBe("False");
    expect(condition(status, "Ready")!.status).toBe("False");
  });

  test("a condition keeps its transition time while unchanged and takes the new time when it flips", () => {
    const first = statusOf(pod(), [SANDBOX, { name: "app" }]);
    const later = NOW + 60_000;
    const same = statusOf(pod(), [SANDBOX, { name: "app" }], { previous: first, now: later });
    expect(condition(same, "Ready")!.lastTransitionTime).toBe(new Date(NOW).toISOString());
    const flipped = statusOf(pod(), [SANDBOX, { name: "app" }], { previous: first, now: later, ready: ["app-0"] });
    expect(condition(flipped, "Ready")!.lastTransitionTime).toBe(new Date(later).toISOString());
    expect(condition(flipped, "PodScheduled")!.lastTransitionTime).toBe(new Date(NOW).toISOString());
  });
});

describe("pod status fields", () => {
  test("host and pod IPs, start time from when the kubelet first saw the pod", () => {
    const status = statusOf(pod(), [SANDBOX, { name: "app" }], { podIP: "10.1.0.7" });
    expect(status).toMatchObject({
      hostIP: "10.0.0.1",
      hostIPs: [{ ip: "10.0.0.1" }],
      podIP: "10.1.0.7",
      podIPs: [{ ip: "10.1.0.7" }],
      startTime: new Date(FIRST_SEEN).toISOString(),
    });
    const none = statusOf(pod(), [SANDBOX, { name: "app" }]);
    expect("podIP" in none || "podIPs" in none).toBe(false);
  });

  const qos = (containers: V1PodSpec["containers"]) => statusOf(pod({ containers }), []).qosClass;
  test("QoS class: BestEffort without resources, Guaranteed with equal limits for cpu and memory, else Burstable", () => {
    expect(qos([app])).toBe("BestEffort");
    expect(qos([{ ...app, resources: { limits: { cpu: "1", memory: "1Gi" } } }])).toBe("Guaranteed");
    expect(
      qos([{ ...app, resources: { limits: { cpu: "1", memory: "1Gi" }, requests: { cpu: "1", memory: "1Gi" } } }]),
    ).toBe("Guaranteed");
    expect(qos([{ ...app, resources: { limits: { cpu: "1", memory: "1Gi" }, requests: { cpu: "500m" } } }])).toBe(
      "Burstable",
    );
    expect(qos([{ ...app, resources: { limits: { cpu: "1" } } }])).toBe("Burstable");
    expect(qos([{ ...app, resources: { requests: { memory: "1Gi" } } }])).toBe("Burstable");
    expect(qos([{ ...app, resources: { limits: { cpu: "1", memory: "1Gi" } } }, side])).toBe("Burstable");
  });
});

describe("helpers", () => {
  test("instancesOf orders a container's instances newest attempt first, then newest created", () => {
    const of = pod();
    // The higher attempt wins even when it was created first.
    const { containers } = observedPod(
      of,
      [
        { name: "app", attempt: 3 },
        { name: "app", attempt: 1 },
      ],
      { now: NOW },
    );
    expect(instancesOf(containers, "app").map((c) => c.id)).toEqual(["app-3", "app-1"]);
    const twins = observedPod(of, [{ name: "app" }, { name: "app" }], { now: NOW }).containers;
    twins[1]!.id = "newer";
    expect(instancesOf(twins, "app").map((c) => c.id)).toEqual(["newer", "app-0"]);
  });

  test("shouldRestart follows the restart policy and the exit code", () => {
    expect(
      (["Always", "OnFailure", "Never", undefined] as const).map((p) => [shouldRestart(p, 0), shouldRestart(p, 1)]),
    ).toEqual([
      [true, true],
      [false, true],
      [false, false],
      [false, false],
    ]);
  });
});
