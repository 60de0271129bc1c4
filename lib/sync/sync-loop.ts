// The sync loop: store updates, runtime events and a resync every --sync_frequency wake the pod's own worker
// (one pass in flight per pod, the latest spec wins; no pod waits on another's termination or pull). It keeps
// one record per pod and decides there, once, whether a pod changed. Pods no source wants are killed only once
// every source has reported; a kubelet restart adopts what runs. Admission and resize allocation are the allocation
// manager's (allocation-manager.ts), the pods' statuses and the version the status manager's (status-manager.ts),
// the cleanup after each full listing housekeeping's (housekeeping.ts): this file dispatches to them.
// Folder sync/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import { type Clock, untilAborted } from "../clock.ts";
import { LABEL, type Runtime, isRuntimeError } from "../container/runtime.ts";
import { RESYNC_LISTING_MAX_AGE_MS } from "../container/shared-listing.ts";
import type { BackoffPersistence } from "../node/flowcontrol/backoff.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { ImageManager } from "../node/images/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { computePodStatus, type ResizeStatus, type Waiting } from "./pod-status.ts";
import { activeDeadlineRemainingMs, DEADLINE_EXCEEDED } from "./active-deadline.ts";
import type { AllocationCheckpoint } from "../node/state/allocation-file.ts";
import { createAllocationManager } from "./allocation-manager.ts";
import { createHousekeeping } from "./housekeeping.ts";
import { createStatusManager } from "./status-manager.ts";
import { createPodExecutor, type PodExecutorDeps, type PodExecutorOptions } from "./pod-executor.ts";
import { createPodObserver } from "./pod-observer.ts";
import { createPodWorker, type PodGoal, type PodWorker } from "./pod-workers.ts";
import { noneObserved, nothingObserved, observedLabels, type Observed, type ProbeFailure } from "./pod-plan.ts";
import type { createProbeManager } from "../node/prober/probes.ts";
import type { PodStore } from "../sources/store.ts";
import { ANNOTATION, podKey, type Pod, type V1PodStatus } from "../api/types.ts";
import type { ContainerDevices } from "./container-lifecycle.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import { configKey } from "../api/config-objects.ts";
import { podConfigRefs } from "../api/config-refs.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { DnsConfigurer } from "../node/network/dns.ts";
import { admissionOrder, boundToNode, type AdmissionPolicy } from "./admission.ts";

export interface SyncLoopOptions extends PodExecutorOptions {
  syncFrequencyMs: number;
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
  cgroups?: Pick<CgroupManager, "ensurePod" | "removePod" | "resizePod" | "removeOrphans">;
  dns?: DnsConfigurer;
  /** The CPU and memory managers' cpusets for a container; absent = unpinned. */
  cpusets?: (podUid: string, containerName: string) => { cpus?: string; mems?: string };
  /** Keeps the crash-loop back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
  /** Keeps the resources allocated to each pod across kubelet restarts: a deferred resize stays deferred. */
  allocations?: AllocationCheckpoint;
  /** The device manager's run options for each container. */
  devices?: ContainerDevices;
  /** The cgroup v2 files a container gets beyond its limits (memory.oom.group, MemoryQoS). */
  containerUnified?: PodExecutorDeps["containerUnified"];
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
  /** Calls `listener` on each change of version() until the returned function is called. */
  onChange(listener: () => void): () => void;
  /**
   * Pods no source wants any more whose containers are still being stopped, with metadata.deletionTimestamp (when
   * the grace period ends) and deletionGracePeriodSeconds, as the API server marks a pod being deleted.
   */
  terminatingPods(): Pod[];
  /** Wanted pods that are neither evicted nor finished, with the resources allocated to them: what the eviction and
   *  node shutdown managers choose from. */
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
  uid: string;
  /** The pod's latest spec: wanted by a source, or the last spec of a pod no source wants (for its
   *  preStop hooks and grace period). Undefined for a pod adopted from the runtime and never wanted. */
  pod?: Pod;
  /** Whether a source wants the pod now. */
  wanted: boolean;
  /** When the last source let it go (ms): it is terminating from then until its worker has stopped it. */
  droppedAt?: number;
  /** The manifest hash last accepted: the one place a pod's change is decided (see accept). */
  hash?: string;
  /** When the kubelet first accepted the pod (ms). */
  firstSeen: number;
  /** Whether every container has run once (the pod start latency was recorded). */
  started: boolean;
  /** Why containers are not running, as the last sync saw it. */
  waiting: Map<string, Waiting>;
  /** A resize the last sync could not (fully) apply. */
  resize?: ResizeStatus;
  /** What the status was last computed from (recomputed when a container starts stopping). */
  seen?: Observed;
  podIP: string;
  /** Ids of containers whose liveness probe failed since the last sync. */
  livenessFailed: Map<string, ProbeFailure>;
  /** The pod's worker: its state (syncing → terminating → terminated) and its one pass in flight. */
  worker: PodWorker;
  /** A fresh observation handed over by the resync, saving a listing per pod. */
  observed?: Map<string, Observed>;
  /** When a pass of this pod last began or ended (passClock): a listing begun before that may miss what it did. */
  lastPass: number;
  /** Containers whose exit the runtime's events reported since the pod was last observed. */
  exited: Set<string>;
  /** Evicted (a changed manifest lifts it): the message, who awaits the stop. */
  eviction?: { message: string; stopped: Array<() => void> } & EvictOptions;
  /** When its last sync pass ended well (0: never). */
  syncedAt: number;
  /** Reached Succeeded or Failed. A finished pod never starts again (its dead containers may be garbage-collected,
   *  its status stays), as the Go kubelet's terminal phase; a changed manifest is a new pod. */
  finished: boolean;
}

/** A settled pod's pass at the latest this long after its last (the Go kubelet's default --sync-frequency). */
export const SETTLED_POD_RESYNC_MS = 60_000;

/** The same sandboxes and containers in the same states: the observer's cached inspections, in any order. */
const sameObservation = (a: Observed, b: Observed) =>
  a.sandboxes.length === b.sandboxes.length &&
  a.containers.length === b.containers.length &&
  a.sandboxes.every((s) => b.sandboxes.includes(s)) &&
  a.containers.every((c) => b.containers.includes(c));

/** The pod as an eviction stops it: within the eviction's grace period when that is shorter than the pod's own. */
const withEvictionGrace = (pod: Pod, eviction: EvictOptions): Pod =>
  eviction.graceSeconds === undefined || eviction.graceSeconds >= (pod.spec.terminationGracePeriodSeconds ?? 30)
    ? pod
    : { ...pod, spec: { ...pod.spec, terminationGracePeriodSeconds: eviction.graceSeconds } };

/** Wakes whoever awaits an eviction's stop. */
const stoppedEviction = (record: PodRecord) => {
  for (const resolve of record.eviction?.stopped.splice(0) ?? []) resolve();
};

export function createSyncLoop(options: SyncLoopOptions, deps: SyncLoopDeps): SyncLoop {
  const { store, runtime, clock, log, metrics } = deps;
  const records = new Map<string, PodRecord>();
  let lastSync = 0;
  let stopping = false;
  const statuses = createStatusManager();
  const allocations = createAllocationManager(
    { ...(options.admission ? { admission: options.admission } : {}), hostIP: options.hostIP },
    {
      events: deps.events,
      pods: () => wanted().map(([, record]) => record.pod!),
      statuses,
      sync: (uid) => trigger(uid),
      ...(deps.allocations ? { checkpoint: deps.allocations } : {}),
    },
  );
  const housekeeping = createHousekeeping({
    volumes: deps.volumes,
    ...(deps.cgroups ? { cgroups: deps.cgroups } : {}),
    allocations,
    metrics,
  });

  const recordOf = (uid: string): PodRecord => {
    let record = records.get(uid);
    if (!record) {
      const created: PodRecord = {
        uid,
        wanted: false,
        firstSeen: clock.now(),
        started: false,
        waiting: new Map(),
        podIP: "",
        livenessFailed: new Map(),
        exited: new Set(),
        finished: false,
        syncedAt: 0,
        lastPass: 0,
        worker: createPodWorker(
          { clock },
          {
            goal: () => goalOf(created),
            sync: (signal) => pass(created, () => syncStep(uid, created, signal)),
            terminate: () => pass(created, () => terminateStep(uid, created)),
            settled: (state) => {
              if (state === "terminated" && !created.wanted && records.get(uid) === created) forget(uid);
            },
            failed: (e: Error & { code?: string }) => {
              if (isRuntimeError(e, "RuntimeUnavailable")) log.warn(`sync of pod ${uid} paused: ${e.message}`);
              else log.error(`sync of pod ${created.pod ? podKey(created.pod) : uid} failed: ${e.message}`);
            },
          },
        ),
      };
      records.set(uid, (record = created));
    }
    return record;
  };
  const wanted = () => [...records.entries()].filter(([, r]) => r.wanted);

  const probes = deps.createProbeManager(
    { clock, log: log.child("probes"), metrics, events: deps.events },
    {
      runtime,
      onLivenessFailure: (uid, _name, containerId, _message, probe) => {
        records.get(uid)?.livenessFailed.set(containerId, probe);
        trigger(uid);
      },
      onChange: (uid) => trigger(uid),
    },
  );
  // The resync reads the PLEG's listing when current, as upstream's housekeeping reads its runtime cache.
  const observer = createPodObserver({ runtime, volumes: deps.volumes, listingMaxAgeMs: RESYNC_LISTING_MAX_AGE_MS });
  const executor = createPodExecutor(options, {
    ...deps,
    probes,
    configs: store.configs,
    onStopping: (container) => {
      const record = records.get(container.labels[LABEL.podUid] ?? "");
      if (record?.pod && record.seen && !allocations.rejection(record.uid))
        updateStatus(record, synced(record), record.seen);
    },
  });

  /**
   * Counts pass starts and ends. A resync's listing is handed to a pod only when no pass of it began or ended since
   * the listing began: one that ended meanwhile may have created a container the listing missed, and a pass
   * planning from that listing would create it again (the runtime's "name already in use").
   */
  let passClock = 0;
  const pass = async (record: PodRecord, step: () => Promise<void>) => {
    record.lastPass = ++passClock;
    try {
      await step();
    } finally {
      record.lastPass = ++passClock;
    }
  };

  const trigger = (uid: string, observed?: { pods: Map<string, Observed>; listedAt: number }) => {
    if (stopping) return;
    const record = recordOf(uid);
    record.observed =
      observed && !record.worker.busy && record.lastPass <= observed.listedAt ? observed.pods : undefined;
    record.worker.update();
  };

  /** What the pod's worker should bring it to now (pod-workers.ts holds the states and their transitions). */
  const goalOf = (record: PodRecord): PodGoal => {
    const rejected = allocations.rejection(record.uid);
    if (record.wanted && record.pod && !rejected && !record.eviction) return record.finished ? "rest" : "run";
    if (record.wanted || rejected) return "stop"; // evicted or rejected
    return store.allSourcesReady() ? "stop" : "rest";
  };

  /** The pod as it is now: the observation a resync handed over, or a fresh one (exits just reported asked afresh). */
  const observeNow = async (uid: string, record: PodRecord): Promise<Observed> => {
    const handed = record.observed;
    record.observed = undefined;
    const exited = record.exited;
    record.exited = new Set();
    return (
      (exited.size ? await observer.observe(uid, exited) : (handed ?? (await observer.observe(uid)))).get(uid) ??
      noneObserved()
    );
  };

  /** The pod as its containers are to run: with the resources allocated to it. */
  const synced = (record: PodRecord) => allocations.allocated(record.uid) ?? record.pod!;

  /** A syncing pod's pass: observe, plan and execute, then its status. */
  const syncStep = async (uid: string, record: PodRecord, signal: AbortSignal) => {
    const began = clock.now();
    const pod = synced(record);
    const deadline = activeDeadlineRemainingMs(pod, record.firstSeen, clock.now());
    if (deadline !== undefined && deadline <= 0) {
      // Past activeDeadlineSeconds: stopped and Failed like an evicted pod, with its own reason.
      deps.events.record(pod, "Warning", DEADLINE_EXCEEDED.reason, DEADLINE_EXCEEDED.message);
      record.eviction = { ...DEADLINE_EXCEEDED, stopped: [] };
      statuses.changed();
      record.worker.update();
      return;
    }
    const observed = await observeNow(uid, record);
    const result = await executor.syncPod(pod, observed, record.livenessFailed, signal);
    for (const c of observed.containers) record.livenessFailed.delete(c.id);
    record.waiting = result.waiting;
    record.resize = result.resize;
    record.podIP = result.podIP;
    // The pod is looked at again when a back-off ends or its active deadline passes, whichever comes first.
    const retryAfterMs = Math.min(result.retryAfterMs ?? Infinity, deadline ?? Infinity);
    if (retryAfterMs !== Infinity) record.worker.retryAfter(Math.max(0, retryAfterMs));
    const fresh = result.resized && new Set(result.resized);
    updateStatus(
      record,
      pod,
      result.changed ? ((await observer.observe(uid, fresh)).get(uid) ?? noneObserved()) : observed,
    );
    record.syncedAt = clock.now();
    metrics.podWorker(record.started ? "sync" : "create", (clock.now() - began) / 1000);
    // It finished: its worker moves on to terminated (nothing more starts).
    if (goalOf(record) !== "run") record.worker.update();
  };

  /** A terminating pod's pass: everything of it stops (preStop, grace period, kill) and is removed. */
  const terminateStep = async (uid: string, record: PodRecord) => {
    const observed = await observeNow(uid, record);
    const evicted = record.wanted && record.pod && record.eviction;
    const rejected = allocations.rejection(uid);
    if (!nothingObserved(observed)) {
      if (!evicted) {
        const labels = observedLabels(observed)!;
        log.info(
          `pod ${labels[LABEL.podNamespace]}/${labels[LABEL.podName]} ${rejected ? `was rejected (${rejected.reason})` : "is no longer wanted by any source"}: stopping it`,
        );
      }
      await executor.killPod(uid, observed, evicted ? withEvictionGrace(record.pod!, record.eviction!) : record.pod);
      housekeeping.podObserved(uid, noneObserved());
    }
    probes.removePod(uid);
    if (evicted) {
      // An evicted pod is not started again: its containers and volumes go, its status stays Failed.
      updateStatus(record, record.pod!, noneObserved());
      stoppedEviction(record);
    }
  };

  const updateStatus = (record: PodRecord, pod: Pod, observed: Observed) => {
    record.seen = observed;
    housekeeping.podObserved(record.uid, observed);
    const computed = computePodStatus({
      pod,
      sandboxes: observed.sandboxes,
      containers: observed.containers,
      waiting: record.waiting,
      resize: allocations.pending(record.uid) ?? record.resize,
      isReady: (id) => probes.isReady(id),
      isStarted: (id) => probes.isStarted(id),
      hostIP: options.hostIP,
      podIP: record.podIP,
      firstSeen: record.firstSeen,
      previous: statuses.get(record.uid),
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
    statuses.set(record.uid, status);
    if (!record.eviction && (status.phase === "Succeeded" || status.phase === "Failed")) record.finished = true;
    if (!record.started && status.containerStatuses?.every((c) => c.state?.running)) {
      record.started = true;
      metrics.podStart((clock.now() - record.firstSeen) / 1000, pod.metadata.uid);
    }
  };

  /** The one place a pod's record ends: its back-off, volumes cache and probes go with it. */
  const forget = (uid: string) => {
    const record = records.get(uid);
    if (record) stoppedEviction(record);
    record?.worker.stop();
    records.delete(uid);
    statuses.delete(uid);
    // A pod listed as terminating leaves the report now: a new version, so the API sends its DELETED.
    if (record?.droppedAt !== undefined) statuses.changed();
    allocations.remove(uid);
    executor.forget(uid);
    probes.removePod(uid);
  };

  const accept = (pod: Pod) => {
    const record = recordOf(pod.metadata.uid);
    const hash = pod.metadata.annotations[ANNOTATION.hash];
    // The one decision of whether the pod changed: against the manifest it was last accepted with.
    const changed = record.pod === undefined || record.hash !== hash;
    const returned = !record.wanted;
    const held = record.wanted && !allocations.rejection(record.uid);
    record.pod = boundToNode(pod, options.hostname);
    record.hash = hash;
    record.wanted = true;
    record.droppedAt = undefined;
    statuses.changed();
    if (changed) {
      // A changed manifest is a new pod as far as eviction and a finished run go.
      stoppedEviction(record);
      record.eviction = undefined;
      record.finished = false;
    }
    if (changed || returned) {
      allocations.admit(record.pod, held);
      trigger(pod.metadata.uid);
      if (held && allocations.rejection(record.uid)) allocations.readmit();
      // Its allocation may have shrunk: room for a deferred resize.
      if (held) allocations.retryPendingResizes();
    }
  };

  const drop = (uid: string, pod?: Pod) => {
    const record = recordOf(uid);
    const freed = record.wanted && !allocations.rejection(uid);
    if (record.wanted) record.droppedAt = clock.now();
    record.wanted = false;
    allocations.release(uid);
    record.pod ??= pod;
    trigger(uid);
    if (freed) {
      allocations.retryPendingResizes();
      allocations.readmit();
    }
  };

  const onUpdate = (update: { op: string; pods: Pod[] }) => {
    statuses.changed();
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

  /**
   * Whether a resync should pass over the pod: a listing that differs from what its status was computed from (the
   * observer hands out the same inspection objects while a container's state stays, so identity is the
   * comparison), or no pass for a while (upstream's per-pod resync, at its one minute default). A settled pod is
   * otherwise left alone: its changes arrive as runtime events, probe results and manifest or ConfigMap edits, and
   * what a pass could not settle (a container waiting, a resize, a failed pass) is retried on the worker's own
   * timer (the executor's retryAfterMs, the worker's retry after a failure).
   */
  const mayHaveChanged = (record: PodRecord, now: Observed | undefined) =>
    record.seen === undefined ||
    clock.now() - record.syncedAt >= Math.max(options.syncFrequencyMs, SETTLED_POD_RESYNC_MS) ||
    !sameObservation(record.seen, now ?? noneObserved());

  /** Every pod whose state may have changed, every orphan, garbage and leftover pod directories. */
  const resync = async () => {
    const listedAt = passClock;
    const observed = await observer.observe();
    const listing = { pods: observed, listedAt };
    const isWanted = (uid: string) => records.get(uid)?.wanted === true;
    allocations.retryPendingResizes();
    for (const [uid, record] of wanted()) if (mayHaveChanged(record, observed.get(uid))) trigger(uid, listing);
    await housekeeping.cleanUp(observed, {
      sourcesReady: store.allSourcesReady(),
      isWanted,
      wanted: () => wanted().map(([uid]) => uid),
      stop: (uid) => trigger(uid, listing),
      workers: () =>
        [...records.values()].map((r) => ({ state: r.worker.state, wanted: r.wanted, known: r.pod !== undefined })),
    });
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
          if (!uid) continue;
          // The exit is looked up afresh: the listing may not show it yet (see PodObserver.observe).
          if (event.type === "ContainerDied") recordOf(uid).exited.add(event.containerId);
          trigger(uid);
        }
      } catch (error) {
        if (signal.aborted) break;
        log.warn(`runtime events stream lost: ${(error as Error).message}; reconnecting in ${delay / 1000}s`);
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
          if (failures > 0) log.info("container runtime reachable again: sync resumed");
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
      for (const record of records.values()) record.worker.stop();
      for (const [uid] of wanted()) probes.removePod(uid);
      await events;
      // Let syncs in flight finish their current step so no container is left half-created.
      const deadline = clock.now() + 5000;
      while ([...records.values()].some((r) => r.worker.busy) && clock.now() < deadline) await clock.sleep(50);
    },
    pods() {
      return wanted().map(([, record]) => ({
        ...record.pod!,
        status: statuses.get(record.uid) ?? pendingStatus(options.hostIP),
      }));
    },
    terminatingPods() {
      const out: Pod[] = [];
      for (const record of records.values()) {
        if (record.wanted || !record.pod || record.droppedAt === undefined || record.worker.state === "terminated")
          continue;
        const grace = record.pod.spec.terminationGracePeriodSeconds ?? 30;
        const deletionTimestamp = new Date(record.droppedAt + grace * 1000).toISOString().replace(/\.\d+Z$/, "Z");
        out.push({
          ...record.pod,
          metadata: { ...record.pod.metadata, deletionTimestamp, deletionGracePeriodSeconds: grace },
          status: statuses.get(record.uid) ?? pendingStatus(options.hostIP),
        });
      }
      return out;
    },
    lastSyncAt: () => lastSync,
    version: () => statuses.version(),
    onChange: (listener) => statuses.onChange(listener),
    activePods: () =>
      wanted()
        .filter(([uid, r]) => {
          const phase = statuses.get(uid)?.phase;
          return !r.eviction && phase !== "Succeeded" && phase !== "Failed";
        })
        .map(([, r]) => synced(r)),
    evict(pod, message, options = {}) {
      const record = records.get(pod.metadata.uid);
      if (!record?.wanted || stopping) return Promise.resolve();
      log.warn(`evicting pod ${podKey(pod)}: ${message}`);
      deps.events.record(pod, "Warning", options.reason ?? "Evicted", message);
      record.eviction ??= { message, stopped: [], ...options };
      const stopped = new Promise<void>((resolve) => record.eviction!.stopped.push(resolve));
      statuses.changed();
      trigger(pod.metadata.uid);
      return stopped;
    },
  };
}

function pendingStatus(hostIP: string): V1PodStatus {
  return { phase: "Pending", hostIP, conditions: [{ type: "PodScheduled", status: "True" }] };
}
