// Part of the composition root: wires the managers that keep the node alive over months — image
// GC, container GC, the resource analyzer behind /stats/summary, the eviction manager and the
// system OOM watcher — onto the real host (statfs, /proc, the memory cgroup, /dev/kmsg) and runs
// each on the Go kubelet's period.
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { every, type Clock } from "./clock.ts";
import type { KubeletConfig } from "./config/config-types.ts";
import { parseDuration } from "./api/duration.ts";
import type { Runtime } from "./container/runtime.ts";
import type { Pod } from "./api/types.ts";
import type { Logger } from "./log.ts";
import { createContainerGc } from "./node/gc/container-gc.ts";
import { createContainerLogManager, logRotationPolicy } from "./node/logs/container-log-manager.ts";
import type { EventRecorder } from "./node/events/events.ts";
import type { CgroupManager } from "./node/cm/cgroups.ts";
import type { CgroupDetail } from "./node/stats/cgroup-stats.ts";
import { createEvictionManager, type NodeCondition } from "./node/eviction/eviction.ts";
import { evictionUsage, parseThresholds } from "./node/eviction/eviction-thresholds.ts";
import { podStorageUse } from "./node/eviction/local-storage.ts";
import { diskUsage, statFs } from "./node/stats/filesystem.ts";
import { createImageGc, type ImageGc } from "./node/images/image-gc.ts";
import { createNodeSignals, memoryStats } from "./node/eviction/node-signals.ts";
import { createMemcgNotifier, memcgThresholdBytes } from "./node/eviction/memcg-notifier.ts";
import { createEventFd } from "./platform/libc.ts";
import { createNodeShutdownManager, shutdownGroups } from "./node/shutdown/node-shutdown.ts";
import { watchSystemOoms } from "./node/oom/oom-watcher.ts";
import { createShutdownState, SHUTDOWN_STATE_FILE, type ShutdownTimesSink } from "./node/shutdown/shutdown-state.ts";
import { createStatsAnalyzer, type StatsSummary } from "./node/stats/stats-analyzer.ts";
import { createUsageSampler, type UsageSample } from "./node/stats/usage-sampler.ts";
import type { PressureObserver } from "./node/status/node-status.ts";
import { emptyDirPath } from "./node/volumes/volumes.ts";
import { createDeviceManager, type DeviceManager } from "./node/cm/devicemanager/manager.ts";
import { connectPlugin } from "./node/cm/devicemanager/endpoint.ts";
import { serveRegistration } from "./node/cm/devicemanager/registration-server.ts";
import { servePodResources, type PodResourcesProviders } from "./node/podresources/podresources-server.ts";

/** What the managers need of the rest of the kubelet (bound late: the sync loop is made after the image GC). */
export interface ManagedNode {
  /** Desired pods with statuses. */
  pods(): Pod[];
  activePods(): Pod[];
  /** Stops a pod and reports it Failed: reason Evicted unless given, within `graceSeconds` when given. */
  evict(pod: Pod, message: string, options?: { reason?: string; graceSeconds?: number }): Promise<void>;
  allSourcesReady(): boolean;
}

export interface NodeManagers {
  imageGc: ImageGc;
  summary(): StatsSummary | undefined;
  /** The collection, its pods read first when older than 15 s (the analyzer reads them only while asked). */
  currentSummary(network: boolean): Promise<StatsSummary | undefined>;
  /** A fresh read of the pod and container cgroups (/metrics/resource, /metrics/cadvisor); undefined without them. */
  sample(detail?: CgroupDetail): Promise<UsageSample | undefined>;
  conditions(): NodeCondition[];
  /** The conditions for the node record (fleet mode). */
  pressure: PressureObserver;
  /** From systemd-logind's PrepareForShutdown(true) until a cancelling one: no pod is admitted meanwhile. */
  nodeShuttingDown(): boolean;
  /** A failing health check while systemd-logind has announced a shutdown (the node is then not ready). */
  shutdownCheck(): { name: string; ok: boolean; message: string } | undefined;
  /** Runs every manager on its period until the signal aborts. */
  run(node: ManagedNode, signal: AbortSignal): Promise<void>;
  /** Device plugins: the node's extended resources, their admission and each container's devices. */
  devices: DeviceManager;
  /**
   * Reads the device checkpoint and serves <root_dir>/device-plugins/kubelet.sock and the pod resources API
   * (<root_dir>/pod-resources/kubelet.sock) until the signal aborts; called before any pod is admitted. `cpuMemory`:
   * the CPU and memory managers' answers for the pod resources API, when they run.
   */
  startResourceManagers(
    activePods: () => Pod[],
    signal: AbortSignal,
    cpuMemory?: Pick<PodResourcesProviders, "cpus" | "memory">,
  ): Promise<void>;
}

/** Largest emptyDir walk (entries) per volume and pass: a volume of millions of files cannot stall the managers. */
const WALK_BUDGET = 200_000;

export function createNodeManagers(
  config: KubeletConfig,
  deps: {
    runtime: Runtime;
    events: EventRecorder;
    nodeName: string;
    clock: Clock;
    log: Logger;
    /** Where the last graceful node shutdown's times go (kubelet_graceful_shutdown_*_time_seconds). */
    metrics?: ShutdownTimesSink;
    /** The pod cgroups (cgroupsPerQOS): pods' and containers' CPU and memory are read from their files. */
    cgroups?: Pick<CgroupManager, "podCgroups" | "reader">;
  },
): NodeManagers {
  const { runtime, clock, log } = deps;
  // resolveConfig has checked the thresholds already: this parse cannot fail.
  const thresholds = parseThresholds(
    {
      hard: config.evictionHard,
      soft: config.evictionSoft,
      softGracePeriod: config.evictionSoftGracePeriod,
      minimumReclaim: config.evictionMinimumReclaim,
    },
    parseDuration,
  );
  // Only with node shutdown configured: the D-Bus client is loaded then, never otherwise.
  const groups = shutdownGroups(config);
  const shutdown =
    groups.length > 0
      ? createNodeShutdownManager(
          {
            groups,
            setting: config.shutdownGracePeriodByPodPriority.length
              ? "shutdownGracePeriodByPodPriority"
              : "shutdownGracePeriod",
            clock,
            log: log.child("shutdown"),
          },
          {
            connect: async () =>
              (await import("./node/shutdown/logind.ts")).connectLogind({ log: log.child("shutdown") }),
            activePods: () => node?.activePods() ?? [],
            stopPod: (pod, graceSeconds, reason, message) =>
              node?.evict(pod, message, { reason, graceSeconds }) ?? Promise.resolve(),
            ...(deps.metrics
              ? {
                  state: createShutdownState(join(config.rootDir, SHUTDOWN_STATE_FILE), {
                    metrics: deps.metrics,
                    now: () => clock.now(),
                    log: log.child("shutdown"),
                  }),
                }
              : {}),
          },
        )
      : undefined;
  const containerLogs = createContainerLogManager(logRotationPolicy(config), {
    runtime,
    clock,
    log: log.child("container-logs"),
  });
  const imageGc = createImageGc(
    {
      highThresholdPercent: config.imageGcHighThreshold,
      lowThresholdPercent: config.imageGcLowThreshold,
      minAgeMs: config.minimumImageTtlDuration,
      maxAgeMs: config.imageMaximumGcAge,
      pauseImage: config.networkContainerImage,
      nodeName: deps.nodeName,
      clock,
      log: log.child("image-gc"),
      events: deps.events,
    },
    { runtime, statFs },
  );
  let dataRoot: Promise<string> | undefined;
  const measureImageFsPath = () =>
    (dataRoot ??= runtime.imageFsInfo().then((fs) => fs.mountpoint)).catch((error) => {
      dataRoot = undefined; // ask again next time: the daemon may be back
      throw error;
    });
  const measureNode = createNodeSignals({ rootDir: config.rootDir, imageFsPath: measureImageFsPath, statFs });
  const emptyDir = (uid: string, volume: string) => diskUsage(emptyDirPath(config.rootDir, uid, volume), WALK_BUDGET);
  /** The rest of the kubelet, known once run() starts; nothing below calls it before. */
  let node: ManagedNode | undefined;
  const analyzer = createStatsAnalyzer(
    {
      nodeName: deps.nodeName,
      fsPeriodMs: Math.max(1000, config.volumeStatsAggPeriod),
      containerStatsPeriodMs: 30_000,
      clock,
    },
    {
      runtime,
      log: log.child("stats"),
      pods: () => node?.pods() ?? [],
      measureNode,
      emptyDirUsage: emptyDir,
      ...(deps.cgroups
        ? {
            sampler: (listing: Parameters<typeof createUsageSampler>[0]["listing"]) =>
              createUsageSampler({
                reader: deps.cgroups!.reader,
                podCgroups: deps.cgroups!.podCgroups,
                listing,
                now: () => clock.now(),
              }),
          }
        : {}),
    },
  );
  const eviction = createEvictionManager(
    {
      thresholds,
      pressureTransitionPeriodMs: config.evictionPressureTransitionPeriod,
      maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
      localStorageCapacityIsolation: config.localStorageCapacityIsolation,
      clock,
      log: log.child("eviction"),
    },
    {
      observe: async () => (await measureNode()).observations,
      activePods: () => node?.activePods() ?? [],
      // Ranked by a collection at most 15 s old: pods are read for the ranking when nothing else read them lately.
      podUsage: async (pods, resource) => evictionUsage(await analyzer.current(false), pods, resource),
      storageUse: () => podStorageUse(analyzer.summary()),
      // The Go kubelet's dedicatedImageFs: the runtime's image filesystem is another device than root_dir's.
      dedicatedImageFs: async () => {
        const devices = Promise.all([stat(config.rootDir), measureImageFsPath().then((p) => stat(p))]);
        return devices.then(([root, images]) => root.dev !== images.dev).catch(() => false);
      },
      emptyDirUsage: async (pod, volume) => (await emptyDir(pod.metadata.uid, volume)).bytes,
      reclaimImages: (bytes) => imageGc.freeSpace(bytes),
      evict: (pod, message, graceSeconds) =>
        node?.evict(pod, message, graceSeconds === undefined ? {} : { graceSeconds }) ?? Promise.resolve(),
    },
  );

  const devices = createDeviceManager(
    { dir: join(config.rootDir, "device-plugins"), clock, log: log.child("devicemanager") },
    { connect: connectPlugin, serve: serveRegistration },
  );

  return {
    devices,
    async startResourceManagers(activePods, signal, cpuMemory) {
      const stops: Array<() => Promise<void>> = [];
      // A socket that cannot be served (a root_dir path too long for a unix socket) costs the feature, not the node.
      await devices.start({ activePods }).then(
        () => stops.push(() => devices.stop()),
        (error: Error) => log.error(`device plugins are not served: ${error.message}`),
      );
      const socket = join(config.rootDir, "pod-resources", "kubelet.sock");
      await servePodResources(socket, { activePods, devices, ...cpuMemory }).then(
        (stop) => stops.push(stop),
        (error: Error) => log.error(`the pod resources API is not served: ${error.message}`),
      );
      signal.addEventListener("abort", () => void Promise.allSettled(stops.map((stop) => stop())), { once: true });
    },
    imageGc,
    summary: analyzer.summary,
    currentSummary: analyzer.current,
    sample: analyzer.sample,
    conditions: eviction.conditions,
    nodeShuttingDown: () => shutdown?.shuttingDown() ?? false,
    shutdownCheck: () =>
      shutdown?.shuttingDown()
        ? { name: "shutdown", ok: false, message: "systemd-logind announced a shutdown (PrepareForShutdown)" }
        : undefined,
    pressure: {
      conditions: () => [
        ...eviction
          .conditions()
          .map(({ type, status, reason, message }) => ({ type, pressure: status === "True", reason, message })),
      ],
    },
    async run(managed, signal) {
      node = managed;
      const containerGc = createContainerGc(
        {
          minAgeMs: config.minimumContainerTtlDuration,
          maxPerPodContainer: config.maximumDeadContainersPerContainer,
          maxContainers: config.maximumDeadContainers,
        },
        {
          runtime,
          desiredPods: () => new Set(managed.pods().map((p) => p.metadata.uid)),
          allSourcesReady: managed.allSourcesReady,
          clock,
          log: log.child("container-gc"),
        },
      );
      const warn = (what: string) => (error: Error) => log.warn(`${what} failed: ${error.message}`);
      // One eviction pass at a time: the 10 s period's, or one the kernel's memory notification asks for meanwhile.
      let passing: Promise<void> | undefined;
      const evictionPass = () =>
        (passing ??= (async () => {
          await analyzer.refresh().catch(warn("stats collection"));
          await eviction.synchronize();
          await armMemcgNotifiers();
        })().finally(() => (passing = undefined)));
      // kernelMemcgNotification: the root memory cgroup signals each memory.available threshold's crossing.
      const memoryThresholds = config.kernelMemcgNotification
        ? thresholds.filter((t) => t.signal === "memory.available")
        : [];
      const notifiers = memoryThresholds.map((threshold) => ({
        threshold,
        notifier: createMemcgNotifier(
          {
            cgroupPath: "/sys/fs/cgroup/memory",
            onCrossed: () => {
              log.info(`the kernel signalled memory.available crossing ${threshold.text}: eviction runs now`);
              void evictionPass().catch(warn("eviction"));
            },
          },
          { eventfd: createEventFd },
        ),
      }));
      let notifierRefused = false;
      const armMemcgNotifiers = async () => {
        if (!notifiers.length || notifierRefused) return;
        const memory = await memoryStats();
        for (const { threshold, notifier } of notifiers) {
          const why = await notifier.setThreshold(memcgThresholdBytes(memory, threshold));
          if (why && !notifierRefused) {
            notifierRefused = true; // said once: memory is then measured every 10 s only
            log.warn(
              `kernelMemcgNotification: no memory threshold notifications: ${why}; memory is measured every 10 s`,
            );
          }
        }
      };
      signal.addEventListener("abort", () => {
        for (const { notifier } of notifiers) notifier.stop();
      });
      // The Go kubelet's periods: container GC 1m, eviction and stats 10s; image GC checks statfs every 10s and
      // lists images only above its threshold or every 5m (a disk filled between upstream's 5 min ImageGCPeriod
      // passes is freed at once even with eviction off: test/e2e/image-gc*.test.ts).
      await Promise.all([
        watchSystemOoms({ nodeName: deps.nodeName, events: deps.events, log: log.child("oom"), clock }, signal),
        every(clock, 60_000, signal, containerGc, warn("container garbage collection")),
        // CRI runtimes only: Docker's json-file driver rotates its own (max-size, max-file).
        runtime.reopenContainerLog ? containerLogs.run(signal) : undefined,
        shutdown?.run(signal),
        every(clock, 10_000, signal, imageGc.garbageCollect, warn("image garbage collection")),
        every(clock, 10_000, signal, evictionPass, warn("eviction")),
      ]);
    },
  };
}
