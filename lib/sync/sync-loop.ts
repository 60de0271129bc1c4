// Layer sync/: turns the store's desired state into running pods — the sync loop (this file), the pod workers
// (pod-workers.ts), the observer and the executor of one pod's sync step, pod status, runonce. Imports api/,
// sources/store.ts (the updates), node/ (images, volumes, probes, events, back-off) and the container/ Runtime
// port; never an adapter (docker.ts) and never server/.
//
// The sync loop: store updates, runtime events and a resync every --sync_frequency wake the pod's own worker
// (one pass in flight per pod, the latest spec wins; no pod waits on another's termination or pull). It keeps
// one record per pod and decides there, once, whether a pod changed. Pods no source wants are killed only once
// every source has reported; a kubelet restart adopts what runs.
import { type Clock, untilAborted } from "../clock.ts";
import { LABEL, type Runtime, isRuntimeError } from "../container/runtime.ts";
import type { BackoffPersistence } from "../node/flowcontrol/backoff.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { ImageManager } from "../node/images/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics, WorkingPods } from "../metrics.ts";
import { computePodStatus, type ResizeStatus, type Waiting } from "./pod-status.ts";
import { activeDeadlineRemainingMs, DEADLINE_EXCEEDED } from "./active-deadline.ts";
import { sumRequests } from "./resource-fit.ts";
import {
  allocationOf,
  pendingResizeOrder,
  resizeAllocation,
  resizeEventMessage,
  withAllocation,
} from "./pod-allocation.ts";
import type { Allocation, AllocationCheckpoint } from "../node/state/allocation-file.ts";
import { createPodExecutor, type PodExecutorOptions } from "./pod-executor.ts";
import { createPodObserver } from "./pod-observer.ts";
import { createPodWorker, type PodGoal, type PodWorker } from "./pod-workers.ts";
import { noneObserved, nothingObserved, observedLabels, type Observed, type ProbeFailure } from "./pod-plan.ts";
import type { createProbeManager } from "../node/prober/probes.ts";
import type { PodStore } from "../sources/store.ts";
import { ANNOTATION, podKey, type Pod, type V1PodStatus } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import { configKey } from "../api/config-objects.ts";
import { podConfigRefs } from "../api/config-refs.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { DnsConfigurer } from "../node/network/dns.ts";
import {
  admissionOrder,
  admitPod,
  boundToNode,
  OUT_OF_PODS,
  rejectedStatus,
  type AdmissionPolicy,
  type Rejection,
} from "./admission.ts";

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
  /** Keeps the crash-loop back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
  /** Keeps the resources allocated to each pod across kubelet restarts: a deferred resize stays deferred. */
  allocations?: AllocationCheckpoint;
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
  /** The pod's latest spec: wanted by a source, or the last spec of a pod no source wants (for its
   *  preStop hooks and grace period). Undefined for a pod adopted from the runtime and never wanted. */
  pod?: Pod;
  /** Whether a source wants the pod now. */
  wanted: boolean;
  /** The manifest hash last accepted: the one place a pod's change is decided (see accept). */
  hash?: string;
  /** The pod with the resources the kubelet allocated it (the Go kubelet's allocation checkpoint): what it is synced
   *  and reported with. A resize `pod` asks for is allocated (allocateResize) before any container sees it. */
  allocated?: Pod;
  /** The resize `pod` asks for that is not allocated: its PodResizePending condition (Deferred or Infeasible). */
  pending?: ResizeStatus;
  /** Why the pod is not admitted (it is reported as Failed and none of its containers run). */
  rejected?: Rejection;
  /** When the kubelet first accepted the pod (ms). */
  firstSeen: number;
  /** Whether every container has run once (the pod start latency was recorded). */
  started: boolean;
  status?: V1PodStatus;
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
  /** Reached Succeeded or Failed. A finished pod never starts again (its dead containers may be garbage-collected,
   *  its status stays), as the Go kubelet's terminal phase; a changed manifest is a new pod. */
  finished: boolean;
}

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
  /** Allocations the run before this one checkpointed, of pods not admitted again yet. */
  const checkpointed = new Map(Object.entries(deps.allocations?.load() ?? {}));
  let savedAllocations = "";
  /** Checkpoints every allocation, when one changed. */
  const saveAllocations = () => {
    if (!deps.allocations) return;
    const state: Record<string, Allocation> = Object.fromEntries(checkpointed);
    for (const [uid, record] of records) if (record.allocated) state[uid] = allocationOf(record.allocated);
    const text = JSON.stringify(state);
    if (text === savedAllocations) return;
    savedAllocations = text;
    deps.allocations.save(state);
  };
  let lastSync = 0;
  let stopping = false;
  let version = 0;
  const listeners = new Set<() => void>();
  /** pods() answers differently from now on: a new version, and whoever waits for one is told. */
  const bump = () => {
    version++;
    for (const listener of listeners) listener();
  };

  const recordOf = (uid: string): PodRecord => {
    let record = records.get(uid);
    if (!record) {
      const created: PodRecord = {
        wanted: false,
        firstSeen: clock.now(),
        started: false,
        waiting: new Map(),
        podIP: "",
        livenessFailed: new Map(),
        exited: new Set(),
        finished: false,
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
  const observer = createPodObserver({ runtime, volumes: deps.volumes });
  const executor = createPodExecutor(options, {
    ...deps,
    probes,
    configs: store.configs,
    onStopping: (container) => {
      const record = records.get(container.labels[LABEL.podUid] ?? "");
      if (record?.pod && record.seen && !record.rejected) updateStatus(record, synced(record), record.seen);
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
    if (record.wanted && record.pod && !record.rejected && !record.eviction) return record.finished ? "rest" : "run";
    if (record.wanted || record.rejected) return "stop"; // evicted or rejected
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
  const synced = (record: PodRecord) => record.allocated ?? record.pod!;

  /** A syncing pod's pass: observe, plan and execute, then its status. */
  const syncStep = async (uid: string, record: PodRecord, signal: AbortSignal) => {
    const began = clock.now();
    const pod = synced(record);
    const deadline = activeDeadlineRemainingMs(pod, record.firstSeen, clock.now());
    if (deadline !== undefined && deadline <= 0) {
      // Past activeDeadlineSeconds: stopped and Failed like an evicted pod, with its own reason.
      deps.events.record(pod, "Warning", DEADLINE_EXCEEDED.reason, DEADLINE_EXCEEDED.message);
      record.eviction = { ...DEADLINE_EXCEEDED, stopped: [] };
      bump();
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
    metrics.podWorker(record.started ? "sync" : "create", (clock.now() - began) / 1000);
    // It finished: its worker moves on to terminated (nothing more starts).
    if (goalOf(record) !== "run") record.worker.update();
  };

  /** A terminating pod's pass: everything of it stops (preStop, grace period, kill) and is removed. */
  const terminateStep = async (uid: string, record: PodRecord) => {
    const observed = await observeNow(uid, record);
    const evicted = record.wanted && record.pod && record.eviction;
    if (!nothingObserved(observed)) {
      if (!evicted) {
        const labels = observedLabels(observed)!;
        log.info(
          `pod ${labels[LABEL.podNamespace]}/${labels[LABEL.podName]} ${record.rejected ? `was rejected (${record.rejected.reason})` : "is no longer wanted by any source"}: stopping it`,
        );
      }
      await executor.killPod(uid, observed, evicted ? withEvictionGrace(record.pod!, record.eviction!) : record.pod);
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
    const computed = computePodStatus({
      pod,
      sandboxes: observed.sandboxes,
      containers: observed.containers,
      waiting: record.waiting,
      resize: record.pending ?? record.resize,
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
    if (JSON.stringify(record.status) !== JSON.stringify(status)) bump();
    record.status = status;
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
    saveAllocations();
    executor.forget(uid);
    probes.removePod(uid);
  };

  /** The pods admitted beside `record`'s, with the resources allocated to them. */
  const admittedBeside = (record: PodRecord) =>
    [...records.values()].filter((r) => r !== record && r.wanted && !r.rejected).map(synced);

  /**
   * Admission hook: decides a new or changed pod against the pods admitted before it. A rejection is
   * reported once (status, Warning event, log); a rejected pod's containers are stopped by its sync. A pod admitted
   * before (`held`) is decided with the resources it was allocated: an edit of them is a resize (allocateResize),
   * which never stops it.
   */
  const admit = (record: PodRecord, held = false) => {
    const pod = record.pod;
    if (!pod) return;
    // What it was allocated in this run, or in the one before (a kubelet restart does not lose a deferred resize).
    const restored = checkpointed.get(pod.metadata.uid);
    checkpointed.delete(pod.metadata.uid);
    const allocation = held && record.allocated ? allocationOf(record.allocated) : restored;
    const candidate = allocation ? withAllocation(pod, allocation) : pod;
    const policy = options.admission;
    if (!policy) {
      record.allocated = pod;
      return;
    }
    const admitted = admittedBeside(record);
    const rejection = admitPod(candidate, admitted.length, policy, sumRequests(admitted));
    const before = record.rejected;
    record.rejected = rejection;
    if (!rejection) {
      record.allocated = candidate;
      if (before) record.status = undefined;
      allocateResize(record);
      saveAllocations();
      return;
    }
    record.allocated = undefined;
    record.pending = undefined;
    saveAllocations();
    record.status = rejectedStatus(rejection, options.hostIP);
    if (before?.message === rejection.message) return;
    // A Warning event is also the log line (the recorder logs warnings).
    deps.events.record(pod, "Warning", rejection.reason, rejection.message);
  };

  /**
   * Allocates the resize an admitted pod's spec asks for when it fits, the Go kubelet's handlePodResourcesResize:
   * Infeasible beyond the node's allocatable, Deferred while the other pods' allocations leave no room (a Warning
   * event when that changes), else allocated (ResizeStarted) and carried out by the pod's next sync. True when
   * allocated.
   */
  const allocateResize = (record: PodRecord): boolean => {
    const { pod, allocated } = record;
    const pending =
      pod &&
      allocated &&
      resizeAllocation(pod, allocated, () => admittedBeside(record), options.admission?.allocatable);
    if (!pod || !pending || pending === "none") {
      record.pending = undefined;
      return false;
    }
    if (pending === "allocate") {
      record.allocated = pod;
      record.pending = undefined;
      deps.events.record(pod, "Normal", "ResizeStarted", resizeEventMessage("Pod resize started", pod));
      return true;
    }
    if (record.pending?.reason !== pending.reason || record.pending.message !== pending.message)
      deps.events.record(
        pod,
        "Warning",
        `Resize${pending.reason}`,
        resizeEventMessage(`Pod resize ${pending.reason}`, pod, pending.message),
      );
    record.pending = pending;
    return false;
  };

  /**
   * Deferred resizes, tried again when room may have been freed (a pod left or shrank) and on every resync, in the Go
   * kubelet's order (pendingResizeOrder; retryPendingResizes): the pods whose resize is allocated, or whose reason
   * changed, sync.
   */
  const retryPendingResizes = () => {
    const deferred = wanted()
      .filter(([, r]) => r.pending?.reason === "Deferred" && !r.rejected)
      .map(([, record]) => ({
        record,
        pod: record.pod!,
        allocated: record.allocated!,
        since: Date.parse(
          record.status?.conditions?.find((c) => c.type === "PodResizePending")?.lastTransitionTime ?? "",
        ),
      }));
    for (const { record, pod } of pendingResizeOrder(deferred)) {
      const before = record.pending?.message;
      if (allocateResize(record) || record.pending?.message !== before) {
        bump();
        trigger(pod.metadata.uid);
      }
    }
    saveAllocations();
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
    const hash = pod.metadata.annotations[ANNOTATION.hash];
    // The one decision of whether the pod changed: against the manifest it was last accepted with.
    const changed = record.pod === undefined || record.hash !== hash;
    const returned = !record.wanted;
    const held = record.wanted && !record.rejected;
    record.pod = boundToNode(pod, options.hostname);
    record.hash = hash;
    record.wanted = true;
    bump();
    if (changed) {
      // A changed manifest is a new pod as far as eviction and a finished run go.
      stoppedEviction(record);
      record.eviction = undefined;
      record.finished = false;
    }
    if (changed || returned) {
      admit(record, held);
      trigger(pod.metadata.uid);
      if (held && record.rejected) readmit();
      // Its allocation may have shrunk: room for a deferred resize.
      if (held) retryPendingResizes();
    }
  };

  const drop = (uid: string, pod?: Pod) => {
    const record = recordOf(uid);
    const freed = record.wanted && !record.rejected;
    record.wanted = false;
    record.rejected = undefined;
    record.pending = undefined;
    record.pod ??= pod;
    trigger(uid);
    if (freed) {
      retryPendingResizes();
      readmit();
    }
  };

  const onUpdate = (update: { op: string; pods: Pod[] }) => {
    bump();
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
    const listedAt = passClock;
    const observed = await observer.observe();
    const listing = { pods: observed, listedAt };
    const isWanted = (uid: string) => records.get(uid)?.wanted === true;
    retryPendingResizes();
    for (const [uid] of wanted()) trigger(uid, listing);
    if (store.allSourcesReady()) {
      // Checkpointed allocations of pods no source wants any more go (the Go kubelet's RemoveOrphanedPods).
      for (const uid of checkpointed.keys()) if (!isWanted(uid)) checkpointed.delete(uid);
      saveAllocations();
      for (const uid of observed.keys()) if (!isWanted(uid)) trigger(uid, listing);
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
        states[c.running ? "running" : c.state === "CONTAINER_CREATED" ? "created" : "exited"] =
          (states[c.running ? "running" : c.state === "CONTAINER_CREATED" ? "created" : "exited"] ?? 0) + 1;
    }
    metrics.setRunning(runningPods, states);
    metrics.setWorkingPods(workingPods());
    lastSync = clock.now();
  };

  /** kubelet_working_pods: every pod with a worker, by its state, whether a source wants it, and whether its spec is known. */
  const workingPods = (): WorkingPods[] => {
    const counts = new Map<string, WorkingPods>();
    for (const record of records.values()) {
      const lifecycle = record.worker.state === "syncing" ? "sync" : record.worker.state;
      const config = record.wanted ? "desired" : record.pod ? "orphan" : "runtime_only";
      const key = `${lifecycle}/${config}/${record.pod !== undefined}`;
      const entry =
        counts.get(key) ?? counts.set(key, { lifecycle, config, static: record.pod !== undefined, count: 0 }).get(key)!;
      entry.count++;
    }
    return [...counts.values()];
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
        status: record.status ?? pendingStatus(options.hostIP),
      }));
    },
    lastSyncAt: () => lastSync,
    version: () => version,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    activePods: () =>
      wanted()
        .filter(([, r]) => !r.eviction && r.status?.phase !== "Succeeded" && r.status?.phase !== "Failed")
        .map(([, r]) => synced(r)),
    evict(pod, message, options = {}) {
      const record = records.get(pod.metadata.uid);
      if (!record?.wanted || stopping) return Promise.resolve();
      log.warn(`evicting pod ${podKey(pod)}: ${message}`);
      deps.events.record(pod, "Warning", options.reason ?? "Evicted", message);
      record.eviction ??= { message, stopped: [], ...options };
      const stopped = new Promise<void>((resolve) => record.eviction!.stopped.push(resolve));
      bump();
      trigger(pod.metadata.uid);
      return stopped;
    },
  };
}

function pendingStatus(hostIP: string): V1PodStatus {
  return { phase: "Pending", hostIP, conditions: [{ type: "PodScheduled", status: "True" }] };
}
