// One step of the sync loop for one pod: observe its sandboxes and containers, plan with computePodActions
// (pod-plan.ts, pure) and carry the plan out on the Runtime port (this file, the executor): image
// pulls, CRI sandbox and container configs, lifecycle hooks, graceful termination, events, back-off bookkeeping,
// termination messages and OOM kills (dead containers: node/container-gc.ts).
import { Backoff, type BackoffPersistence } from "../node/backoff.ts";
import type { Clock } from "../clock.ts";
import {
  containerConfig,
  podSandboxConfig,
  resolveEnv,
  runtimeHandler,
  type PodContext,
  type VolumeMount,
} from "../container/container-config.ts";
import { LABEL, type ContainerDetails, type PodSandboxDetails, type Runtime } from "../container/runtime.ts";
import type { EventRecorder } from "../node/events.ts";
import type { ImageManager, PullPolicy } from "../node/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import type { Waiting } from "./pod-status.ts";
import {
  computePodActions,
  type ContainerToKill,
  type ContainerToStart,
  type Observed,
  type PodActions,
} from "./pod-plan.ts";
import { runProbe, type ProbeManager } from "../node/probes.ts";
import { KubeletError, podKey, type Pod } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import type { CgroupManager } from "../node/cgroups.ts";
import type { DnsConfigurer } from "../node/dns.ts";
import type { LifecycleHandler } from "kubernetes-types/core/v1.d.ts";
import type { SeccompSettings } from "../container/security-context.ts";
import { subPathHostPaths } from "../node/subpath.ts";

export interface PodSyncOptions {
  hostname: string;
  hostIP: string;
  networkMode: string;
  /** Pulled before a sandbox is run (the runtime's pause image: the Docker shim's, or the CRI runtime's). */
  pauseImage: string;
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
  /** Pod cgroups (cgroupsPerQOS); absent = Docker's default cgroup. */
  cgroups?: Pick<CgroupManager, "ensurePod" | "removePod">;
  /** Pod resolv.conf files; absent = Docker's own resolv.conf. */
  dns?: DnsConfigurer;
  /** Keeps the crash-loop back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
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

export interface PodSyncer {
  /**
   * Every kubelet sandbox and container (or one pod's), with their statuses, grouped by pod uid. `exited`:
   * sandboxes and containers an exit event just reported, asked afresh whatever the listing says (dockerd 20.10
   * lists a container as running until it has handled its exit, after the die event; an inspect waits for that).
   */
  observe(podUid?: string, exited?: ReadonlySet<string>): Promise<Map<string, Observed>>;
  /** Drives one pod one step towards its spec. */
  syncPod(pod: Pod, observed: Observed, livenessFailed: ReadonlySet<string>): Promise<SyncResult>;
  /** Stops a pod's containers gracefully (preStop, SIGTERM, then SIGKILL), removes them and its volumes. */
  killPod(podUid: string, observed: Observed, pod?: Pod): Promise<void>;
  /** Forgets back-off state of a removed pod. */
  forget(podUid: string): void;
}

export function createPodSyncer(options: PodSyncOptions, deps: PodSyncDeps): PodSyncer {
  const { clock, log, events } = deps;
  const { runtime } = deps;
  const crashBackoff = new Backoff(10_000, 300_000, clock, deps.backoffPersistence);
  const inspected = new Map<string, ContainerDetails | PodSandboxDetails>();
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

  const observe = async (podUid?: string, exited?: ReadonlySet<string>) => {
    const [sandboxes, containers] = await Promise.all([
      runtime.listPodSandboxes(podUid ? { podUid } : {}),
      runtime.listContainers(podUid ? { podUid } : {}),
    ]);
    const byPod = new Map<string, Observed>();
    const of = (uid: string) => byPod.get(uid) ?? byPod.set(uid, { sandboxes: [], containers: [] }).get(uid)!;
    const live = new Set<string>();
    /**
     * A status only changes with the state the listing gives, so it is asked once per state; cached under that
     * state only when they agree, so a stale listing cannot pin it. Undefined when it went meanwhile.
     */
    const details = async <T extends ContainerDetails | PodSandboxDetails>(
      id: string,
      listedState: string,
      listedRunning: boolean,
      ask: () => Promise<T>,
      running: (d: T) => boolean,
    ): Promise<T | undefined> => {
      const key = `${id}:${listedState}`;
      live.add(key);
      const fresh = exited?.has(id) ?? false;
      const cached = fresh ? undefined : (inspected.get(key) as T | undefined);
      if (cached) return cached;
      let answer: T;
      try {
        answer = await ask();
      } catch (error) {
        if ((error as KubeletError).code === "NotFound") return undefined;
        throw error;
      }
      if (!fresh || running(answer) === listedRunning) inspected.set(key, answer);
      return answer;
    };
    await Promise.all([
      ...sandboxes.map(async (summary) => {
        const status = await details(
          summary.id,
          summary.state,
          summary.state === "ready",
          () => runtime.podSandboxStatus(summary.id),
          (s) => s.state === "ready",
        );
        if (status) of(summary.metadata.uid).sandboxes.push(status);
      }),
      ...containers.map(async (summary) => {
        const container = await details(
          summary.id,
          summary.state,
          summary.state === "running",
          async () => {
            const c = await runtime.inspectContainer(summary.id);
            if (!c.running && c.labels[LABEL.terminationMessagePath])
              c.terminationMessage = await terminationMessage(c);
            return c;
          },
          (c) => c.running,
        );
        if (container) of(summary.labels[LABEL.podUid]!).containers.push(container);
      }),
    ]);
    if (!podUid) for (const key of inspected.keys()) if (!live.has(key)) inspected.delete(key);
    return byPod;
  };

  /** The kubelet's rule: the termination log's content; with FallbackToLogsOnError, a failed container's last log lines. */
  const terminationMessage = async (c: ContainerDetails): Promise<string> => {
    const uid = c.labels[LABEL.podUid]!;
    const name = c.labels[LABEL.containerName]!;
    const written = await deps.volumes
      .readTerminationLog(uid, name, Number(c.labels[LABEL.restartCount] ?? 0))
      .catch(() => "");
    if (written || c.labels[LABEL.terminationMessagePolicy] !== "FallbackToLogsOnError" || c.exitCode === 0)
      return written;
    const chunks: Uint8Array[] = [];
    try {
      for await (const chunk of runtime.logs(c.id, { tail: FALLBACK_LOG_LINES })) chunks.push(chunk);
    } catch {
      return "";
    }
    const tail = Buffer.concat(chunks);
    return tail.subarray(Math.max(0, tail.length - FALLBACK_LOG_BYTES)).toString("utf8");
  };

  /** Stops one container: its preStop hook within the grace period, the Killing event, then SIGTERM/SIGKILL. */
  const stopContainer = async (pod: Pod | undefined, kill: ContainerToKill, graceSeconds: number) => {
    const { container: c, spec } = kill;
    const started = clock.now();
    const field = `spec.${c.labels[LABEL.initContainer] === "true" ? "initContainers" : "containers"}{${c.labels[LABEL.containerName]}}`;
    if (pod && spec?.lifecycle?.preStop) {
      const message = await runHook(spec.lifecycle.preStop, c, pod, graceSeconds * 1000).catch((e: Error) => e.message);
      if (message) events.record(pod, "Warning", "FailedPreStopHook", `PreStopHook failed: ${message}`, field);
    }
    if (pod) events.record(pod, "Normal", "Killing", kill.message, field);
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
          imageUser: (await runtime.imageStatus(spec.image!)) ?? {},
        }),
        podSandboxConfig(pod, ctx, sandbox.metadata.attempt),
      );
      done.created++;
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
        done.killed++;
        return { reason: "PostStartHookError", message: failure };
      }
    }
    return undefined;
  };

  /** Carries a plan out: kills, then removals, the sandbox, then starts; reports what it did. */
  const execute = async (pod: Pod | undefined, plan: PodActions, done: Done): Promise<Omit<SyncResult, "changed">> => {
    const waiting = new Map<string, Waiting>();
    let retryAfterMs: number | undefined;
    const retry = (ms: number) => (retryAfterMs = Math.min(retryAfterMs ?? Infinity, Math.max(50, ms)));
    if (pod && plan.createSandbox && plan.containersToKill.length)
      log.info(`pod ${podKey(pod)}: its sandbox changed or died; recreating the pod`);
    await Promise.all(
      plan.containersToKill.map(async (kill) => {
        await stopContainer(pod, kill, plan.graceSeconds);
        if (kill.reason === "SpecChanged")
          crashBackoff.reset(`${kill.container.labels[LABEL.podUid]}/${kill.spec!.name}`);
        done.killed++;
      }),
    );
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

    const starts = plan.nextInitContainer ? [plan.nextInitContainer] : plan.containersToStart;
    // Resource fieldRefs need the node's capacity: without it nothing is created, and the sync is retried.
    if (plan.createSandbox || starts.length) await nodeInfo();
    let sandbox = plan.sandbox;
    if (plan.createSandbox) {
      try {
        sandbox = await createSandbox(pod, plan.createSandbox.attempt, done);
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
    const probeHost = pod.spec.hostNetwork ? "127.0.0.1" : podIP;
    for (const { spec, container } of plan.containersToKeep)
      deps.probes?.addContainer(
        pod,
        spec,
        container.id,
        Date.parse(container.startedAt ?? "") || clock.now(),
        probeHost,
      );
    if (!starts.length) {
      // Running containers see their ConfigMap, Secret and downward API files follow changes, without a restart.
      if (plan.sandbox)
        await mountVolumes(pod).catch((error: Error) => {
          if ((error as KubeletError).code === "RuntimeUnavailable") throw error;
          events.record(pod, "Warning", "FailedMount", error.message);
          retry(10_000);
        });
      return { waiting, retryAfterMs, podIP };
    }
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
    await Promise.all(
      starts.map(async (start) => {
        const key = `${pod.metadata.uid}/${start.spec.name}`;
        if (start.resetBackoff) crashBackoff.reset(key);
        if (start.restart) {
          crashBackoff.next(key);
          deps.metrics?.containerRestarted();
        }
        const failed = await startContainer(pod, start, ctx, sandbox!, done);
        if (failed) {
          waiting.set(start.spec.name, failed);
          retry(failed.reason === "ErrImagePull" ? 1000 : failed.reason === "ImagePullBackOff" ? 5000 : 10_000);
        }
      }),
    );
    return { waiting, retryAfterMs, podIP };
  };

  const createSandbox = async (pod: Pod, attempt: number, done: Done): Promise<PodSandboxDetails> => {
    await deps.images.ensureImage(options.pauseImage, "IfNotPresent", pod);
    const id = await runtime.runPodSandbox(
      podSandboxConfig(pod, await context(pod, ""), attempt),
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

  const planFor = (pod: Pod | undefined, observed: Observed, livenessFailed: ReadonlySet<string>, deleted: boolean) =>
    computePodActions({
      pod,
      deleted,
      observed,
      networkMode: options.networkMode,
      livenessFailed,
      backoff: crashBackoff,
      now: clock.now(),
    });

  const syncPod = async (pod: Pod, observed: Observed, livenessFailed: ReadonlySet<string>): Promise<SyncResult> => {
    for (const c of observed.containers) if (c.oomKilled && !c.running) reportOom(pod, c);
    const done = noneDone();
    const result = await execute(pod, planFor(pod, observed, livenessFailed, false), done);
    return { ...result, changed: changed(done) };
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

  const context = async (pod: Pod, podIP: string): Promise<PodContext> => {
    const volumes = await mountVolumes(pod);
    return {
      nodeName: options.hostname,
      hostIP: options.hostIP,
      podIP,
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
            hostsPath: await deps.dns.hostsFileFor(pod, podIP),
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
    observe,
    syncPod,
    async killPod(podUid, observed, pod) {
      await execute(pod, planFor(pod, observed, new Set(), true), noneDone());
      deps.probes?.removePod(podUid);
      forget(podUid);
      deps.dns?.forget(podUid);
      await deps.volumes.teardown(podUid);
      await deps.cgroups?.removePod(podUid);
    },
    forget,
  };
}

/** FallbackToLogsOnError takes at most this much of the log's end (the Go kubelet's limits). */
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;

/** What one executed plan did on the runtime. */
interface Done {
  created: number;
  killed: number;
  removed: number;
}

const noneDone = (): Done => ({ created: 0, killed: 0, removed: 0 });
const changed = (done: Done) => done.created + done.killed + done.removed > 0;
