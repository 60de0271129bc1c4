// The executor of the sync: carries one pod's plan (computePodActions, pod-plan.ts, pure) out on the Runtime port —
// image pulls, the pod's host setup (volumes, cgroup, resolv.conf), CRI sandbox and container configs, lifecycle
// hooks, graceful termination, events, back-off bookkeeping and OOM kill reports. What it acts on comes from the
// observer (pod-observer.ts); dead containers are collected by node/container-gc.ts.
import { Backoff, type BackoffPersistence } from "../node/flowcontrol/backoff.ts";
import { type Clock, untilAborted } from "../clock.ts";
import {
  containerConfig,
  podSandboxConfig,
  resolveEnv,
  runtimeHandler,
  type PodContext,
  type VolumeMount,
} from "../container/container-config.ts";
import {
  LABEL,
  type ContainerDetails,
  type ImageStatus,
  type LinuxResources,
  type PodSandboxDetails,
  type Runtime,
  isRuntimeError,
} from "../container/runtime.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { ImageManager, PullPolicy } from "../node/images/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import type { ResizeStatus, Waiting } from "./pod-status.ts";
import { describeResize, type ContainerResize } from "./pod-resize.ts";
import { resizeEventMessage } from "./pod-allocation.ts";
import {
  computePodActions,
  type ContainerToKill,
  type ContainerToStart,
  type Observed,
  type PodActions,
  type ProbeFailure,
} from "./pod-plan.ts";
import { runProbe, type ProbeManager } from "../node/prober/probes.ts";
import { KubeletError, podKey, type Pod } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { DnsConfigurer } from "../node/network/dns.ts";
import type { LifecycleHandler } from "kubernetes-types/core/v1.d.ts";
import type { SeccompSettings } from "../container/security-context.ts";
import { subPathHostPaths } from "../node/volumes/subpath.ts";

export interface PodExecutorOptions {
  hostname: string;
  hostIP: string;
  networkMode: string;
  /** --pod_logs_dir, where a CRI runtime writes container logs; see PodContext. */
  podLogsDir?: string;
  allowPrivileged: boolean;
  /** See PodContext: the oom_score_adj floor and the CFS quota settings. */
  oomScoreAdjMin?: number;
  cfsQuota?: boolean;
  cfsPeriodUs?: number;
  /** seccompDefault and the root of Localhost seccomp profiles. */
  seccomp?: SeccompSettings;
  /** runtimeClassName → CRI runtime handler (--runtime_handlers); a class not listed is its own handler. */
  runtimeHandlers?: Record<string, string>;
}

export interface PodExecutorDeps {
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
  /** Pod cgroups (cgroupsPerQOS); absent = Docker's default cgroup. */
  cgroups?: Pick<CgroupManager, "ensurePod" | "removePod" | "resizePod">;
  /** Pod resolv.conf files; absent = Docker's own resolv.conf. */
  dns?: DnsConfigurer;
  /** Keeps the crash-loop back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
  /** A running container is being stopped (before its preStop hook and grace period): it is no longer ready. */
  onStopping?(container: ContainerDetails): void;
}

export interface SyncResult {
  /** Whether the step changed anything on the runtime (so observations must be refreshed). */
  changed: boolean;
  /** Containers that are not running and why (CrashLoopBackOff, ErrImagePull, …). */
  waiting: Map<string, Waiting>;
  /** When the pod should be looked at again (a back-off ends), ms from now. */
  retryAfterMs?: number;
  podIP: string;
  /** A resize that is not (fully) applied, and why: the pod's PodResizePending or PodResizeInProgress condition. */
  resize?: ResizeStatus;
  /** Containers resized in place: their inspection is stale (their state did not change), ask them afresh. */
  resized?: string[];
}

export interface PodExecutor {
  /**
   * Drives one pod one step towards its spec, from what the observer saw of it. When `signal` aborts (the pod is
   * to stop), an image pull still in flight is no longer waited for and nothing more is created.
   */
  syncPod(
    pod: Pod,
    observed: Observed,
    livenessFailed: ReadonlyMap<string, ProbeFailure>,
    signal?: AbortSignal,
  ): Promise<SyncResult>;
  /** Stops a pod's containers gracefully (preStop, SIGTERM, then SIGKILL), removes them and its volumes. */
  killPod(podUid: string, observed: Observed, pod?: Pod): Promise<void>;
  /** Forgets back-off state of a removed pod. */
  forget(podUid: string): void;
}

export function createPodExecutor(options: PodExecutorOptions, deps: PodExecutorDeps): PodExecutor {
  const { clock, log, events } = deps;
  const { runtime } = deps;
  const crashBackoff = new Backoff(10_000, 300_000, clock, deps.backoffPersistence);
  /** Containers whose OOM kill has been reported, per pod. */
  const oomReported = new Map<string, Set<string>>();
  const reportOom = (pod: Pod, c: ContainerDetails) => {
    const seen =
      oomReported.get(pod.metadata.uid) ?? oomReported.set(pod.metadata.uid, new Set()).get(pod.metadata.uid)!;
    if (seen.has(c.id)) return;
    seen.add(c.id);
    const name = c.labels[LABEL.containerName]!;
    const spec = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((s) => s.name === name);
    const limit = spec?.resources?.limits?.memory;
    events.record(
      pod,
      "Warning",
      "OOMKilling",
      `Memory cgroup out of memory: container ${name} was killed${limit !== undefined ? ` at its memory limit ${limit}` : ""} (exit code ${c.exitCode})`,
      `spec.${c.labels[LABEL.initContainer] ? "initContainers" : "containers"}{${name}}`,
    );
  };
  const volumeCache = new Map<string, { hash: string; paths: Map<string, VolumeMount> }>();
  let node: PodContext["node"] | undefined;

  // Only an answer is cached: a failed machineInfo() (Docker restarting) fails this sync, and the next asks again,
  // so no pod's resource fieldRefs are computed from a made-up node.
  const nodeInfo = async () => {
    if (!node) {
      const info = await runtime.machineInfo().catch((error: KubeletError) => {
        throw new KubeletError(error.code ?? "RuntimeError", `cannot read the node's capacity: ${error.message}`, {
          cause: error,
        });
      });
      node = { cpus: info.cpus, memoryBytes: info.memoryBytes };
    }
    return node;
  };

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
    done: Done,
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
      id = await runtime.createContainer(
        sandbox.id,
        containerConfig(pod, spec, {
          ...ctx,
          subPaths: await subPathHostPaths(spec, resolveEnv(pod, spec, ctx), ctx.volumePaths),
          attempt,
          init,
          terminationLog,
          imageUser: image,
        }),
        podSandboxConfig(pod, ctx, sandbox.metadata.attempt),
      );
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
        done.killed++;
        return { reason: "PostStartHookError", message: failure };
      }
    }
    return undefined;
  };

  /** Carries a plan out: kills, then removals, the sandbox, then starts; reports what it did. */
  const execute = async (
    pod: Pod | undefined,
    plan: PodActions,
    done: Done,
    signal: AbortSignal,
  ): Promise<Omit<SyncResult, "changed">> => {
    const waiting = new Map<string, Waiting>();
    let retryAfterMs: number | undefined;
    const retry = (ms: number) => (retryAfterMs = Math.min(retryAfterMs ?? Infinity, Math.max(50, ms)));
    if (pod && plan.createSandbox && plan.containersToKill.length)
      log.info(`pod ${podKey(pod)}: its sandbox changed or died; recreating the pod`);
    // Regular containers stop together; sidecars after them, one at a time, within what is left of the grace period.
    const deadline = clock.now() + plan.graceSeconds * 1000;
    const kill = async (k: ContainerToKill, graceSeconds: number) => {
      await stopContainer(pod, k, graceSeconds);
      if (k.reason === "SpecChanged") crashBackoff.reset(`${k.container.labels[LABEL.podUid]}/${k.spec!.name}`);
      done.killed++;
    };
    await Promise.all(plan.containersToKill.filter((k) => !k.sidecar).map((k) => kill(k, plan.graceSeconds)));
    for (const k of plan.containersToKill.filter((k) => k.sidecar))
      await kill(k, Math.max(MIN_GRACE_SECONDS, (deadline - clock.now()) / 1000));
    await Promise.all(
      plan.sandboxesToStop.map(async (c) => {
        await runtime.stopPodSandbox(c.id);
        done.killed++;
      }),
    );
    await Promise.all(
      plan.containersToRemove.map(async (id) => {
        await runtime.removeContainer(id);
        done.removed++;
      }),
    );
    await Promise.all(
      plan.sandboxesToRemove.map(async (id) => {
        await runtime.removePodSandbox(id);
        done.removed++;
      }),
    );
    // A deleted pod's plan has neither a sandbox to keep nor one to create: the kills were all of it.
    if (!pod || (!plan.sandbox && !plan.createSandbox)) return { waiting, podIP: "" };

    const starts = [...plan.initContainersToStart, ...plan.containersToStart];
    // Resource fieldRefs need the node's capacity: without it nothing is created, and the sync is retried.
    if (plan.createSandbox || starts.length) await nodeInfo();
    // The pod's host setup, once per sync that creates anything: the sandbox and the containers share it.
    let host: PodContext | undefined;
    if (plan.createSandbox || starts.length) {
      try {
        host = await preparePodHost(pod);
      } catch (error) {
        if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
        for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
          waiting.set(c.name, { reason: "CreateContainerConfigError", message: (error as Error).message });
        events.record(pod, "Warning", "FailedMount", (error as Error).message);
        retry(10_000);
        return { waiting, retryAfterMs, podIP: "" };
      }
    }
    let sandbox = plan.sandbox;
    if (plan.createSandbox) {
      try {
        sandbox = await createSandbox(pod, host!, plan.createSandbox.attempt, done);
      } catch (error) {
        if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
        deps.metrics?.containerStarted("podsandbox", true);
        // The Go kubelet's words; its containers keep their default waiting reason (ContainerCreating, or
        // PodInitializing with init containers): no container was at fault.
        events.record(
          pod,
          "Warning",
          "FailedCreatePodSandBox",
          `Failed to create pod sandbox: ${(error as Error).message}`,
        );
        retry(10_000);
        return { waiting, retryAfterMs, podIP: "" };
      }
    }
    const podIP = pod.spec.hostNetwork ? options.hostIP : sandbox!.ipAddress;

    for (const b of plan.backingOff) {
      waiting.set(b.name, { reason: "CrashLoopBackOff", message: b.message });
      events.record(
        pod,
        "Warning",
        "BackOff",
        "Back-off restarting failed container",
        `spec.${b.init ? "initContainers" : "containers"}{${b.name}}`,
      );
      retry(b.waitMs);
    }
    const resize = plan.containersToResize.length
      ? await resizeContainers(pod, plan.containersToResize, done)
      : undefined;
    if (resize) retry(RESIZE_RETRY_MS);
    const probeHost = pod.spec.hostNetwork ? "127.0.0.1" : podIP;
    for (const { spec, container } of plan.containersToKeep)
      deps.probes?.addContainer(
        pod,
        spec,
        container.id,
        Date.parse(container.startedAt ?? "") || clock.now(),
        probeHost,
      );
    if (!host) {
      // Running containers see their ConfigMap, Secret and downward API files follow changes, without a restart.
      if (plan.sandbox)
        await mountVolumes(pod).catch((error: Error) => {
          if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
          events.record(pod, "Warning", "FailedMount", error.message);
          retry(10_000);
        });
      return { waiting, retryAfterMs, podIP, ...(resize ? { resize } : {}) };
    }
    // The pod's /etc/hosts carries its IP, known once the sandbox runs.
    const ctx: PodContext = {
      ...host,
      podIP,
      ...(deps.dns ? { hostsPath: await deps.dns.hostsFileFor(pod, podIP) } : {}),
    };
    const start = async (start: ContainerToStart) => {
      const key = `${pod.metadata.uid}/${start.spec.name}`;
      if (start.resetBackoff) crashBackoff.reset(key);
      if (start.restart) {
        crashBackoff.next(key);
        deps.metrics?.containerRestarted();
      }
      const failed = await startContainer(pod, start, ctx, sandbox!, done, signal);
      if (failed) {
        waiting.set(start.spec.name, failed);
        retry(failed.reason === "ErrImagePull" ? 1000 : failed.reason === "ImagePullBackOff" ? 5000 : 10_000);
      }
    };
    // Init containers one after the other, in spec order (sidecars before what follows them); then the app's together.
    for (const init of plan.initContainersToStart) await start(init);
    await Promise.all(plan.containersToStart.map(start));
    return { waiting, retryAfterMs, podIP, ...(resize ? { resize } : {}) };
  };

  /**
   * Applies resizes to running containers, the pod cgroup grown before them and set to its new size after them (the
   * Go kubelet's order). The pod comes with its allocated resources (the sync loop decides whether a resize fits the
   * node: Deferred, Infeasible). A memory limit below what the container uses now is left as it is, the rest applied
   * (PodResizeInProgress, Error, in the Go kubelet's words).
   */
  const resizeContainers = async (
    pod: Pod,
    resizes: ContainerResize[],
    done: Done,
  ): Promise<ResizeStatus | undefined> => {
    const refused: string[] = [];
    const updates: Array<[ContainerResize, LinuxResources]> = [];
    for (const r of resizes) {
      let to = r.to;
      if (r.resources.includes("memory") && to.memory_limit_in_bytes < r.from.memory_limit_in_bytes) {
        const usage = (await runtime.stats(r.container.id)).memoryWorkingSetBytes;
        if (usage > to.memory_limit_in_bytes) {
          refused.push(
            `attempting to set container "${r.spec.name}" memory limit (${to.memory_limit_in_bytes}) below current usage (${usage})`,
          );
          to = { ...to, memory_limit_in_bytes: r.from.memory_limit_in_bytes };
        }
      }
      updates.push([r, to]);
    }
    // One refusal as it is, several as a list (the Go kubelet's aggregated errors).
    const blocked = refused.length
      ? `cannot decrease memory limits: ${refused.length === 1 ? refused[0] : `[${refused.join(", ")}]`}`
      : undefined;
    await deps.cgroups?.resizePod(pod, "grow");
    for (const [r, to] of updates) {
      await runtime.updateContainerResources(r.container.id, to);
      log.info(`pod ${podKey(pod)}: resized container ${r.spec.name} in place (${describeResize(r.from, to)})`);
      done.resized.push(r.container.id);
    }
    // While a decrease waits, the pod cgroup keeps room for what its container still has.
    if (!blocked) await deps.cgroups?.resizePod(pod, "final");
    if (blocked) events.record(pod, "Warning", "ResizeError", resizeEventMessage("Pod resize error", pod, blocked));
    else events.record(pod, "Normal", "ResizeCompleted", resizeEventMessage("Pod resize completed", pod));
    return blocked ? { type: "PodResizeInProgress", reason: "Error", message: blocked } : undefined;
  };

  /** The status of an image present for the pod: undefined when its sync was cancelled first (the pull goes on, unobserved). */
  const pulled = (image: string, policy: PullPolicy, pod: Pod, signal: AbortSignal) =>
    untilAborted(deps.images.ensureImage(image, policy, pod), signal);

  /**
   * Runs the pod's sandbox. Its image is the runtime's (containerd's sandbox_image, the Docker shim's
   * --network_container_image): the runtime pulls it, never the kubelet (as the Go kubelet; the dockershim's
   * ensureSandboxImageExists).
   */
  const createSandbox = async (pod: Pod, host: PodContext, attempt: number, done: Done): Promise<PodSandboxDetails> => {
    const id = await runtime.runPodSandbox(
      podSandboxConfig(pod, host, attempt),
      runtimeHandler(pod, options.runtimeHandlers),
    );
    done.created++;
    deps.metrics?.containerStarted("podsandbox", false);
    return runtime.podSandboxStatus(id);
  };

  const forget = (podUid: string) => {
    volumeCache.delete(podUid);
    oomReported.delete(podUid);
    crashBackoff.resetWhere((key) => key.startsWith(`${podUid}/`));
  };

  const planFor = (
    pod: Pod | undefined,
    observed: Observed,
    livenessFailed: ReadonlyMap<string, ProbeFailure>,
    deleted: boolean,
  ) =>
    computePodActions({
      pod,
      deleted,
      observed,
      networkMode: options.networkMode,
      livenessFailed,
      startupPassed: (id) => deps.probes?.isStarted(id) ?? true,
      resize: { cfsQuota: options.cfsQuota, cfsPeriodUs: options.cfsPeriodUs },
      backoff: crashBackoff,
      now: clock.now(),
    });

  const syncPod = async (
    pod: Pod,
    observed: Observed,
    livenessFailed: ReadonlyMap<string, ProbeFailure>,
    signal = new AbortController().signal,
  ): Promise<SyncResult> => {
    for (const c of observed.containers) if (c.oomKilled && !c.running) reportOom(pod, c);
    const done = noneDone();
    const result = await execute(pod, planFor(pod, observed, livenessFailed, false), done, signal);
    return { ...result, changed: changed(done), ...(done.resized.length ? { resized: done.resized } : {}) };
  };

  /** Sets a pod's volumes up, and rewrites them whenever what they hold changed (a ConfigMap edit, a label). */
  const mountVolumes = async (pod: Pod) => {
    const hash = deps.volumes.version(pod);
    let volumes = volumeCache.get(pod.metadata.uid);
    if (!volumes || volumes.hash !== hash) {
      volumes = { hash, paths: await deps.volumes.setup(pod, await nodeInfo()) };
      volumeCache.set(pod.metadata.uid, volumes);
    }
    return volumes;
  };

  /**
   * Prepares the node for a pod: mounts its volumes, creates its pod cgroup and writes its resolv.conf (its
   * /etc/hosts follows with the pod's IP); returns the
   * context its sandbox and containers are configured from (podIP still empty: the sandbox gives it).
   */
  const preparePodHost = async (pod: Pod): Promise<PodContext> => {
    const volumes = await mountVolumes(pod);
    return {
      nodeName: options.hostname,
      hostIP: options.hostIP,
      podIP: "",
      networkMode: options.networkMode,
      ...(options.podLogsDir ? { podLogsDir: options.podLogsDir } : {}),
      allowPrivileged: options.allowPrivileged,
      volumePaths: volumes.paths,
      node: await nodeInfo(),
      configs: deps.configs,
      ...(deps.cgroups ? { cgroupParent: await deps.cgroups.ensurePod(pod) } : {}),
      ...(deps.dns
        ? {
            resolvConfPath: await deps.dns.resolvConfFor(pod),
            clusterDomain: deps.dns.clusterDomain,
          }
        : {}),
      oomScoreAdjMin: options.oomScoreAdjMin,
      cfsQuota: options.cfsQuota,
      cfsPeriodUs: options.cfsPeriodUs,
      ...(options.seccomp ? { seccomp: options.seccomp } : {}),
    };
  };

  return {
    syncPod,
    async killPod(podUid, observed, pod) {
      await execute(pod, planFor(pod, observed, new Map(), true), noneDone(), new AbortController().signal);
      deps.probes?.removePod(podUid);
      forget(podUid);
      deps.dns?.forget(podUid);
      await deps.volumes.teardown(podUid);
      await deps.cgroups?.removePod(podUid);
    },
    forget,
  };
}

/** Seconds a sidecar gets to stop at least, when the regular containers used up the grace period (the Go kubelet's). */
const MIN_GRACE_SECONDS = 2;

/** What one executed plan did on the runtime. */
interface Done {
  created: number;
  killed: number;
  removed: number;
  /** Ids of the containers resized in place. */
  resized: string[];
}

/** A resize not fully applied is tried again this often (a container's memory use may come down). */
const RESIZE_RETRY_MS = 10_000;

const noneDone = (): Done => ({ created: 0, killed: 0, removed: 0, resized: [] });
const changed = (done: Done) => done.created + done.killed + done.removed + done.resized.length > 0;
