// Pure: a pod's spec, its sandboxes and containers as observed and the sync's waiting reasons → a Kubernetes
// PodStatus (phase, conditions, container statuses).
import { LABEL, type ContainerDetails, type PodSandboxSummary } from "../container/runtime.ts";
import { podQosClass } from "../api/qos.ts";
import { runningResources } from "./pod-resize.ts";
import {
  isSidecar,
  type Pod,
  type PodPhase,
  type V1Container,
  type V1ContainerStatus,
  type V1PodCondition,
  type V1PodStatus,
} from "../api/types.ts";

/** A resize not (fully) applied: the pod condition that says so (the Go kubelet's, KEP-1287). */
export interface ResizeStatus {
  type: "PodResizePending" | "PodResizeInProgress";
  /** Infeasible or Deferred (pending); Error (in progress). */
  reason: string;
  message: string;
}

/** Why a container is not running, as the sync last saw it. */
export interface Waiting {
  reason: string;
  message: string;
}

export interface StatusInput {
  pod: Pod;
  /** The pod's sandboxes: a ready one is the PodReadyToStartContainers condition. */
  sandboxes: readonly PodSandboxSummary[];
  /** The pod's containers, newest attempt first per container. */
  containers: ContainerDetails[];
  waiting: Map<string, Waiting>;
  /** A resize the sync could not (fully) apply: its condition. */
  resize?: ResizeStatus;
  isReady(containerId: string): boolean;
  isStarted(containerId: string): boolean;
  hostIP: string;
  podIP: string;
  /** When the kubelet first accepted the pod (ms). */
  firstSeen: number;
  /** The status computed last time: conditions keep their transition times while unchanged. */
  previous?: V1PodStatus;
  /** The time of this computation (ms, from the injected clock): a changed condition's transition time. */
  now: number;
}

/** Instances of one container of the pod, newest attempt first. */
export function instancesOf(containers: ContainerDetails[], name: string): ContainerDetails[] {
  return containers
    .filter((c) => c.labels[LABEL.containerName] === name)
    .sort(
      (a, b) =>
        Number(b.labels[LABEL.restartCount] ?? 0) - Number(a.labels[LABEL.restartCount] ?? 0) ||
        b.createdAt - a.createdAt,
    );
}

/** Whether a dead container should be started again under the pod's restart policy. */
export function shouldRestart(policy: string | undefined, exitCode: number): boolean {
  return policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
}

function terminatedReason(c: ContainerDetails): string {
  if (c.oomKilled) return "OOMKilled";
  if (c.error) return "ContainerCannotRun";
  return c.exitCode === 0 ? "Completed" : "Error";
}

/** `<runtime>://<id>`, as the Go kubelet's ContainerID prints: docker://… or containerd://…. */
const containerId = (c: ContainerDetails) => `${c.runtimeName ?? "docker"}://${c.id}`;

/** Docker's pullable reference, or the CRI's image_ref as the runtime gives it (the Go kubelet's ImageID). */
const imageId = (c: ContainerDetails) =>
  !c.imageId ? "" : (c.runtimeName ?? "docker") === "docker" ? `docker-pullable://${c.imageId}` : c.imageId;

function stateOf(c: ContainerDetails): V1ContainerStatus["state"] {
  if (c.running) return { running: { startedAt: c.startedAt } };
  return {
    terminated: {
      exitCode: c.exitCode,
      reason: terminatedReason(c),
      ...(c.terminationMessage || c.error ? { message: c.terminationMessage || c.error } : {}),
      ...(c.startedAt ? { startedAt: c.startedAt } : {}),
      ...(c.finishedAt ? { finishedAt: c.finishedAt } : {}),
      containerID: containerId(c),
    },
  };
}

/**
 * One container's status. A regular init container is ready once it completed and started while it runs (no probes
 * run on it); a sidecar (restartable init container) and an app container take both from their probes, as the Go
 * kubelet's prober manager sets them.
 */
function containerStatus(spec: V1Container, input: StatusInput, regularInit = false): V1ContainerStatus {
  const [latest, previous] = instancesOf(input.containers, spec.name);
  const waiting = input.waiting.get(spec.name);
  const base = {
    name: spec.name,
    image: spec.image ?? "",
    imageID: "",
    restartCount: latest ? Number(latest.labels[LABEL.restartCount] ?? 0) : 0,
  };
  if (!latest) {
    // The Go kubelet's default waiting state: PodInitializing in a pod with init containers, else ContainerCreating.
    const initial = { reason: input.pod.spec.initContainers?.length ? "PodInitializing" : "ContainerCreating" };
    return { ...base, ready: false, started: false, state: { waiting: waiting ?? initial } };
  }
  const state = waiting && !latest.running ? { waiting } : stateOf(latest);
  // KEP-1287: what the kubelet allocated (the spec's requests) and what the container runs with now.
  const declared = spec.resources?.requests ?? spec.resources?.limits;
  const resources =
    declared && latest.running && latest.resources
      ? { allocatedResources: { ...declared }, resources: runningResources(latest.resources, spec) }
      : {};
  const lastState = waiting && !latest.running ? stateOf(latest) : previous ? stateOf(previous) : {};
  return {
    ...base,
    imageID: imageId(latest),
    containerID: containerId(latest),
    state,
    lastState,
    ready: regularInit ? state?.terminated?.exitCode === 0 : latest.running && input.isReady(latest.id),
    started: latest.running && (regularInit || input.isStarted(latest.id)),
    ...resources,
  };
}

/** The pod's status in the Kubernetes shape. */
export function computePodStatus(input: StatusInput): V1PodStatus {
  const { pod } = input;
  const now = new Date(input.now).toISOString();
  const inits = pod.spec.initContainers ?? [];
  const initStatuses = inits.map((c) => containerStatus(c, input, !isSidecar(c)));
  const regularInits = initStatuses.filter((_, i) => !isSidecar(inits[i]!));
  const sidecars = initStatuses.filter((_, i) => isSidecar(inits[i]!));
  const statuses = pod.spec.containers.map((c) => containerStatus(c, input));
  // The Go kubelet's Initialized: regular init containers completed and sidecars started, or an app container ran.
  const initialized =
    (regularInits.every((s) => s.state?.terminated?.exitCode === 0) && sidecars.every((s) => s.started)) ||
    statuses.some((s) => s.containerID);
  const phase = podPhase(pod, regularInits, sidecars, statuses, initialized);
  // Sidecars' readiness counts, as the Go kubelet's ContainersReady does.
  const containersReady = [...sidecars, ...statuses].every((s) => s.ready);
  const condition = (type: string, ok: boolean, reason?: string): V1PodCondition => {
    const before = input.previous?.conditions?.find((c) => c.type === type);
    const status = ok ? "True" : "False";
    return {
      type,
      status,
      lastTransitionTime: before?.status === status ? before.lastTransitionTime : now,
      ...(ok || !reason ? {} : { reason }),
    };
  };
  const sandbox = input.sandboxes.some((s) => s.state === "ready");
  return {
    phase,
    conditions: [
      condition("PodReadyToStartContainers", sandbox),
      condition("Initialized", initialized, "ContainersNotInitialized"),
      // Ready containers are running containers, so the pod is Running; no readiness gates here.
      condition("Ready", containersReady, "ContainersNotReady"),
      condition("ContainersReady", containersReady, "ContainersNotReady"),
      condition("PodScheduled", true),
      ...(input.resize
        ? [
            {
              ...condition(input.resize.type, true),
              reason: input.resize.reason,
              message: input.resize.message,
            },
          ]
        : []),
    ],
    hostIP: input.hostIP,
    hostIPs: [{ ip: input.hostIP }],
    ...(input.podIP ? { podIP: input.podIP, podIPs: [{ ip: input.podIP }] } : {}),
    startTime: new Date(input.firstSeen).toISOString(),
    ...(initStatuses.length ? { initContainerStatuses: initStatuses } : {}),
    containerStatuses: statuses,
    qosClass: podQosClass(pod),
  };
}

/**
 * The Go kubelet's getPhase. Sidecars count only while they run (the pod is Running); their exits never make it
 * Failed or Succeeded: the regular containers alone decide.
 */
function podPhase(
  pod: Pod,
  init: V1ContainerStatus[],
  sidecars: V1ContainerStatus[],
  app: V1ContainerStatus[],
  initialized: boolean,
): PodPhase {
  const policy = pod.spec.restartPolicy;
  if (!initialized) {
    const failed = init.some((s) => (s.state?.terminated?.exitCode ?? 0) !== 0 && policy === "Never");
    return failed ? "Failed" : "Pending";
  }
  if (app.some((s) => s.state?.running)) return "Running";
  if (app.some((s) => !s.containerID)) return "Pending";
  if (sidecars.some((s) => s.state?.running)) return "Running"; // a Job's sidecars are being stopped
  // Every container has run and none runs now: each shows its last exit as terminated (or as lastState
  // while it waits to restart).
  if (policy === "Always") return "Running"; // restarting
  const exitCodes = app.map((s) => (s.state?.terminated ?? s.lastState?.terminated)?.exitCode ?? 0);
  if (exitCodes.every((code) => code === 0)) return "Succeeded";
  return policy === "Never" ? "Failed" : "Running";
}
