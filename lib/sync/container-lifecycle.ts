// One container's start (pull, create, start, postStart) and stop (preStop, grace period, kill), as kuberuntime does.
import { untilAborted, type Clock } from "../clock.ts";
import {
  containerConfig,
  podSandboxConfig,
  resolveEnv,
  type ContainerDeviceOptions,
  type PodContext,
} from "../container/container-config.ts";
import {
  LABEL,
  type ContainerDetails,
  type ImageStatus,
  type PodSandboxDetails,
  type Runtime,
  isRuntimeError,
} from "../container/runtime.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { ImageManager, PullPolicy } from "../node/images/images.ts";
import type { KubeletMetrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { ignoredSigtermMessage, stopContainerTimed } from "../container/timed-stop.ts";
import { runProbe, type ProbeManager } from "../node/prober/probes.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import { subPathHostPaths } from "../node/volumes/subpath.ts";
import { KubeletError, type Pod, type V1Container } from "../api/types.ts";
import type { LifecycleHandler } from "kubernetes-types/core/v1.d.ts";
import type { ContainerToKill, ContainerToStart } from "./pod-plan.ts";
import type { Waiting } from "./pod-status.ts";

export interface ContainerLifecycleDeps {
  runtime: Runtime;
  images: Pick<ImageManager, "ensureImage">;
  volumes: Pick<VolumeManager, "terminationLog">;
  probes?: Pick<ProbeManager, "removeContainer">;
  clock: Clock;
  metrics?: Pick<KubeletMetrics, "containerStarted">;
  events: EventRecorder;
  /** Where a container of a pod known only from the runtime (no event to record) that ignored SIGTERM is reported. */
  log?: Pick<Logger, "warn">;
  /** A running container is being stopped (before its preStop hook and grace period): it is no longer ready. */
  onStopping?(container: ContainerDetails): void;
  /** The cgroup v2 files a container gets beyond its limits (node/cm/memory-qos.ts); absent = none. */
  containerUnified?(container: V1Container): Record<string, string>;
  /** The device manager: what a container gets from its device plugins (Allocate on its first start). */
  devices?: ContainerDevices;
}

/** What a container gets from its device plugins (GetDeviceRunContainerOptions); undefined when it asks for none. */
export interface ContainerDevices {
  runContainerOptions(pod: Pod, container: V1Container): Promise<ContainerDeviceOptions | undefined>;
}

export interface ContainerLifecycle {
  /**
   * Creates and starts one container instance in `sandbox`; returns why it is not running when it failed (undefined
   * too when `signal` aborted its image pull). Counts in `done` what it created and killed.
   */
  start(
    pod: Pod,
    start: ContainerToStart,
    ctx: PodContext,
    sandbox: PodSandboxDetails,
    done: { created: number; killed: number },
    signal: AbortSignal,
  ): Promise<Waiting | undefined>;
  /**
   * Stops one container: its preStop hook within the grace period, the Killing event, then SIGTERM/SIGKILL; one that
   * waited out its grace period and was killed is reported (a log line and an IgnoredSIGTERM event).
   */
  stop(pod: Pod | undefined, kill: ContainerToKill, graceSeconds: number): Promise<void>;
}

/**
 * Containers started and stopped as the executor's plan asks (the Go kubelet's kuberuntime_container.go), with the
 * events and the waiting reasons (ErrImagePull, CreateContainerError, RunContainerError, PostStartHookError) they
 * come to.
 */
export function createContainerLifecycle(deps: ContainerLifecycleDeps): ContainerLifecycle {
  const { runtime, clock, events } = deps;

  /** Stops one container: its preStop hook within the grace period, the Killing event, then SIGTERM/SIGKILL. */
  const stopContainer = async (pod: Pod | undefined, kill: ContainerToKill, graceSeconds: number) => {
    const { container: c, spec } = kill;
    const started = clock.now();
    const field = `spec.${c.labels[LABEL.initContainer] === "true" ? "initContainers" : "containers"}{${c.labels[LABEL.containerName]}}`;
    // From here on the container is not ready (the Go kubelet's), while it waits out its preStop and grace period.
    deps.probes?.removeContainer(c.id);
    deps.onStopping?.(c);
    if (pod && spec?.lifecycle?.preStop) {
      const message = await runHook(spec.lifecycle.preStop, c, pod, graceSeconds * 1000).catch((e: Error) => e.message);
      if (message) events.record(pod, "Warning", "FailedPreStopHook", `PreStopHook failed: ${message}`, field);
    }
    if (pod) events.record(pod, "Normal", "Killing", kill.message, field, `grace period ${graceSeconds}s`);
    const remaining = Math.max(0, graceSeconds - (clock.now() - started) / 1000);
    const { ignoredSigterm } = await stopContainerTimed(runtime, clock, c.id, remaining);
    if (!ignoredSigterm) return;
    // Every stop of such a pod (each edit of its manifest) waits out the grace period: said at each, once. The
    // event is the log line (the recorder logs Warning events); a pod known only from the runtime gets a line.
    const message = ignoredSigtermMessage(c.labels[LABEL.containerName] ?? c.name, graceSeconds);
    const why = "its PID 1 does not exit on SIGTERM; see docs/behaviour.md";
    if (pod) events.record(pod, "Warning", "IgnoredSIGTERM", message, field, why);
    else deps.log?.warn(`${c.labels[LABEL.podNamespace]}/${c.labels[LABEL.podName]}: ${message} (${why})`);
  };

  const runHook = async (
    handler: LifecycleHandler,
    c: ContainerDetails,
    pod: Pod,
    timeoutMs: number,
  ): Promise<string | undefined> => {
    if (handler.sleep) {
      await clock.sleep(Math.min(handler.sleep.seconds * 1000, timeoutMs));
      return undefined;
    }
    const host = pod.spec.hostNetwork ? "127.0.0.1" : c.ipAddress;
    const { result, message } = await runProbe(
      handler,
      { runtime, containerId: c.id, host },
      Math.max(1000, timeoutMs),
    );
    return result === "success" ? undefined : message;
  };

  /** Creates and starts one container instance; returns why it is not running when it failed. */
  const startContainer = async (
    pod: Pod,
    { spec, attempt, init }: ContainerToStart,
    ctx: PodContext,
    sandbox: PodSandboxDetails,
    done: { created: number; killed: number },
    signal: AbortSignal,
  ): Promise<Waiting | undefined> => {
    const field = `spec.${init ? "initContainers" : "containers"}{${spec.name}}`;
    let image: ImageStatus | undefined;
    try {
      image = await pulled(spec.image!, (spec.imagePullPolicy ?? "IfNotPresent") as PullPolicy, pod, signal);
      if (!image) return undefined;
    } catch (error) {
      const e = error as KubeletError;
      if (isRuntimeError(e, "RuntimeUnavailable")) throw error;
      return {
        reason: e.code === "ImagePullBackOff" || e.code === "ErrImageNeverPull" ? e.code : "ErrImagePull",
        message: e.message,
      };
    }
    let id: string;
    try {
      const terminationLog = spec.terminationMessagePath
        ? await deps.volumes.terminationLog(pod.metadata.uid, spec.name, attempt)
        : undefined;
      // A plugin that cannot allocate or prepare the devices fails the config, as GenerateRunContainerOptions does.
      const devices = await deps.devices?.runContainerOptions(pod, spec).catch((error: Error) => {
        throw new KubeletError("CreateContainerConfigError", error.message);
      });
      const config = containerConfig(pod, spec, {
        ...ctx,
        ...(devices ? { devices } : {}),
        subPaths: await subPathHostPaths(spec, resolveEnv(pod, spec, ctx), ctx.volumePaths),
        attempt,
        init,
        terminationLog,
        imageUser: image,
      });
      const unified = deps.containerUnified?.(spec);
      if (unified && Object.keys(unified).length && config.linux?.resources)
        config.linux.resources.unified = { ...config.linux.resources.unified, ...unified };
      id = await runtime.createContainer(sandbox.id, config, podSandboxConfig(pod, ctx, sandbox.metadata.attempt));
      done.created++;
    } catch (error) {
      if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
      if ((error as KubeletError).code === "CreateContainerConfigError") {
        // Not the container's fault: no crash back-off; the pod is synced again when the object appears.
        events.record(pod, "Warning", "Failed", `Error: ${(error as Error).message}`, field);
        return { reason: "CreateContainerConfigError", message: (error as Error).message };
      }
      deps.metrics?.containerStarted(init ? "init_container" : "container", true);
      events.record(pod, "Warning", "Failed", `Error: ${(error as Error).message}`, field);
      return { reason: "CreateContainerError", message: (error as Error).message };
    }
    events.record(pod, "Normal", "Created", `Created container ${spec.name}`, field);
    try {
      await runtime.startContainer(id);
    } catch (error) {
      if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
      deps.metrics?.containerStarted(init ? "init_container" : "container", true);
      events.record(pod, "Warning", "Failed", `Error: ${(error as Error).message}`, field);
      return { reason: "RunContainerError", message: (error as Error).message };
    }
    deps.metrics?.containerStarted(init ? "init_container" : "container", false);
    events.record(pod, "Normal", "Started", `Started container ${spec.name}`, field);
    if (spec.lifecycle?.postStart) {
      const started = await runtime.inspectContainer(id);
      const failure = await runHook(spec.lifecycle.postStart, started, pod, 30_000).catch((e: Error) => e.message);
      if (failure) {
        events.record(pod, "Warning", "FailedPostStartHook", `PostStartHook failed: ${failure}`, field);
        await runtime.stopContainer(id, pod.spec.terminationGracePeriodSeconds ?? 30);
        done.killed++;
        return { reason: "PostStartHookError", message: failure };
      }
    }
    return undefined;
  };

  /** The status of an image present for the pod: undefined when its sync was cancelled first (the pull goes on, unobserved). */
  const pulled = (image: string, policy: PullPolicy, pod: Pod, signal: AbortSignal) =>
    untilAborted(deps.images.ensureImage(image, policy, pod), signal);

  return { start: startContainer, stop: stopContainer };
}
