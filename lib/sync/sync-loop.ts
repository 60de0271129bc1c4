// Layer sync/: turns the store's desired state into running pods — the sync loop and pod workers
// (this file), one pod's sync step, pod status, runonce. Imports api/, sources/store.ts (the
// updates), node/ (images, volumes, probes, events, back-off) and the container/ Runtime port; never
// an adapter (docker.ts) and never server/.
//
// The sync loop: store updates, Docker events and a resync every --sync_frequency trigger pod
// workers (one sync in flight per pod, the latest spec wins, bounded parallelism). Pods no source
// wants are killed only once every source has reported; a kubelet restart adopts what runs.
import { type Clock, type Timer, untilAborted } from "../clock.ts";
import { LABEL, type Runtime } from "../container/runtime.ts";
import type { BackoffPersistence } from "../node/backoff.ts";
import type { EventRecorder } from "../node/events.ts";
import type { ImageManager } from "../node/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { computePodStatus, type Waiting } from "./pod-status.ts";
import { createPodSyncer, type PodSyncOptions } from "./pod-sync.ts";
import { noneObserved, nothingObserved, observedLabels, type Observed } from "./pod-plan.ts";
import type { createProbeManager } from "../node/probes.ts";
import type { PodStore } from "../sources/store.ts";
import { ANNOTATION, podKey, type Pod, type V1PodStatus } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes.ts";
import { configKey } from "../api/config-objects.ts";
import { podConfigRefs } from "../api/config-refs.ts";
import type { CgroupManager } from "../node/cgroups.ts";
import type { DnsConfigurer } from "../node/dns.ts";
import {
  admissionOrder,
  admitPod,
  boundToNode,
  OUT_OF_PODS,
  rejectedStatus,
  type AdmissionPolicy,
  type Rejection,
} from "./admission.ts";

export interface SyncLoopOptions extends PodSyncOptions {
  syncFrequencyMs: number;
  /** Pods synced at once (default 4). */
  parallelism?: number;
  /** --max_pods and the host-namespace sources; absent = every valid pod is admitted. */
  admission?: AdmissionPolicy;
}

export interface SyncLoopDeps {
  store: PodStore;
  runtime: Runtime;
  images: ImageManager;
  volumes: VolumeManager;
  createProbeManager: typeof createProbeManager;
  clock: Clock;
  log: Logger;
  metrics: KubeletMetrics;
  events: EventRecorder;
  cgroups?: Pick<CgroupManager, "ensurePod" | "removePod" | "removeOrphans">;
  dns?: DnsConfigurer;
  /** Keeps the crash-loop back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
}

export interface SyncLoop {
  /** Runs until the signal aborts; containers are left running. */
  run(signal: AbortSignal): Promise<void>;
  /** Desired pods with their latest status. */
  pods(): Pod[];
  /** When the last full sync completed (ms since the epoch; 0 = never). */
  lastSyncAt(): number;
  /** Changes whenever pods() would answer differently. */
  version(): number;
  /** Wanted pods that are neither evicted nor finished: what the eviction manager may choose from. */
  activePods(): Pod[];
  /**
   * Evicts a pod: stops and removes its containers and volumes, and reports it Failed with reason Evicted and
   * `message` until its manifest changes. Resolves when the pod is stopped (or the loop stops). `options` give
   * another reason (node shutdown: Terminated) and a grace period below the pod's own.
   */
  evict(pod: Pod, message: string, options?: EvictOptions): Promise<void>;
}

/** How an evicted pod is reported and stopped: reason (default Evicted), at most `graceSeconds` to stop. */
export interface EvictOptions {
  reason?: string;
  graceSeconds?: number;
}

/**
 * Everything the loop knows about one pod (the Go kubelet's pod worker state), created by `recordOf`
 * and deleted by `forget` only, so no per-pod fact outlives the pod or is missing for it.
 */
interface PodRecord {
  /** The pod's latest spec: wanted by a source, or the last spec of a pod no source wants (for its
   *  preStop hooks and grace period). Undefined for a pod adopted from the runtime and never wanted. */
  pod?: Pod;
  /** Whether a source wants the pod now. */
  wanted: boolean;
  /** Why the pod is not admitted (it is reported as Failed and none of its containers run). */
  rejected?: Rejection;
  /** When the kubelet first accepted the pod (ms). */
  firstSeen: number;
  /** Whether every container has run once (the pod start latency was recorded). */
  started: boolean;
  status?: V1PodStatus;
  /** Why containers are not running, as the last sync saw it. */
  waiting: Map<string, Waiting>;
  podIP: string;
  /** Ids of containers whose liveness probe failed since the last sync. */
  livenessFailed: Set<string>;
  /** A sync is running. */
  busy: boolean;
  /** Another sync was asked for while one ran. */
  again: boolean;
  /** A sync scheduled for when a back-off ends or after a failure. */
  retry?: Timer;
  /** A fresh observation handed over by the resync, saving a listing per pod. */
  observed?: Map<string, Observed>;
  /** Containers whose exit the runtime's events reported since the pod was last observed. */
  exited: Set<string>;
  /** Evicted: the manifest hash it was evicted with (a new one lifts the eviction), the message, who awaits the stop. */
  eviction?: { hash: string | undefined; message: string; stopped: Array<() => void> } & EvictOptions;
  /** Reached Succeeded or Failed: the manifest hash it finished with. A finished pod never starts again (its
   *  dead containers may be garbage-collected, its status stays), as the Go kubelet's terminal phase; a changed
   *  manifest is a new pod. */
  finished?: { hash: string | undefined };
}

/** Runtime events that mean a container stopped running. */
const EXIT_EVENTS = new Set(["die", "oom"]);

/** Wakes whoever awaits an eviction's stop. */
const stoppedEviction = (record: PodRecord) => {
  for (const resolve of record.eviction?.stopped.splice(0) ?? []) resolve();
};

export function createSyncLoop(options: SyncLoopOptions, deps: SyncLoopDeps): SyncLoop {
  const { store, runtime, clock, log, metrics } = deps;
  const records = new Map<string, PodRecord>();
  const slots = { free: options.parallelism ?? 4, queue: [] as Array<() => void> };
  let lastSync = 0;
  let stopping = false;
  let version = 0;

  const recordOf = (uid: string): PodRecord => {
    let record = records.get(uid);
    if (!record)
      records.set(
        uid,
        (record = {
          wanted: false,
          firstSeen: clock.now(),
          started: false,
          waiting: new Map(),
          podIP: "",
          livenessFailed: new Set(),
          exited: new Set(),
          busy: false,
          again: false,
        }),
      );
    return record;
  };
  const wanted = () => [...records.entries()].filter(([, r]) => r.wanted);

  const probes = deps.createProbeManager(
    { clock, log: log.child("probes"), metrics, events: deps.events },
    {
      runtime,
      onLivenessFailure: (uid, _name, containerId) => {
        records.get(uid)?.livenessFailed.add(containerId);
        trigger(uid);
      },
      onChange: (uid) => trigger(uid),
    },
  );
  const syncer = createPodSyncer(options, { ...deps, probes, configs: store.configs });

  const acquire = () =>
    slots.free > 0 ? (slots.free--, Promise.resolve()) : new Promise<void>((resolve) => slots.queue.push(resolve));
  const release = () => {
    const next = slots.queue.shift();
    if (next) next();
    else slots.free++;
  };

  const trigger = (uid: string, observed?: Map<string, Observed>) => {
    if (stopping) return;
    const record = recordOf(uid);
    record.observed = record.busy ? undefined : observed;
    if (record.busy) {
      record.again = true;
      return;
    }
    record.retry?.cancel();
    record.retry = undefined;
    record.busy = true;
    void work(uid, record);
  };

  const work = async (uid: string, record: PodRecord) => {
    await acquire();
    const began = clock.now();
    try {
      const handed = record.observed;
      record.observed = undefined;
      const exited = record.exited;
      record.exited = new Set();
      const observed =
        (exited.size ? await syncer.observe(uid, exited) : (handed ?? (await syncer.observe(uid)))).get(uid) ??
        noneObserved();
      if (record.wanted && record.pod && record.eviction) {
        // An evicted pod is not started again: its containers and volumes go, its status stays Failed.
        const grace = record.eviction.graceSeconds;
        const withGrace =
          grace === undefined || grace >= (record.pod.spec.terminationGracePeriodSeconds ?? 30)
            ? record.pod
            : { ...record.pod, spec: { ...record.pod.spec, terminationGracePeriodSeconds: grace } };
        if (!nothingObserved(observed)) await syncer.killPod(uid, observed, withGrace);
        updateStatus(record, record.pod, noneObserved());
        stoppedEviction(record);
      } else if (record.wanted && record.pod && !record.rejected && record.finished) {
        // A finished pod is not synced again: nothing of it starts, even once its dead containers are collected.
      } else if (record.wanted && record.pod && !record.rejected) {
        const pod = record.pod;
        const result = await syncer.syncPod(pod, observed, record.livenessFailed);
        for (const c of observed.containers) record.livenessFailed.delete(c.id);
        record.waiting = result.waiting;
        record.podIP = result.podIP;
        if (result.retryAfterMs !== undefined) record.retry = clock.setTimeout(() => trigger(uid), result.retryAfterMs);
        updateStatus(record, pod, result.changed ? ((await syncer.observe(uid)).get(uid) ?? noneObserved()) : observed);
        metrics.podWorker(record.started ? "sync" : "create", (clock.now() - began) / 1000);
      } else if (!nothingObserved(observed) && (record.rejected || store.allSourcesReady())) {
        const labels = observedLabels(observed)!;
        log.info(
          `pod ${labels[LABEL.podNamespace]}/${labels[LABEL.podName]} ${record.rejected ? `was rejected (${record.rejected.reason})` : "is no longer wanted by any source"}: stopping it`,
        );
        await syncer.killPod(uid, observed, record.pod);
        probes.removePod(uid);
      }
    } catch (error) {
      const e = error as Error & { code?: string };
      if (e.code === "RuntimeUnavailable") log.warn(`sync of pod ${uid} paused: ${e.message}`);
      else log.error(`sync of pod ${record.pod ? podKey(record.pod) : uid} failed: ${e.message}`);
      record.retry = clock.setTimeout(() => trigger(uid), 5000);
    } finally {
      release();
      record.busy = false;
      if (record.again && !stopping) {
        record.again = false;
        trigger(uid);
      } else if (!record.wanted && !record.retry) forget(uid);
    }
  };

  const updateStatus = (record: PodRecord, pod: Pod, observed: Observed) => {
    const computed = computePodStatus({
      pod,
      sandboxes: observed.sandboxes,
      containers: observed.containers,
      waiting: record.waiting,
      isReady: (id) => probes.isReady(id),
      isStarted: (id) => probes.isStarted(id),
      hostIP: options.hostIP,
      podIP: record.podIP,
      firstSeen: record.firstSeen,
      previous: record.status,
      now: clock.now(),
    });
    const status = record.eviction
      ? {
          ...computed,
          phase: "Failed" as const,
          reason: record.eviction.reason ?? "Evicted",
          message: record.eviction.message,
        }
      : computed;
    if (JSON.stringify(record.status) !== JSON.stringify(status)) version++;
    record.status = status;
    if (!record.eviction && (status.phase === "Succeeded" || status.phase === "Failed"))
      record.finished = { hash: pod.metadata.annotations[ANNOTATION.hash] };
    if (!record.started && status.containerStatuses?.every((c) => c.state?.running)) {
      record.started = true;
      metrics.podStart((clock.now() - record.firstSeen) / 1000);
    }
  };

  /** The one place a pod's record ends: its back-off, volumes cache and probes go with it. */
  const forget = (uid: string) => {
    const record = records.get(uid);
    if (record) stoppedEviction(record);
    records.delete(uid);
    syncer.forget(uid);
    probes.removePod(uid);
  };

  /**
   * Admission hook: decides a new or changed pod against the pods admitted before it. A rejection is
   * reported once (status, Warning event, log); a rejected pod's containers are stopped by its sync.
   */
  const admit = (record: PodRecord) => {
    const policy = options.admission;
    if (!policy || !record.pod) return;
    const admitted = [...records.values()].filter((r) => r !== record && r.wanted && !r.rejected).length;
    const rejection = admitPod(record.pod, admitted, policy);
    const before = record.rejected;
    record.rejected = rejection;
    if (!rejection) {
      if (before) record.status = undefined;
      return;
    }
    record.status = rejectedStatus(rejection, options.hostIP);
    if (before?.message === rejection.message) return;
    // A Warning event is also the log line (the recorder logs warnings).
    deps.events.record(record.pod, "Warning", rejection.reason, rejection.message);
  };

  /** Pods refused for lack of room get the room an admitted pod left, oldest first. */
  const readmit = () => {
    const waiting = [...records.values()].filter((r) => r.wanted && r.rejected?.reason === OUT_OF_PODS);
    for (const pod of admissionOrder(waiting.map((r) => r.pod!))) {
      const record = records.get(pod.metadata.uid)!;
      admit(record);
      if (!record.rejected) trigger(pod.metadata.uid);
    }
  };

  const accept = (pod: Pod) => {
    const record = recordOf(pod.metadata.uid);
    const before = record.wanted ? record.pod : undefined;
    record.pod = boundToNode(pod, options.hostname);
    record.wanted = true;
    version++;
    if (record.eviction && record.eviction.hash !== pod.metadata.annotations[ANNOTATION.hash]) {
      stoppedEviction(record); // a changed manifest is a new pod as far as eviction goes
      record.eviction = undefined;
    }
    if (record.finished && record.finished.hash !== pod.metadata.annotations[ANNOTATION.hash])
      record.finished = undefined;
    if (!before || before.metadata.annotations[ANNOTATION.hash] !== pod.metadata.annotations[ANNOTATION.hash]) {
      const held = before !== undefined && !record.rejected;
      admit(record);
      trigger(pod.metadata.uid);
      if (held && record.rejected) readmit();
    }
  };

  const drop = (uid: string, pod?: Pod) => {
    const record = recordOf(uid);
    const freed = record.wanted && !record.rejected;
    record.wanted = false;
    record.rejected = undefined;
    record.pod ??= pod;
    trigger(uid);
    if (freed) readmit();
  };

  const onUpdate = (update: { op: string; pods: Pod[] }) => {
    version++;
    if (update.op === "SET") {
      const next = new Set(update.pods.map((p) => p.metadata.uid));
      for (const [uid] of wanted()) if (!next.has(uid)) drop(uid);
      for (const pod of admissionOrder(update.pods)) accept(pod);
    } else if (update.op === "REMOVE") {
      for (const pod of update.pods) drop(pod.metadata.uid, pod);
    } else {
      for (const pod of admissionOrder(update.pods)) accept(pod);
    }
  };

  /** A ConfigMap or Secret appeared, changed or went away: sync the pods that read it (volumes follow at once). */
  const onConfigChange = (changed: ReadonlySet<string>) => {
    for (const [uid, record] of wanted()) {
      const pod = record.pod!;
      const refs = podConfigRefs(pod);
      if (refs.some((ref) => changed.has(configKey(ref.kind, pod.metadata.namespace, ref.name)))) trigger(uid);
    }
  };

  /** Every pod, every orphan, garbage and leftover pod directories. */
  const resync = async () => {
    const observed = await syncer.observe();
    const isWanted = (uid: string) => records.get(uid)?.wanted === true;
    for (const [uid] of wanted()) trigger(uid, observed);
    if (store.allSourcesReady()) {
      for (const uid of observed.keys()) if (!isWanted(uid)) trigger(uid, observed);
      const dirs = await deps.volumes.podDirs();
      for (const uid of dirs) if (!isWanted(uid) && !observed.has(uid)) await deps.volumes.teardown(uid);
      await deps.cgroups?.removeOrphans(new Set([...[...wanted()].map(([uid]) => uid), ...observed.keys()]));
    }
    const states: Record<string, number> = {};
    let runningPods = 0;
    // The Go kubelet's figures: pods with a ready sandbox, and containers (sandboxes aside) by state.
    for (const { sandboxes, containers } of observed.values()) {
      if (sandboxes.some((s) => s.state === "ready")) runningPods++;
      for (const c of containers)
        states[c.running ? "running" : c.state === "created" ? "created" : "exited"] =
          (states[c.running ? "running" : c.state === "created" ? "created" : "exited"] ?? 0) + 1;
    }
    metrics.setRunning(runningPods, states);
    lastSync = clock.now();
  };

  /** A full sync outside the periodic ones; a failure is logged and left to the next period. */
  const resyncNow = (why: string) =>
    void resync().catch((error: Error) =>
      log.warn(`full sync ${why} failed: ${error.message}; the next periodic sync retries`),
    );

  const watchEvents = async (signal: AbortSignal) => {
    let delay = 500;
    while (!signal.aborted) {
      try {
        for await (const event of runtime.events(signal)) {
          delay = 500;
          const uid = event.labels[LABEL.podUid];
          if (!uid || event.action.startsWith("exec_")) continue;
          // The exit is looked up afresh: the listing may not show it yet (see PodSyncer.observe).
          if (EXIT_EVENTS.has(event.action)) recordOf(uid).exited.add(event.containerId);
          trigger(uid);
        }
      } catch (error) {
        if (signal.aborted) break;
        log.warn(`Docker events stream lost: ${(error as Error).message}; reconnecting in ${delay / 1000}s`);
      }
      await clock.sleep(delay, signal).catch(() => {});
      delay = Math.min(delay * 2, 30_000);
      if (!signal.aborted) resyncNow("to catch up on what happened while the events stream was down");
    }
  };

  return {
    async run(signal) {
      const unsubscribe = store.subscribe(onUpdate);
      const unsubscribeConfigs = store.subscribeConfigs(onConfigChange);
      for (const pod of admissionOrder(store.mergedState())) accept(pod);
      void store.whenAllSourcesReady().then(() => !signal.aborted && resyncNow("now that every source has reported"));
      const events = watchEvents(signal);
      let failures = 0;
      while (!signal.aborted) {
        try {
          // A sync held up by a slow runtime does not hold up a stop: it ends unobserved.
          await untilAborted(resync(), signal);
          if (signal.aborted) break;
          if (failures > 0) log.info("Docker Engine reachable again: sync resumed");
          failures = 0;
        } catch (error) {
          failures++;
          if (failures <= 3 || failures % 30 === 0)
            log.warn(`full sync failed: ${(error as Error).message}; retrying (containers are left as they are)`);
        }
        await clock
          .sleep(
            failures ? Math.min(options.syncFrequencyMs, 1000 * 2 ** Math.min(failures, 4)) : options.syncFrequencyMs,
            signal,
          )
          .catch(() => {});
      }
      stopping = true;
      unsubscribe();
      unsubscribeConfigs();
      for (const record of records.values()) stoppedEviction(record);
      for (const record of records.values()) record.retry?.cancel();
      for (const [uid] of wanted()) probes.removePod(uid);
      await events;
      // Let syncs in flight finish their current step so no container is left half-created.
      const deadline = clock.now() + 5000;
      while ([...records.values()].some((r) => r.busy) && clock.now() < deadline) await clock.sleep(50);
    },
    pods() {
      return wanted().map(([, record]) => ({
        ...record.pod!,
        status: record.status ?? pendingStatus(options.hostIP),
      }));
    },
    lastSyncAt: () => lastSync,
    version: () => version,
    activePods: () =>
      wanted()
        .filter(([, r]) => !r.eviction && r.status?.phase !== "Succeeded" && r.status?.phase !== "Failed")
        .map(([, r]) => r.pod!),
    evict(pod, message, options = {}) {
      const record = records.get(pod.metadata.uid);
      if (!record?.wanted || stopping) return Promise.resolve();
      log.warn(`evicting pod ${podKey(pod)}: ${message}`);
      deps.events.record(pod, "Warning", options.reason ?? "Evicted", message);
      record.eviction ??= { hash: pod.metadata.annotations[ANNOTATION.hash], message, stopped: [], ...options };
      const stopped = new Promise<void>((resolve) => record.eviction!.stopped.push(resolve));
      version++;
      trigger(pod.metadata.uid);
      return stopped;
    },
  };
}

function pendingStatus(hostIP: string): V1PodStatus {
  return { phase: "Pending", hostIP, conditions: [{ type: "PodScheduled", status: "True" }] };
}
