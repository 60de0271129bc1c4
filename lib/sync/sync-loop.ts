// Layer sync/: turns the store's desired state into running pods — the sync loop and pod workers
// (this file), one pod's sync step, pod status, runonce. Imports api/, sources/store.ts (the
// updates), node/ (images, volumes, probes, events, back-off) and the container/ Runtime port; never
// an adapter (docker.ts) and never server/.
//
// The sync loop: store updates, Docker events and a resync every --sync_frequency trigger pod
// workers (one sync in flight per pod, the latest spec wins, bounded parallelism). Pods no source
// wants are killed only once every source has reported; a kubelet restart adopts what runs.
import type { Clock, Timer } from "../clock.ts";
import { LABEL, type Runtime } from "../container/runtime.ts";
import type { EventRecorder } from "../node/events.ts";
import type { ImageManager } from "../node/images.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { computePodStatus, type Waiting } from "./pod-status.ts";
import { createPodSyncer, type Observed, type PodSyncOptions } from "./pod-sync.ts";
import type { createProbeManager } from "../node/probes.ts";
import type { PodStore } from "../sources/store.ts";
import { ANNOTATION, podKey, type Pod, type V1PodStatus } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes.ts";
import { configKey } from "../api/config-objects.ts";
import { podConfigRefs } from "../api/config-refs.ts";

export interface SyncLoopOptions extends PodSyncOptions {
  syncFrequencyMs: number;
  /** Pods synced at once (default 4). */
  parallelism?: number;
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
}

interface Worker {
  busy: boolean;
  again: boolean;
  retry?: Timer;
  /** A fresh observation handed over by the resync, saving a listing per pod. */
  observed?: Map<string, Observed>;
}

export function createSyncLoop(options: SyncLoopOptions, deps: SyncLoopDeps): SyncLoop {
  const { store, runtime, clock, log, metrics } = deps;
  const desired = new Map<string, Pod>();
  /** The last spec of pods no source wants any more: their preStop hooks and grace periods. */
  const removed = new Map<string, Pod>();
  const firstSeen = new Map<string, number>();
  const started = new Set<string>();
  const statuses = new Map<string, V1PodStatus>();
  const waitingByPod = new Map<string, Map<string, Waiting>>();
  const podIPs = new Map<string, string>();
  const livenessFailed = new Set<string>();
  const workers = new Map<string, Worker>();
  const slots = { free: options.parallelism ?? 4, queue: [] as Array<() => void> };
  let lastSync = 0;
  let stopping = false;
  let version = 0;

  const probes = deps.createProbeManager(
    { clock, log: log.child("probes"), metrics, events: deps.events },
    {
      runtime,
      onLivenessFailure: (uid, _name, containerId) => {
        livenessFailed.add(containerId);
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
    let worker = workers.get(uid);
    if (!worker) workers.set(uid, (worker = { busy: false, again: false }));
    worker.observed = worker.busy ? undefined : observed;
    if (worker.busy) {
      worker.again = true;
      return;
    }
    worker.retry?.cancel();
    worker.retry = undefined;
    worker.busy = true;
    void work(uid, worker);
  };

  const work = async (uid: string, worker: Worker) => {
    await acquire();
    const began = clock.now();
    try {
      const pod = desired.get(uid);
      const handed = worker.observed;
      worker.observed = undefined;
      const observed = (handed ?? (await syncer.observe(uid))).get(uid) ?? [];
      if (pod) {
        const result = await syncer.syncPod(pod, observed, livenessFailed);
        for (const c of observed) livenessFailed.delete(c.id);
        waitingByPod.set(uid, result.waiting);
        podIPs.set(uid, result.podIP);
        if (result.retryAfterMs !== undefined) worker.retry = clock.setTimeout(() => trigger(uid), result.retryAfterMs);
        updateStatus(pod, result.changed ? ((await syncer.observe(uid)).get(uid) ?? []) : observed);
        metrics.podWorker(started.has(uid) ? "sync" : "create", (clock.now() - began) / 1000);
      } else if (observed.length > 0 && store.allSourcesReady()) {
        log.info(
          `pod ${observed[0]!.labels[LABEL.podNamespace]}/${observed[0]!.labels[LABEL.podName]} is no longer wanted by any source: stopping it`,
        );
        await syncer.killPod(uid, observed, removed.get(uid));
        forget(uid);
      }
    } catch (error) {
      const e = error as Error & { code?: string };
      if (e.code === "RuntimeUnavailable") log.warn(`sync of pod ${uid} paused: ${e.message}`);
      else log.error(`sync of pod ${desired.get(uid) ? podKey(desired.get(uid)!) : uid} failed: ${e.message}`);
      worker.retry = clock.setTimeout(() => trigger(uid), 5000);
    } finally {
      release();
      worker.busy = false;
      if (worker.again && !stopping) {
        worker.again = false;
        trigger(uid);
      } else if (!desired.has(uid) && !worker.retry) workers.delete(uid);
    }
  };

  const updateStatus = (pod: Pod, observed: Observed) => {
    const uid = pod.metadata.uid;
    const status = computePodStatus({
      pod,
      containers: observed,
      waiting: waitingByPod.get(uid) ?? new Map(),
      isReady: (id) => probes.isReady(id),
      isStarted: (id) => probes.isStarted(id),
      hostIP: options.hostIP,
      podIP: podIPs.get(uid) ?? "",
      firstSeen: firstSeen.get(uid) ?? clock.now(),
      previous: statuses.get(uid),
    });
    if (JSON.stringify(statuses.get(uid)) !== JSON.stringify(status)) version++;
    statuses.set(uid, status);
    if (!started.has(uid) && status.containerStatuses?.every((c) => c.state?.running)) {
      started.add(uid);
      metrics.podStart((clock.now() - (firstSeen.get(uid) ?? clock.now())) / 1000);
    }
  };

  const forget = (uid: string) => {
    removed.delete(uid);
    statuses.delete(uid);
    waitingByPod.delete(uid);
    podIPs.delete(uid);
    firstSeen.delete(uid);
    started.delete(uid);
    syncer.forget(uid);
    probes.removePod(uid);
  };

  const accept = (pod: Pod) => {
    const uid = pod.metadata.uid;
    const before = desired.get(uid);
    desired.set(uid, pod);
    removed.delete(uid);
    version++;
    if (!firstSeen.has(uid)) firstSeen.set(uid, clock.now());
    if (!before || before.metadata.annotations[ANNOTATION.hash] !== pod.metadata.annotations[ANNOTATION.hash])
      trigger(uid);
  };

  const drop = (uid: string, pod: Pod) => {
    desired.delete(uid);
    removed.set(uid, pod);
    trigger(uid);
  };

  const onUpdate = (update: { op: string; pods: Pod[] }) => {
    version++;
    if (update.op === "SET") {
      const next = new Set(update.pods.map((p) => p.metadata.uid));
      for (const [uid, pod] of [...desired]) {
        if (!next.has(uid)) drop(uid, pod);
      }
      for (const pod of update.pods) accept(pod);
    } else if (update.op === "REMOVE") {
      for (const pod of update.pods) drop(pod.metadata.uid, desired.get(pod.metadata.uid) ?? pod);
    } else {
      for (const pod of update.pods) accept(pod);
    }
  };

  /** A ConfigMap or Secret appeared, changed or went away: sync the pods that read it (volumes follow at once). */
  const onConfigChange = (changed: ReadonlySet<string>) => {
    for (const [uid, pod] of desired) {
      const refs = podConfigRefs(pod);
      if (refs.some((ref) => changed.has(configKey(ref.kind, pod.metadata.namespace, ref.name)))) trigger(uid);
    }
  };

  /** Every pod, every orphan, garbage and leftover pod directories. */
  const resync = async () => {
    const observed = await syncer.observe();
    for (const uid of desired.keys()) trigger(uid, observed);
    if (store.allSourcesReady()) {
      for (const uid of observed.keys()) if (!desired.has(uid)) trigger(uid, observed);
      const dirs = await deps.volumes.podDirs();
      for (const uid of dirs) if (!desired.has(uid) && !observed.has(uid)) await deps.volumes.teardown(uid);
    }
    const states: Record<string, number> = {};
    let runningPods = 0;
    for (const [uid, containers] of observed) {
      if (desired.has(uid)) await syncer.collectGarbage(containers);
      if (containers.some((c) => c.running)) runningPods++;
      for (const c of containers)
        states[c.running ? "running" : c.state === "created" ? "created" : "exited"] =
          (states[c.running ? "running" : c.state === "created" ? "created" : "exited"] ?? 0) + 1;
    }
    metrics.setRunning(runningPods, states);
    lastSync = clock.now();
  };

  const watchEvents = async (signal: AbortSignal) => {
    let delay = 500;
    while (!signal.aborted) {
      try {
        for await (const event of runtime.events(signal)) {
          delay = 500;
          const uid = event.labels[LABEL.podUid];
          if (uid && !event.action.startsWith("exec_")) trigger(uid);
        }
      } catch (error) {
        if (signal.aborted) break;
        log.warn(`Docker events stream lost: ${(error as Error).message}; reconnecting in ${delay / 1000}s`);
      }
      await clock.sleep(delay, signal).catch(() => {});
      delay = Math.min(delay * 2, 30_000);
      if (!signal.aborted) void resync().catch(() => {}); // catch up on what happened while blind
    }
  };

  return {
    async run(signal) {
      const unsubscribe = store.subscribe(onUpdate);
      const unsubscribeConfigs = store.subscribeConfigs(onConfigChange);
      for (const pod of store.mergedState()) accept(pod);
      void store.whenAllSourcesReady().then(() => !signal.aborted && void resync().catch(() => {}));
      const events = watchEvents(signal);
      let failures = 0;
      while (!signal.aborted) {
        try {
          await resync();
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
      for (const worker of workers.values()) worker.retry?.cancel();
      for (const uid of desired.keys()) probes.removePod(uid);
      await events;
      // Let syncs in flight finish their current step so no container is left half-created.
      const deadline = clock.now() + 5000;
      while ([...workers.values()].some((w) => w.busy) && clock.now() < deadline) await clock.sleep(50);
    },
    pods() {
      return [...desired.values()].map((pod) => ({
        ...pod,
        status: statuses.get(pod.metadata.uid) ?? pendingStatus(options.hostIP),
      }));
    },
    lastSyncAt: () => lastSync,
    version: () => version,
  };
}

function pendingStatus(hostIP: string): V1PodStatus {
  return { phase: "Pending", hostIP, conditions: [{ type: "PodScheduled", status: "True" }] };
}
