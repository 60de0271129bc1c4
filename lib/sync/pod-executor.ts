// The executor of the sync: carries one pod's plan (computePodActions, pod-plan.ts, pure) out on the Runtime port, in
// order — kills (sidecars last), removals, the pod's host setup (pod-host.ts), its sandbox, in-place resizes, then
// container starts (container-lifecycle.ts: pulls, hooks, graceful stops) — with the events, back-off bookkeeping and
// OOM kill reports that go with them. What it acts on comes from the observer (pod-observer.ts); dead containers are
// collected by node/gc/container-gc.ts.
import { Backoff, crashLoopPeriods, type BackoffPersistence } from "../node/flowcontrol/backoff.ts";
import type { Clock } from "../clock.ts";
import { podSandboxConfig, runtimeHandler, type PodContext } from "../container/container-config.ts";
import {
  LABEL,
  type ContainerDetails,
  type PodSandboxDetails,
  type Runtime,
  isRuntimeError,
} from "../container/runtime.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { ImageManager } from "../node/images/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import type { ResizeStatus, Waiting } from "./pod-status.ts";
import {
  computePodActions,
  type ContainerToKill,
  type ContainerToStart,
  type Observed,
  type PodActions,
  type ProbeFailure,
} from "./pod-plan.ts";
import type { ProbeManager } from "../node/prober/probes.ts";
import { podKey, type Pod } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { DnsConfigurer } from "../node/network/dns.ts";
import { createPodHost, type PodHostOptions } from "./pod-host.ts";
import { createContainerLifecycle, type ContainerDevices, type ContainerLifecycleDeps } from "./container-lifecycle.ts";
import { createContainerResizer } from "./container-resize.ts";

export interface PodExecutorOptions extends PodHostOptions {
  /** runtimeClassName → CRI runtime handler (--runtime_handlers); a class not listed is its own handler. */
  runtimeHandlers?: Record<string, string>;
  /** crashLoopBackOff.maxContainerRestartPeriod (ms): the crash-loop back-off's cap; 300 s when absent. */
  maxContainerRestartMs?: number;
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
  /** The CPU and memory managers' cpusets for a container; absent = unpinned. */
  cpusets?: (podUid: string, containerName: string) => { cpus?: string; mems?: string };
  /** Keeps the crash-loop back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
  /** A running container is being stopped (before its preStop hook and grace period): it is no longer ready. */
  onStopping?(container: ContainerDetails): void;
  /** The device manager's run options for each container. */
  devices?: ContainerDevices;
  /** The cgroup v2 files a container gets beyond its limits (memory.oom.group, MemoryQoS). */
  containerUnified?: ContainerLifecycleDeps["containerUnified"];
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
  const periods = crashLoopPeriods(options.maxContainerRestartMs);
  const crashBackoff = new Backoff(periods.initialMs, periods.maxMs, clock, deps.backoffPersistence);
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
  const podHost = createPodHost(options, deps);
  const containers = createContainerLifecycle(deps);
  const resizeContainers = createContainerResizer(deps);
  const { nodeInfo, mountVolumes } = podHost;

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
      await containers.stop(pod, k, graceSeconds);
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
        host = await podHost.prepare(pod);
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
      const failed = await containers.start(pod, start, ctx, sandbox!, done, signal);
      // A container that would not start backs off as one that crashed.
      if (failed?.reason === "RunContainerError") crashBackoff.next(key);
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
    podHost.forget(podUid);
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
