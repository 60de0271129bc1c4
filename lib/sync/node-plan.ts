// Pure: what a sync of the whole node would do, for `kubelet plan`. The desired pods and the node as
// observed go through the sync's own plan (computePodActions, pod-plan.ts) with the crash-loop back-off
// the kubelet persisted and no probe failures known; the result is spelled out per pod — create, recreate and why, replace a
// container and which fields changed, start, restart, remove, pull — and nothing is carried out.
import { changedFields, containerFieldHashes, sandboxFieldHashes } from "../api/hash.ts";
import { checkConfigRefs } from "../api/config-refs.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import { ANNOTATION, formatIssue, isSidecar, podKey, type Pod, type V1Container } from "../api/types.ts";
import type { BackoffEntry } from "../node/flowcontrol/backoff.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME } from "../container/runtime.ts";
import { describeResize, type ResizeOptions } from "./pod-resize.ts";
import { resizeFit } from "./pod-allocation.ts";
import type { Requests } from "./resource-fit.ts";
import { computePodActions, noneObserved, observedLabels, sandboxesNewestFirst, type Observed } from "./pod-plan.ts";

export type PlannedActionKind =
  | "create-pod"
  | "recreate-pod"
  | "pull-image"
  | "start-init-container"
  | "start-container"
  | "restart-container"
  | "replace-container"
  | "resize-container"
  | "remove-container"
  | "remove-pod"
  | "wait";

export interface PlannedAction {
  action: PlannedActionKind;
  container?: string;
  image?: string;
  /** Why, in words. */
  reason: string;
  /** For replace-container and recreate-pod: the spec fields that changed (when the running one recorded them). */
  fields?: string[];
}

export interface PodPlanReport {
  /** `namespace/name`. */
  pod: string;
  uid: string;
  /** File, URL or etcd key it comes from ("" for an orphan). */
  origin: string;
  actions: PlannedAction[];
}

export interface NodePlan {
  /** Whether a sync would change anything on the node. */
  changes: boolean;
  pods: PodPlanReport[];
  /** Images that would be pulled, once each. */
  pulls: string[];
}

export interface NodePlanInput {
  pods: Pod[];
  /** Every kubelet sandbox and container on the node, by pod uid. */
  observed: Map<string, Observed>;
  networkMode: string;
  /** The runtime's sandbox image, when its Status names it: planned as a pull when missing (the runtime pulls it). */
  sandboxImage?: string;
  /** Whether an image is present on the node now. */
  imagePresent(image: string): boolean;
  configs: ConfigLookup;
  now: number;
  /** The crash-loop back-off as the kubelet persisted it (`<podUid>/<container>`); absent = none known. */
  backoff?: { get(key: string): BackoffEntry | undefined };
  /**
   * Sources with a manifest that could not be read: their orphans are kept, as the sync keeps a broken
   * file's last good pods (this one-shot read has no last good version to show).
   */
  unreadSources?: ReadonlySet<string>;
  /** How cpu limits become CFS quotas (--cpu_cfs_quota, --cpu_cfs_quota_period): what a resize compares. */
  resize?: ResizeOptions;
  /** The node's allocatable: a resize that does not fit it, or not beside the other pods, waits (Deferred, Infeasible). */
  allocatable?: Requests;
}

const noBackoff = { get: () => undefined };

/** The actions a sync would take now, per pod, orphans last. */
export function planNode(input: NodePlanInput): NodePlan {
  const pulls = new Set<string>();
  const reports: PodPlanReport[] = [];
  for (const pod of input.pods) {
    const actions = planPod(pod, input, pulls);
    reports.push({
      pod: podKey(pod),
      uid: pod.metadata.uid,
      origin: pod.metadata.annotations[ANNOTATION.origin] ?? "",
      actions,
    });
  }
  const wanted = new Set(input.pods.map((p) => p.metadata.uid));
  for (const [uid, observed] of input.observed) {
    const labels = observedLabels(observed);
    if (wanted.has(uid) || !labels) continue;
    if (input.unreadSources?.has(labels[ANNOTATION.source] ?? "")) continue;
    const plan = computePodActions({
      deleted: true,
      observed,
      networkMode: input.networkMode,
      livenessFailed: new Map(),
      backoff: noBackoff,
      now: input.now,
    });
    const running = plan.containersToKill.length + plan.sandboxesToStop.length;
    reports.push({
      pod: `${labels[LABEL.podNamespace]}/${labels[LABEL.podName]}`,
      uid,
      origin: "",
      actions: [
        {
          action: "remove-pod",
          // Each sandbox counts as the pause container it is on Docker.
          reason: `no source wants it (${running} running, ${plan.containersToRemove.length + plan.sandboxesToRemove.length} containers in all)`,
        },
      ],
    });
  }
  return {
    changes: reports.some((r) => r.actions.some((a) => a.action !== "wait")),
    pods: reports.filter((r) => r.actions.length > 0),
    pulls: [...pulls],
  };
}

function planPod(pod: Pod, input: NodePlanInput, pulls: Set<string>): PlannedAction[] {
  const observed = input.observed.get(pod.metadata.uid) ?? noneObserved();
  const plan = computePodActions({
    pod,
    observed,
    networkMode: input.networkMode,
    livenessFailed: new Map(),
    backoff: input.backoff ?? noBackoff,
    now: input.now,
    ...(input.resize ? { resize: input.resize } : {}),
  });
  const actions: PlannedAction[] = [];
  const pull = (spec: { image?: string; imagePullPolicy?: string }, name: string) => {
    const image = spec.image ?? "";
    const present = input.imagePresent(image);
    const policy = spec.imagePullPolicy ?? "IfNotPresent";
    if (policy === "Never" && !present) {
      actions.push({
        action: "wait",
        container: name,
        image,
        reason: `ErrImageNeverPull: Container image "${image}" is not present with pull policy of Never`,
      });
      return;
    }
    if (policy === "Always" || !present) {
      if (!actions.some((a) => a.action === "pull-image" && a.image === image))
        actions.push({
          action: "pull-image",
          image,
          reason: policy === "Always" ? "pull policy Always" : `not present (pull policy ${policy})`,
        });
      pulls.add(image);
    }
  };
  const start = (spec: V1Container, init: boolean, action: PlannedActionKind, reason: string) => {
    pull(spec, spec.name);
    actions.push({ action, container: spec.name, image: spec.image, reason });
  };
  // A resize, in place or by a restart, waits while the node has no room for it (the sync's allocation).
  const resizing = plan.containersToResize.length > 0 || plan.containersToKill.some((k) => k.resize);
  const pending =
    resizing && input.allocatable
      ? resizeFit(
          pod,
          input.pods.filter((p) => p !== pod),
          input.allocatable,
        )
      : undefined;
  const waitForRoom = (container: string, change: string): PlannedAction => ({
    action: "wait",
    container,
    reason: `resize ${pending!.reason} (${change}): ${pending!.message}`,
  });

  if (plan.createSandbox) {
    const [pause] = sandboxesNewestFirst(observed.sandboxes);
    if (!pause) actions.push({ action: "create-pod", reason: "not on the node" });
    else {
      const fields = changedFields(pause.labels[LABEL.fieldHashes], sandboxFieldHashes(pod, input.networkMode));
      actions.push({
        action: "recreate-pod",
        reason:
          plan.createSandbox.reason === "changed"
            ? fields
              ? `its sandbox changed: ${fields.join(", ")}`
              : "its sandbox changed (pod-level fields: network, ports, volumes, hostname)"
            : "its sandbox is not running",
        ...(fields && plan.createSandbox.reason === "changed" ? { fields } : {}),
      });
    }
    if (input.sandboxImage)
      pull({ image: input.sandboxImage, imagePullPolicy: "IfNotPresent" }, POD_INFRA_CONTAINER_NAME);
    for (const spec of pod.spec.initContainers ?? [])
      start(spec, true, "start-init-container", "in order, each to completion");
    for (const spec of pod.spec.containers) start(spec, false, "start-container", "new");
  } else {
    for (const kill of plan.containersToKill) {
      const name = kill.container.labels[LABEL.containerName]!;
      if (kill.reason === "NotInSpec")
        actions.push({ action: "remove-container", container: name, reason: "no longer in the pod spec" });
    }
    for (const id of plan.containersToRemove) {
      const c = observed.containers.find((o) => o.id === id);
      const name = c?.labels[LABEL.containerName] ?? id;
      if (!actions.some((a) => a.action === "remove-container" && a.container === name))
        actions.push({ action: "remove-container", container: name, reason: "no longer in the pod spec" });
    }
    for (const { spec, restart, resetBackoff } of plan.initContainersToStart)
      start(
        spec,
        true,
        restart || resetBackoff ? "restart-container" : "start-init-container",
        resetBackoff
          ? "sidecar spec changed"
          : restart
            ? isSidecar(spec)
              ? "sidecar exited (restartPolicy Always)"
              : "it failed"
            : "next in order",
      );
    for (const next of plan.containersToStart) {
      const killed = plan.containersToKill.find((k) => k.reason === "SpecChanged" && k.spec?.name === next.spec.name);
      const dead = observed.containers
        .filter((c) => c.labels[LABEL.containerName] === next.spec.name && !c.running)
        .sort((a, b) => Number(b.labels[LABEL.restartCount] ?? 0) - Number(a.labels[LABEL.restartCount] ?? 0))[0];
      const previous = killed?.container ?? (next.resetBackoff && next.restart ? dead : undefined);
      if (killed?.resize && pending) actions.push(waitForRoom(next.spec.name, killed.message));
      else if (previous && previous.labels[LABEL.containerHash] !== undefined && next.resetBackoff) {
        const fields = changedFields(previous.labels[LABEL.fieldHashes], containerFieldHashes(next.spec));
        pull(next.spec, next.spec.name);
        actions.push({
          action: "replace-container",
          container: next.spec.name,
          image: next.spec.image,
          reason: fields
            ? `spec changed: ${fields.join(", ")}`
            : "spec hash changed (the running container predates per-field hashes)",
          ...(fields ? { fields } : {}),
        });
      } else if (next.restart)
        start(
          next.spec,
          false,
          "restart-container",
          `exited with code ${dead?.exitCode ?? "?"} (restartPolicy ${pod.spec.restartPolicy})`,
        );
      else start(next.spec, false, "start-container", "not running");
    }
  }
  // Resources-only edits applied to the running containers, without a restart — once the node has room for them.
  for (const r of plan.containersToResize)
    actions.push(
      pending
        ? waitForRoom(r.spec.name, describeResize(r.from, r.to))
        : {
            action: "resize-container",
            container: r.spec.name,
            reason: `in place, same container: ${describeResize(r.from, r.to)}`,
          },
    );
  // Dead containers whose restart waits for their back-off: the sync would leave them be for now.
  for (const b of plan.backingOff)
    actions.push({
      action: "wait",
      container: b.name,
      reason: `CrashLoopBackOff: ${b.message} (${Math.ceil(b.waitMs / 1000)}s left)`,
    });
  // Starts that would stop at a missing ConfigMap or Secret.
  if (actions.some((a) => a.action !== "wait")) {
    for (const issue of checkConfigRefs(pod, input.configs).filter((i) => i.severity === "error"))
      actions.push({ action: "wait", reason: formatIssue(issue) });
  }
  return actions;
}
