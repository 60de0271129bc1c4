// Pure: one pod's spec, its sandboxes and containers as observed, crash-loop back-off state and the time → the
// plan of one sync (the Go kubelet's computePodActions). In CRI terms: kill the pod or create its
// sandbox, kill containers with a reason, start the next init container or the app containers.
// Nothing here calls the runtime: the observer (pod-observer.ts) gives its input, the executor (pod-executor.ts)
// carries it out.
import { podSandboxHash, containerHash } from "../api/hash.ts";
import type { Pod, V1Container } from "../api/types.ts";
import type { BackoffEntry } from "../node/backoff.ts";
import { LABEL, type ContainerDetails, type PodSandboxDetails } from "../container/runtime.ts";
import { instancesOf, shouldRestart } from "./pod-status.ts";

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
  /** Ids of running containers whose liveness probe failed since the last sync. */
  livenessFailed: ReadonlySet<string>;
  /** Crash-loop back-off state, keyed `<podUid>/<container>`. */
  backoff: { get(key: string): BackoffEntry | undefined };
  /** Milliseconds since the epoch. */
  now: number;
}

/** Why a container is stopped (the Go kubelet's containerKillReason, plus the whole-pod cases). */
export type KillReason = "PodDeleted" | "SandboxChanged" | "NotInSpec" | "SpecChanged" | "LivenessProbe";

export interface ContainerToKill {
  container: ContainerDetails;
  /** Its spec, when the pod still names it: its preStop hook runs first. */
  spec?: V1Container;
  reason: KillReason;
  /** For the Killing event, in the Go kubelet's words. */
  message: string;
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
  /** The init container to run now; while set, no app container starts. */
  nextInitContainer?: ContainerToStart;
  containersToStart: ContainerToStart[];
  /** Running containers left alone: their probes keep running. */
  containersToKeep: ContainerToKeep[];
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
    containersToStart: [],
    containersToKeep: [],
    backingOff: [],
    podFailed: false,
  };
  const specs = pod ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers] : [];
  const specOf = (c: ContainerDetails) => specs.find((s) => s.name === c.labels[LABEL.containerName]);
  const killPod = (reason: KillReason) => {
    plan.killPod = true;
    for (const c of observed.containers.filter((c) => c.running))
      plan.containersToKill.push({
        container: c,
        spec: specOf(c),
        reason,
        message: `Stopping container ${c.labels[LABEL.containerName]}`,
      });
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

  // Init containers, in order, each to completion, unless app containers already ran in this sandbox.
  const appStarted = pod.spec.containers.some((spec) => instancesOf(containers, spec.name).length > 0);
  if (!appStarted) {
    for (const spec of pod.spec.initContainers ?? []) {
      const [latest] = instancesOf(containers, spec.name);
      if (latest?.running) return plan;
      if (latest?.exitCode === 0) continue;
      if (latest && !shouldRestart(pod.spec.restartPolicy === "Never" ? "Never" : "OnFailure", latest.exitCode)) {
        plan.podFailed = true;
        return plan;
      }
      const wait = latest ? backoffWait(spec.name) : 0;
      if (wait > 0) backOff(spec.name, true, wait);
      else
        plan.nextInitContainer = {
          spec,
          init: true,
          attempt: nextAttempt(latest),
          resetBackoff: false,
          restart: !!latest,
        };
      return plan;
    }
  }

  // App containers, each by the restart policy.
  for (const spec of pod.spec.containers) {
    const [latest] = instancesOf(containers, spec.name);
    const changed = !!latest && latest.labels[LABEL.containerHash] !== containerHash(spec);
    const start = (resetBackoff: boolean, restart: boolean) =>
      plan.containersToStart.push({ spec, init: false, attempt: nextAttempt(latest), resetBackoff, restart });
    if (!latest) start(false, false);
    else if (latest.running) {
      if (changed) {
        plan.containersToKill.push({
          container: latest,
          spec,
          reason: "SpecChanged",
          message: `Container ${spec.name} definition changed, will be restarted`,
        });
        start(true, false);
      } else if (input.livenessFailed.has(latest.id)) {
        const restart = shouldRestart(pod.spec.restartPolicy, 1);
        plan.containersToKill.push({
          container: latest,
          spec,
          reason: "LivenessProbe",
          message: `Container ${spec.name} failed liveness probe${restart ? ", will be restarted" : ""}`,
        });
        if (restart) start(false, false);
      } else plan.containersToKeep.push({ spec, container: latest });
    } else if (changed || shouldRestart(pod.spec.restartPolicy, latest.exitCode)) {
      const ran = Date.parse(latest.finishedAt ?? "") - Date.parse(latest.startedAt ?? "");
      const reset = changed || ran >= BACKOFF_RESET_AFTER_MS;
      const wait = reset ? 0 : backoffWait(spec.name);
      if (wait > 0) backOff(spec.name, false, wait);
      else start(reset, true);
    }
  }
  return plan;
}
