// Pure: one pod's spec, its sandboxes and containers as observed, crash-loop back-off state and the time → the
// plan of one sync (the Go kubelet's computePodActions). In CRI terms: kill the pod or create its
// sandbox, kill containers with a reason, start the next init container or the app containers.
// Nothing here calls the runtime: the observer (pod-observer.ts) gives its input, the executor (pod-executor.ts)
// carries it out.
import { podSandboxHash, containerHash } from "../api/hash.ts";
import { isSidecar, type Pod, type V1Container } from "../api/types.ts";
import type { BackoffEntry } from "../node/flowcontrol/backoff.ts";
import { LABEL, type ContainerDetails, type PodSandboxDetails } from "../container/runtime.ts";
import { instancesOf, shouldRestart } from "./pod-status.ts";
import { planResize, type ContainerResize, type ResizeDecision, type ResizeOptions } from "./pod-resize.ts";

/** One pod as the runtime shows it: its sandboxes and every instance of every container, dead ones too. */
export interface Observed {
  sandboxes: PodSandboxDetails[];
  containers: ContainerDetails[];
}

/** A pod the runtime shows nothing of. */
export const noneObserved = (): Observed => ({ sandboxes: [], containers: [] });

/** Nothing of the pod is left on the runtime. */
export const nothingObserved = (o: Observed) => o.sandboxes.length === 0 && o.containers.length === 0;

/** The labels the kubelet put on the pod's sandbox or containers (pod name, namespace, source), any of them. */
export const observedLabels = (o: Observed): Record<string, string> | undefined =>
  (o.sandboxes[0] ?? o.containers[0])?.labels;

/** A pod's sandboxes, newest attempt first. */
export const sandboxesNewestFirst = (sandboxes: readonly PodSandboxDetails[]) =>
  [...sandboxes].sort((a, b) => b.metadata.attempt - a.metadata.attempt || b.createdAt - a.createdAt);

/** A container that ran for this long before dying starts its back-off afresh (the Go kubelet's). */
export const BACKOFF_RESET_AFTER_MS = 600_000;
/** Seconds a pod gets to stop when neither its spec nor its labels say (the Kubernetes default). */
const DEFAULT_GRACE_SECONDS = 30;

export interface PodPlanInput {
  /** The pod as declared; for a pod no source wants any more, its last known spec, if any. */
  pod?: Pod;
  /** No source wants the pod: every container and its sandbox go. */
  deleted?: boolean;
  /** The pod's sandboxes and every instance of every container, dead ones too. */
  observed: Observed;
  /** --pod_network_mode: part of what the sandbox embodies. */
  networkMode: string;
  /** Running containers whose liveness or startup probe failed since the last sync: id → which probe. */
  livenessFailed: ReadonlyMap<string, ProbeFailure>;
  /** Whether a running container's startup probe has passed; absent = none has (`kubelet plan` runs no probes). */
  startupPassed?(containerId: string): boolean;
  /** Crash-loop back-off state, keyed `<podUid>/<container>`. */
  backoff: { get(key: string): BackoffEntry | undefined };
  /** Milliseconds since the epoch. */
  now: number;
  /** How cpu limits become CFS quotas (the kubelet's flags); absent = the defaults. */
  resize?: ResizeOptions;
}

/** The probe whose failure restarts a container. */
export type ProbeFailure = "liveness" | "startup";

/** Why a container is stopped (the Go kubelet's containerKillReason, plus the whole-pod cases). */
export type KillReason =
  | "PodDeleted"
  | "PodCompleted"
  | "SandboxChanged"
  | "NotInSpec"
  | "SpecChanged"
  | "LivenessProbe"
  | "StartupProbe";

/** The Go kubelet's kill reason for a probe failure. */
const probeKillReason = (probe: ProbeFailure): KillReason => (probe === "startup" ? "StartupProbe" : "LivenessProbe");

export interface ContainerToKill {
  container: ContainerDetails;
  /** Its spec, when the pod still names it: its preStop hook runs first. */
  spec?: V1Container;
  reason: KillReason;
  /** For the Killing event, in the Go kubelet's words. */
  message: string;
  /**
   * A sidecar (a running init container): it stops after every other container of the kill, one sidecar at a time
   * in the order listed (the reverse of the spec's), as the Go kubelet's termination ordering does.
   */
  sidecar?: boolean;
  /** A restart a resize needs (resizePolicy RestartContainer, or a limit removed), not another change of its spec. */
  resize?: boolean;
}

export interface ContainerToStart {
  spec: V1Container;
  init: boolean;
  /** The restart count: the dockershim name's last field. */
  attempt: number;
  /** Forget earlier crashes first: the spec changed, or the last run outlived the back-off window. */
  resetBackoff: boolean;
  /** A restart of a dead container: it takes a back-off step and counts as a restart. */
  restart: boolean;
}

export interface ContainerBackingOff {
  name: string;
  init: boolean;
  /** Milliseconds until the back-off ends. */
  waitMs: number;
  /** `back-off 20s restarting failed container=…`, the Go kubelet's CrashLoopBackOff message. */
  message: string;
}

export interface ContainerToKeep {
  spec: V1Container;
  container: ContainerDetails;
}

export interface PodActions {
  /** Every container and the sandbox stop (the pod was deleted, or its sandbox changed or died). */
  killPod: boolean;
  /** Grace period of the kills, seconds. */
  graceSeconds: number;
  /** Create a sandbox with this attempt number (after the kills and removals). */
  createSandbox?: { attempt: number; reason: string };
  /** The ready sandbox that is kept. */
  sandbox?: PodSandboxDetails;
  /** Ready sandboxes to stop, after the containers. */
  sandboxesToStop: PodSandboxDetails[];
  containersToKill: ContainerToKill[];
  /** Containers to remove once the kills are done (their ids). */
  containersToRemove: string[];
  /** Sandboxes to remove once stopped, after their containers (their ids). */
  sandboxesToRemove: string[];
  /**
   * Init containers to start now, in spec order and one after the other: the next regular one, and sidecars
   * (restartable init containers) to start or restart. Until the pod is initialized no app container starts.
   */
  initContainersToStart: ContainerToStart[];
  containersToStart: ContainerToStart[];
  /** Running containers left alone: their probes keep running. */
  containersToKeep: ContainerToKeep[];
  /** Running containers (kept too) whose resources change in place: a resources-only edit, resizePolicy NotRequired. */
  containersToResize: ContainerResize[];
  /** Dead containers whose restart waits for their back-off to end. */
  backingOff: ContainerBackingOff[];
  /** An init container failed under restartPolicy Never: the pod has failed and nothing more starts. */
  podFailed: boolean;
}

const nextAttempt = (latest: ContainerDetails | undefined) =>
  latest ? Number(latest.labels[LABEL.restartCount] ?? 0) + 1 : 0;

/** The actions one sync takes to bring a pod's containers to its spec. */
export function computePodActions(input: PodPlanInput): PodActions {
  const { pod, observed } = input;
  const plan: PodActions = {
    killPod: false,
    graceSeconds:
      pod?.spec.terminationGracePeriodSeconds ??
      Number(observedLabels(observed)?.[LABEL.terminationGracePeriod] ?? DEFAULT_GRACE_SECONDS),
    sandboxesToStop: [],
    containersToKill: [],
    containersToRemove: [],
    sandboxesToRemove: [],
    initContainersToStart: [],
    containersToStart: [],
    containersToKeep: [],
    containersToResize: [],
    backingOff: [],
    podFailed: false,
  };
  const specs = pod ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers] : [];
  const specOf = (c: ContainerDetails) => specs.find((s) => s.name === c.labels[LABEL.containerName]);
  const killPod = (reason: KillReason) => {
    plan.killPod = true;
    plan.containersToKill.push(
      ...terminationOrder(
        pod,
        observed.containers.filter((c) => c.running),
      ).map((c) => ({
        container: c,
        spec: specOf(c),
        reason,
        message: `Stopping container ${c.labels[LABEL.containerName]}`,
        ...(isInit(c) ? { sidecar: true } : {}),
      })),
    );
    plan.sandboxesToStop = observed.sandboxes.filter((s) => s.state === "ready");
    plan.containersToRemove = observed.containers.map((c) => c.id);
    plan.sandboxesToRemove = observed.sandboxes.map((s) => s.id);
  };

  if (!pod || input.deleted) {
    if (!nothingObserved(observed)) killPod("PodDeleted");
    return plan;
  }

  // The sandbox: one ready sandbox whose hash matches the pod-level spec.
  const sandboxHash = podSandboxHash(pod, input.networkMode);
  const sandboxes = sandboxesNewestFirst(observed.sandboxes);
  const sandbox = sandboxes.find((s) => s.state === "ready" && s.labels[LABEL.podHash] === sandboxHash);
  let containers = [...observed.containers];
  if (sandbox) plan.sandbox = sandbox;
  else {
    killPod("SandboxChanged");
    plan.createSandbox = {
      attempt: sandboxes.length ? sandboxes[0]!.metadata.attempt + 1 : 0,
      reason:
        sandboxes.length === 0 ? "no sandbox" : sandboxes.some((s) => s.state === "ready") ? "changed" : "not ready",
    };
    containers = []; // every container goes with the old sandbox
  }

  // Containers the spec no longer names go first.
  for (const c of containers.filter((c) => !specOf(c))) {
    if (c.running)
      plan.containersToKill.push({
        container: c,
        reason: "NotInSpec",
        message: `Container ${c.labels[LABEL.containerName]} is not in the pod spec`,
      });
    plan.containersToRemove.push(c.id);
  }

  const backoffWait = (name: string) => {
    const entry = input.backoff.get(`${pod.metadata.uid}/${name}`);
    return entry ? Math.max(0, entry.at + entry.delayMs - input.now) : 0;
  };
  const backOff = (name: string, init: boolean, waitMs: number) => {
    const delay = Math.round((input.backoff.get(`${pod.metadata.uid}/${name}`)?.delayMs ?? 0) / 1000);
    plan.backingOff.push({
      name,
      init,
      waitMs,
      message: `back-off ${delay}s restarting failed container=${name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
    });
  };

  const initialized = planInitContainers(pod, containers, input, plan, backoffWait, backOff);
  if (!initialized) return plan;

  // App containers, each by the restart policy.
  for (const spec of pod.spec.containers) {
    const [latest] = instancesOf(containers, spec.name);
    const changed = !!latest && latest.labels[LABEL.containerHash] !== containerHash(spec);
    const start = (resetBackoff: boolean, restart: boolean) =>
      plan.containersToStart.push({ spec, init: false, attempt: nextAttempt(latest), resetBackoff, restart });
    if (!latest) start(false, false);
    else if (latest.running) {
      const resize = replaceUnlessResized(
        plan,
        latest,
        spec,
        changed,
        input,
        `Container ${spec.name} definition changed, will be restarted`,
      );
      if (!resize) start(true, false);
      else if (input.livenessFailed.has(latest.id)) {
        const restart = shouldRestart(pod.spec.restartPolicy, 1);
        const probe = input.livenessFailed.get(latest.id)!;
        plan.containersToKill.push({
          container: latest,
          spec,
          reason: probeKillReason(probe),
          message: `Container ${spec.name} failed ${probe} probe${restart ? ", will be restarted" : ""}`,
        });
        if (restart) start(false, false);
      } else keep(plan, latest, spec, resize);
    } else if (changed || shouldRestart(pod.spec.restartPolicy, latest.exitCode)) {
      const ran = Date.parse(latest.finishedAt ?? "") - Date.parse(latest.startedAt ?? "");
      const reset = changed || ran >= BACKOFF_RESET_AFTER_MS;
      const wait = reset ? 0 : backoffWait(spec.name);
      if (wait > 0) backOff(spec.name, false, wait);
      else start(reset, true);
    }
  }
  if (pod.spec.initContainers?.length) stopSidecarsOfFinishedPod(pod, plan);
  return plan;
}

/**
 * A running container whose spec changed is replaced (`message`), unless only its resources changed and its
 * resizePolicy lets them change in place: that decision is returned, for keep(); undefined when replaced.
 */
function replaceUnlessResized(
  plan: PodActions,
  container: ContainerDetails,
  spec: V1Container,
  changed: boolean,
  input: PodPlanInput,
  message: string,
  sidecar = false,
): ResizeDecision | undefined {
  const resize = planResize(spec, container, changed, input.resize ?? {});
  if (resize && resize.kind !== "restart") return resize;
  replace(plan, container, spec, resize?.message ?? message, sidecar, resize !== undefined);
  return undefined;
}

/** A running container whose spec changed (or whose resize needs a restart) is stopped, to start anew. */
function replace(
  plan: PodActions,
  container: ContainerDetails,
  spec: V1Container,
  message: string,
  sidecar = false,
  resize = false,
) {
  plan.containersToKill.push({
    container,
    spec,
    reason: "SpecChanged",
    message,
    ...(sidecar ? { sidecar } : {}),
    ...(resize ? { resize } : {}),
  });
}

/** A running container stays, resized in place when only its resources changed. */
function keep(plan: PodActions, container: ContainerDetails, spec: V1Container, resize: ResizeDecision) {
  plan.containersToKeep.push({ spec, container });
  if (resize.kind === "resize") plan.containersToResize.push(resize.resize);
}

const isInit = (c: ContainerDetails) => c.labels[LABEL.initContainer] === "true";

/**
 * Running containers in the order they stop: regular containers first, then sidecars (running init containers),
 * last started first: the reverse of the spec's order, or of their creation when the spec is unknown.
 */
function terminationOrder(pod: Pod | undefined, running: ContainerDetails[]): ContainerDetails[] {
  const index = (c: ContainerDetails) =>
    (pod?.spec.initContainers ?? []).findIndex((s) => s.name === c.labels[LABEL.containerName]);
  const sidecars = running.filter(isInit).sort((a, b) => index(b) - index(a) || b.createdAt - a.createdAt);
  return [...running.filter((c) => !isInit(c)), ...sidecars];
}

/**
 * The Go kubelet's computeInitContainerActions, in spec order: a regular init container runs to completion before
 * the next starts; a sidecar starts in its place and the next starts once it has started (running, its startup
 * probe passed if it has one); a sidecar that exits, fails its liveness or startup probe or changes is restarted
 * (with back-off), whatever the pod's restartPolicy. Once app containers ran in this sandbox the pod stays
 * initialized: regular init containers are done, sidecars are kept running. True when the pod is initialized.
 */
function planInitContainers(
  pod: Pod,
  containers: ContainerDetails[],
  input: PodPlanInput,
  plan: PodActions,
  backoffWait: (name: string) => number,
  backOff: (name: string, init: boolean, waitMs: number) => void,
): boolean {
  const initialized = pod.spec.containers.some((spec) => instancesOf(containers, spec.name).length > 0);
  const startOrWait = (spec: V1Container, latest: ContainerDetails | undefined, resetBackoff = false) => {
    const wait = latest && !resetBackoff ? backoffWait(spec.name) : 0;
    if (wait > 0) backOff(spec.name, true, wait);
    else
      plan.initContainersToStart.push({
        spec,
        init: true,
        attempt: nextAttempt(latest),
        resetBackoff,
        restart: !!latest && !resetBackoff,
      });
  };
  for (const spec of pod.spec.initContainers ?? []) {
    const [latest] = instancesOf(containers, spec.name);
    if (!isSidecar(spec)) {
      if (initialized || (latest && !latest.running && latest.exitCode === 0)) continue;
      if (latest?.running) return false;
      if (latest && !shouldRestart(pod.spec.restartPolicy === "Never" ? "Never" : "OnFailure", latest.exitCode)) {
        plan.podFailed = true;
        return false;
      }
      startOrWait(spec, latest);
      return false;
    }
    if (!latest?.running) startOrWait(spec, latest);
    else if (input.livenessFailed.has(latest.id)) {
      const probe = input.livenessFailed.get(latest.id)!;
      plan.containersToKill.push({
        container: latest,
        spec,
        reason: probeKillReason(probe),
        message: `Init container ${spec.name} failed ${probe} probe`,
        sidecar: true,
      });
      startOrWait(spec, latest);
    } else {
      // A resources-only edit resizes a sidecar in place, as it does an app container.
      const changed = latest.labels[LABEL.containerHash] !== containerHash(spec);
      const resize = replaceUnlessResized(
        plan,
        latest,
        spec,
        changed,
        input,
        `Init container ${spec.name} definition changed`,
        true,
      );
      if (!resize) startOrWait(spec, latest, true);
      else {
        keep(plan, latest, spec, resize);
        if (!spec.startupProbe || input.startupPassed?.(latest.id)) continue;
      }
    }
    if (!initialized) return false;
  }
  return true;
}

/**
 * A pod whose regular containers are all done (none kept, started or backing off: a Job's pod that completed)
 * stops its sidecars, last one first, and none restarts: the Go kubelet's keepCount == 0 rule. Its phase then
 * follows from the regular containers alone.
 */
function stopSidecarsOfFinishedPod(pod: Pod, plan: PodActions) {
  const regular = (name: string) => pod.spec.containers.some((s) => s.name === name);
  const regularAlive =
    plan.containersToStart.length > 0 ||
    plan.containersToKeep.some((k) => regular(k.spec.name)) ||
    plan.backingOff.some((b) => !b.init);
  if (regularAlive) return;
  const sidecars = plan.containersToKeep.filter((k) => !regular(k.spec.name));
  plan.containersToKeep = plan.containersToKeep.filter((k) => regular(k.spec.name));
  plan.initContainersToStart = [];
  plan.backingOff = plan.backingOff.filter((b) => !b.init);
  const running = terminationOrder(
    pod,
    sidecars.map((k) => k.container),
  );
  plan.containersToKill.push(
    ...running.map((container) => ({
      container,
      spec: sidecars.find((k) => k.container === container)!.spec,
      reason: "PodCompleted" as const,
      message: `Stopping container ${container.labels[LABEL.containerName]}`,
      sidecar: true,
    })),
  );
}
