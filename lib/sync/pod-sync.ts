// One step of the sync loop for one pod: make its containers match its spec once. Sandbox (pause
// container), init containers in order, app containers by restart policy with crash-loop back-off,
// spec-hash replacement, lifecycle hooks, graceful termination and dead-container clean-up.
import { Backoff } from "../node/backoff.ts";
import type { Clock } from "../clock.ts";
import {
  buildContainer,
  buildPauseContainer,
  containerHash,
  podSandboxHash,
  type PodContext,
  type VolumeMount,
} from "../container/container-config.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME, type ContainerDetails, type Runtime } from "../container/runtime.ts";
import type { EventRecorder } from "../node/events.ts";
import type { ImageManager, PullPolicy } from "../node/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { instancesOf, shouldRestart, type Waiting } from "./pod-status.ts";
import { runProbe, type ProbeManager } from "../node/probes.ts";
import { KubeletError, podKey, type Pod, type V1Container } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import type { LifecycleHandler } from "kubernetes-types/core/v1.d.ts";

export interface PodSyncOptions {
  hostname: string;
  hostIP: string;
  networkMode: string;
  pauseImage: string;
  allowPrivileged: boolean;
  maxDeadPerContainer: number;
}

export interface PodSyncDeps {
  runtime: Runtime;
  /** ConfigMaps and Secrets for env, envFrom and volumes. */
  configs: ConfigLookup;
  images: ImageManager;
  volumes: VolumeManager;
  probes?: ProbeManager;
  clock: Clock;
  log: Logger;
  metrics?: KubeletMetrics;
  events: EventRecorder;
}

export interface SyncResult {
  /** Whether the step changed anything on the runtime (so observations must be refreshed). */
  changed: boolean;
  /** Containers that are not running and why (CrashLoopBackOff, ErrImagePull, …). */
  waiting: Map<string, Waiting>;
  /** When the pod should be looked at again (a back-off ends), ms from now. */
  retryAfterMs?: number;
  podIP: string;
}

/** A pod's observed containers: every instance of every container, including dead ones. */
export type Observed = ContainerDetails[];

const TEN_MINUTES = 600_000;

export interface PodSyncer {
  /** Every kubelet container (or one pod's), inspected, grouped by pod uid. */
  observe(podUid?: string): Promise<Map<string, Observed>>;
  /** Drives one pod one step towards its spec. */
  syncPod(pod: Pod, observed: Observed, livenessFailed: ReadonlySet<string>): Promise<SyncResult>;
  /** Stops a pod's containers gracefully (preStop, SIGTERM, then SIGKILL), removes them and its volumes. */
  killPod(podUid: string, observed: Observed, pod?: Pod): Promise<void>;
  /** Removes dead instances beyond the limit. */
  collectGarbage(observed: Observed): Promise<void>;
  /** Forgets back-off state of a removed pod. */
  forget(podUid: string): void;
}

export function createPodSyncer(options: PodSyncOptions, deps: PodSyncDeps): PodSyncer {
  const { clock, log, events } = deps;
  // Counts calls that change containers, so a step can tell whether it did anything.
  let mutations = 0;
  const mutating = new Set(["createContainer", "startContainer", "stopContainer", "removeContainer"]);
  const runtime = new Proxy(deps.runtime, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (mutating.has(key as string)) mutations++;
        return value.apply(target, args);
      };
    },
  });
  const crashBackoff = new Backoff(10_000, 300_000, clock);
  const inspected = new Map<string, ContainerDetails>();
  const volumeCache = new Map<string, { hash: string; paths: Map<string, VolumeMount> }>();
  let node: PodContext["node"] | undefined;

  const nodeInfo = async () =>
    (node ??= await runtime.info().then(
      (i) => ({ cpus: i.cpus, memoryBytes: i.memoryBytes }),
      () => ({ cpus: 1, memoryBytes: 0 }),
    ));

  const observe = async (podUid?: string) => {
    const list = await runtime.listContainers(podUid ? { podUid } : {});
    const byPod = new Map<string, Observed>();
    const live = new Set<string>();
    await Promise.all(
      list.map(async (summary) => {
        // A container's details only change with its state, so inspect once per state.
        const key = `${summary.id}:${summary.state}`;
        live.add(key);
        let details = inspected.get(key);
        if (!details) {
          try {
            details = await runtime.inspectContainer(summary.id);
          } catch (error) {
            if ((error as KubeletError).code === "NotFound") return;
            throw error;
          }
          inspected.set(key, details);
        }
        const uid = summary.labels[LABEL.podUid]!;
        (byPod.get(uid) ?? byPod.set(uid, []).get(uid)!).push(details);
      }),
    );
    if (!podUid) for (const key of inspected.keys()) if (!live.has(key)) inspected.delete(key);
    return byPod;
  };

  const stopContainer = async (pod: Pod | undefined, c: ContainerDetails, graceSeconds: number, reason: string) => {
    const started = clock.now();
    const spec =
      pod &&
      [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find(
        (s) => s.name === c.labels[LABEL.containerName],
      );
    if (pod && c.running && spec?.lifecycle?.preStop) {
      const message = await runHook(spec.lifecycle.preStop, c, pod, graceSeconds * 1000).catch((e: Error) => e.message);
      if (message)
        events.record(
          pod,
          "Warning",
          "FailedPreStopHook",
          `PreStopHook failed: ${message}`,
          `spec.containers{${spec.name}}`,
        );
    }
    if (pod && c.running)
      events.record(
        pod,
        "Normal",
        "Killing",
        `Stopping container ${c.labels[LABEL.containerName]}: ${reason}`,
        `spec.containers{${c.labels[LABEL.containerName]}}`,
      );
    const remaining = Math.max(0, graceSeconds - (clock.now() - started) / 1000);
    deps.probes?.removeContainer(c.id);
    await runtime.stopContainer(c.id, remaining);
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
      handler as never,
      { runtime, containerId: c.id, host },
      Math.max(1000, timeoutMs),
    );
    return result === "success" ? undefined : message;
  };

  const removeAll = async (containers: Observed) => {
    await Promise.all(containers.map((c) => runtime.removeContainer(c.id)));
  };

  /** Creates and starts one container instance; returns why it is not running when it failed. */
  const startContainer = async (
    pod: Pod,
    spec: V1Container,
    ctx: PodContext,
    pause: ContainerDetails,
    attempt: number,
    init: boolean,
  ): Promise<Waiting | undefined> => {
    const field = `spec.${init ? "initContainers" : "containers"}{${spec.name}}`;
    try {
      await deps.images.ensureImage(spec.image!, (spec.imagePullPolicy ?? "IfNotPresent") as PullPolicy, pod);
    } catch (error) {
      const e = error as KubeletError;
      if (e.code === "RuntimeUnavailable") throw error;
      return {
        reason: e.code === "ImagePullBackOff" || e.code === "ErrImageNeverPull" ? e.code : "ErrImagePull",
        message: e.message,
      };
    }
    let id: string;
    try {
      id = await runtime.createContainer(buildContainer(pod, spec, { ...ctx, pauseId: pause.id, attempt, init }));
    } catch (error) {
      if ((error as KubeletError).code === "RuntimeUnavailable") throw error;
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
      if ((error as KubeletError).code === "RuntimeUnavailable") throw error;
      deps.metrics?.containerStarted(init ? "init_container" : "container", true);
      events.record(pod, "Warning", "Failed", `Error: ${(error as Error).message}`, field);
      crashBackoff.next(`${pod.metadata.uid}/${spec.name}`);
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
        return { reason: "PostStartHookError", message: failure };
      }
    }
    return undefined;
  };

  const syncPod = async (pod: Pod, observed: Observed, livenessFailed: ReadonlySet<string>): Promise<SyncResult> => {
    const before = mutations;
    const result = await syncPodStep(pod, observed, livenessFailed);
    return { ...result, changed: mutations !== before };
  };

  const syncPodStep = async (
    pod: Pod,
    observed: Observed,
    livenessFailed: ReadonlySet<string>,
  ): Promise<Omit<SyncResult, "changed">> => {
    const waiting = new Map<string, Waiting>();
    let retryAfterMs: number | undefined;
    const retry = (ms: number) => (retryAfterMs = Math.min(retryAfterMs ?? Infinity, Math.max(50, ms)));
    const grace = pod.spec.terminationGracePeriodSeconds ?? 30;

    // The sandbox: one running pause container whose hash matches the pod-level spec.
    const sandboxHash = podSandboxHash(pod, options.networkMode);
    const pauses = instancesOf(observed, POD_INFRA_CONTAINER_NAME);
    let pause = pauses.find((p) => p.running && p.labels[LABEL.podHash] === sandboxHash);
    let containers = observed.filter((c) => c.labels[LABEL.containerName] !== POD_INFRA_CONTAINER_NAME);
    if (!pause) {
      if (observed.some((c) => c.running)) {
        log.info(`pod ${podKey(pod)}: its sandbox changed or died; recreating the pod`);
        await Promise.all(
          observed
            .filter((c) => c.running && c.labels[LABEL.containerName] !== POD_INFRA_CONTAINER_NAME)
            .map((c) => stopContainer(pod, c, grace, "pod sandbox changed")),
        );
        await Promise.all(observed.filter((c) => c.running).map((c) => runtime.stopContainer(c.id, grace)));
      }
      await removeAll(observed);
      containers = [];
      const attempt = pauses.reduce((n, p) => Math.max(n, Number(p.labels[LABEL.restartCount] ?? 0) + 1), 0);
      try {
        await deps.images.ensureImage(options.pauseImage, "IfNotPresent", pod);
        const body = buildPauseContainer(pod, { ...(await context(pod, "")) });
        body.name = body.name.replace(/_0$/, `_${attempt}`);
        body.Labels[LABEL.restartCount] = String(attempt);
        const id = await runtime.createContainer(body);
        await runtime.startContainer(id);
        deps.metrics?.containerStarted("podsandbox", false);
        pause = await runtime.inspectContainer(id);
      } catch (error) {
        if ((error as KubeletError).code === "RuntimeUnavailable") throw error;
        deps.metrics?.containerStarted("podsandbox", true);
        const message = `cannot start the pod sandbox: ${(error as Error).message}`;
        events.record(pod, "Warning", "FailedCreatePodSandBox", message);
        for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
          waiting.set(c.name, { reason: "CreateContainerConfigError", message });
        retry(10_000);
        return { waiting, retryAfterMs, podIP: "" };
      }
    }
    const podIP = pod.spec.hostNetwork ? options.hostIP : pause.ipAddress;
    let ctx: PodContext;
    try {
      ctx = await context(pod, podIP);
    } catch (error) {
      for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
        waiting.set(c.name, { reason: "CreateContainerConfigError", message: (error as Error).message });
      events.record(pod, "Warning", "FailedMount", (error as Error).message);
      retry(10_000);
      return { waiting, retryAfterMs, podIP };
    }
    const probeHost = pod.spec.hostNetwork ? "127.0.0.1" : podIP;

    // Containers the spec no longer names go first.
    const names = new Set([...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name));
    for (const c of containers.filter((c) => !names.has(c.labels[LABEL.containerName]!))) {
      if (c.running) await stopContainer(pod, c, grace, "no longer in the pod spec");
      await runtime.removeContainer(c.id);
    }

    // Init containers, in order, each to completion, unless app containers already ran in this sandbox.
    const appStarted = pod.spec.containers.some((spec) => instancesOf(containers, spec.name).length > 0);
    if (!appStarted) {
      for (const spec of pod.spec.initContainers ?? []) {
        const [latest] = instancesOf(containers, spec.name);
        if (latest?.running) return { waiting, retryAfterMs, podIP };
        if (latest && latest.exitCode === 0) continue;
        if (latest && !shouldRestart(pod.spec.restartPolicy === "Never" ? "Never" : "OnFailure", latest.exitCode)) {
          return { waiting, retryAfterMs, podIP }; // Never: the pod has failed
        }
        const key = `${pod.metadata.uid}/${spec.name}`;
        const wait = latest ? crashBackoff.remaining(key) : 0;
        if (wait > 0) {
          waiting.set(spec.name, {
            reason: "CrashLoopBackOff",
            message: `back-off ${Math.round(crashBackoff.delay(key) / 1000)}s restarting failed container=${spec.name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
          });
          retry(wait);
          return { waiting, retryAfterMs, podIP };
        }
        if (latest) crashBackoff.next(key);
        const attempt = latest ? Number(latest.labels[LABEL.restartCount] ?? 0) + 1 : 0;
        const failed = await startContainer(pod, spec, ctx, pause, attempt, true);
        if (failed) {
          waiting.set(spec.name, failed);
          retry(failed.reason === "ErrImagePull" ? 1000 : 10_000);
        }
        return { waiting, retryAfterMs, podIP };
      }
    }

    // App containers.
    await Promise.all(
      pod.spec.containers.map(async (spec) => {
        const instances = instancesOf(containers, spec.name);
        const [latest] = instances;
        const key = `${pod.metadata.uid}/${spec.name}`;
        const hash = containerHash(spec);
        if (latest?.running) {
          if (latest.labels[LABEL.containerHash] !== hash) {
            await stopContainer(pod, latest, grace, "its spec changed");
            crashBackoff.reset(key);
          } else if (livenessFailed.has(latest.id)) {
            await stopContainer(pod, latest, grace, "it failed its liveness probe");
            if (!shouldRestart(pod.spec.restartPolicy, 1)) return;
          } else {
            deps.probes?.addContainer(
              pod,
              spec,
              latest.id,
              Date.parse(latest.startedAt ?? "") || clock.now(),
              probeHost,
            );
            return;
          }
        } else if (latest) {
          const changed = latest.labels[LABEL.containerHash] !== hash;
          if (!changed && !shouldRestart(pod.spec.restartPolicy, latest.exitCode)) return;
          const ran = Date.parse(latest.finishedAt ?? "") - Date.parse(latest.startedAt ?? "");
          if (ran >= TEN_MINUTES || changed) crashBackoff.reset(key);
          const wait = crashBackoff.remaining(key);
          if (wait > 0) {
            waiting.set(spec.name, {
              reason: "CrashLoopBackOff",
              message: `back-off ${Math.round(crashBackoff.delay(key) / 1000)}s restarting failed container=${spec.name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
            });
            events.record(
              pod,
              "Warning",
              "BackOff",
              "Back-off restarting failed container",
              `spec.containers{${spec.name}}`,
            );
            retry(wait);
            return;
          }
          crashBackoff.next(key);
          deps.metrics?.containerRestarted();
        }
        const attempt = latest ? Number(latest.labels[LABEL.restartCount] ?? 0) + 1 : 0;
        const failed = await startContainer(pod, spec, ctx, pause!, attempt, false);
        if (failed) {
          waiting.set(spec.name, failed);
          retry(failed.reason === "ErrImagePull" ? 1000 : failed.reason === "ImagePullBackOff" ? 5000 : 10_000);
        }
      }),
    );
    return { waiting, retryAfterMs, podIP };
  };

  const context = async (pod: Pod, podIP: string): Promise<PodContext> => {
    const hash = deps.volumes.version(pod);
    let volumes = volumeCache.get(pod.metadata.uid);
    if (!volumes || volumes.hash !== hash) {
      volumes = { hash, paths: await deps.volumes.setup(pod, await nodeInfo()) };
      volumeCache.set(pod.metadata.uid, volumes);
    }
    return {
      nodeName: options.hostname,
      hostIP: options.hostIP,
      podIP,
      networkMode: options.networkMode,
      pauseImage: options.pauseImage,
      allowPrivileged: options.allowPrivileged,
      volumePaths: volumes.paths,
      node: await nodeInfo(),
      configs: deps.configs,
    };
  };

  return {
    observe,
    syncPod,
    async killPod(podUid, observed, pod) {
      const grace =
        pod?.spec.terminationGracePeriodSeconds ?? Number(observed[0]?.labels[LABEL.terminationGracePeriod] ?? 30);
      const apps = observed.filter((c) => c.running && c.labels[LABEL.containerName] !== POD_INFRA_CONTAINER_NAME);
      await Promise.all(apps.map((c) => stopContainer(pod, c, grace, "the pod was removed from its source")));
      await Promise.all(
        observed
          .filter((c) => c.running && c.labels[LABEL.containerName] === POD_INFRA_CONTAINER_NAME)
          .map((c) => runtime.stopContainer(c.id, 2)),
      );
      await removeAll(observed);
      deps.probes?.removePod(podUid);
      volumeCache.delete(podUid);
      await deps.volumes.teardown(podUid);
      crashBackoff.resetWhere((key) => key.startsWith(`${podUid}/`));
    },
    async collectGarbage(observed) {
      const byName = new Map<string, ContainerDetails[]>();
      for (const c of observed)
        if (!c.running)
          (
            byName.get(c.labels[LABEL.containerName]!) ??
            byName.set(c.labels[LABEL.containerName]!, []).get(c.labels[LABEL.containerName]!)!
          ).push(c);
      const extra = [...byName.values()].flatMap((dead) =>
        dead
          .sort((a, b) => Number(b.labels[LABEL.restartCount] ?? 0) - Number(a.labels[LABEL.restartCount] ?? 0))
          .slice(Math.max(0, options.maxDeadPerContainer)),
      );
      await removeAll(extra);
    },
    forget(podUid) {
      volumeCache.delete(podUid);
      crashBackoff.resetWhere((key) => key.startsWith(`${podUid}/`));
    },
  };
}
