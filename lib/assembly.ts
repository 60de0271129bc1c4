// One assembly for `run`, `runonce` and `plan`: from the config it builds the node's identity, the
// pod sources, the merge store (with the admission settings), the runtime with its decorators
// (request timeout, node scoping, instrumentation), the pod placement, the image and volume
// managers, the node managers and the sync loop, so the three commands cannot drift apart. Parts
// with side effects on the host (cgroups, the managers' timers) are built only when asked for.
import { containerUnified } from "./node/cm/memory-qos.ts";
import { ephemeralStorageAllocatable, filesystemCapacity } from "./node/cm/ephemeral-storage.ts";
import { readFileSync } from "node:fs";
import { cpus, hostname as osHostname, networkInterfaces, totalmem } from "node:os";
import { logRotationPolicy } from "./node/logs/container-log-manager.ts";
import { podCapacity } from "./node/cm/pod-capacity.ts";
import { join } from "node:path";
import { assignNodeUids } from "./api/pod-uid.ts";
import { protectedHostPaths } from "./api/host-paths.ts";
import { KubeletError } from "./api/types.ts";
import { systemClock } from "./clock.ts";
import type { ResolvedConfig } from "./config/config.ts";
import type { KubeletConfig } from "./config/config-types.ts";
import { etcdSettings } from "./config/etcd-config.ts";
import { decorateRuntime } from "./container/decorated.ts";
import { LABEL, type Runtime } from "./container/runtime.ts";
import type { Logger } from "./log.ts";
import type { KubeletMetrics } from "./metrics.ts";
import type { NodeManagers } from "./node-managers.ts";
import { backoffFile } from "./node/state/backoff-file.ts";
import { ALLOCATION_FILE, allocationFile } from "./node/state/allocation-file.ts";
import { createEventRecorder, type EventRecorder } from "./node/events/events.ts";
import { createImageManager, type ImageManager, type PullObserver } from "./node/images/images.ts";
import { setUpPodPlacement, type PodPlacement } from "./node/cm/placement.ts";
import { createProbeManager } from "./node/prober/probes.ts";
import { createVolumeManager, type VolumeManager } from "./node/volumes/volumes.ts";
import { cgroupVersion, nodeAllocatable } from "./node/cm/cgroups.ts";
import { goArch } from "./node/status/node-status.ts";
import { createSysctlAllowlist } from "./sync/sysctls.ts";
import { createPrometheusMetrics } from "./server/prometheus.ts";
import { requireReady, type PodSource, type SourceSnapshot, type StopSource } from "./sources/source.ts";
import { createPodStore, type PodStore } from "./sources/store.ts";
import { createUrlSource } from "./sources/url.ts";
import type { AdmissionPolicy } from "./sync/admission.ts";
import type { ResourceManagers } from "./node/cm/resource-managers.ts";
import { withReservedSystemCPUs } from "./node/cm/cpuset.ts";
import type { PodExecutorOptions } from "./sync/pod-executor.ts";
import type { BackoffEntry } from "./node/flowcontrol/backoff.ts";
import type { SyncLoop } from "./sync/sync-loop.ts";
import { createPlegHealth } from "./container/pleg/health.ts";
import type { HealthCheck } from "./node/status/node-status.ts";

/** The subcommand an assembly is for: only `run` persists back-off and runs the node managers. */
export type AssemblyCommand = "run" | "runonce" | "plan";

/** A runtime as --container_runtime names it, before the decorators, and how to name it in messages. */
export interface OpenedRuntime {
  runtime: Runtime;
  description: string;
  /** /healthz's "pleg" check where a PLEG relists (the CRI); the Docker adapter follows the Engine's events. */
  plegCheck?: () => HealthCheck;
  /** kubelet_pleg_last_seen_seconds' source (pleg/health.ts lastSeen). */
  plegLastSeen?: () => number | undefined;
}

export interface AssemblyOptions {
  command: AssemblyCommand;
  log: Logger;
  /** Where each setting came from; without it (a programmatic caller) every value counts as given. */
  resolved?: Pick<ResolvedConfig, "origins">;
}

export interface AssemblyDeps {
  /** Default: the Docker shim or the CRI client, as --container_runtime says; tests pass a fake runtime. */
  openRuntime?: (config: KubeletConfig, log: Logger, metrics?: KubeletMetrics) => Promise<OpenedRuntime>;
}

export interface Assembly {
  node: { name: string; ip: string };
  metrics: ReturnType<typeof createPrometheusMetrics>;
  events: EventRecorder;
  sources: PodSource[];
  store: PodStore;
  /** The runtime with every decorator: node scoping, then instrumentation. */
  runtime: Runtime;
  runtimeDescription: string;
  /** /healthz's "pleg" check, where the runtime has a PLEG. */
  plegCheck?: () => HealthCheck;
  /** --max_pods and the sources allowed each host namespace. */
  admission: AdmissionPolicy;
  /** Every pod's sync options apart from the placement's. */
  podOptions: PodExecutorOptions;
  /** The crash-loop back-off `run` keeps under root_dir, as last saved (read only: `plan`). */
  savedCrashLoopBackoff(): Record<string, BackoffEntry>;
  /**
   * Reads which pods the runtime holds (before the sources are read): a pod whose containers run under the
   * UID an earlier release gave it keeps that UID, so an upgrade restarts nothing. Until this succeeds,
   * pods keep the earlier, node-less UIDs.
   */
  adoptRunningPods(): Promise<void>;
  /**
   * Applies one read of every source to the store (etcd: started, heard once and stopped, within 10 s). The sources
   * are read at once; with `after` (runonce: adoptRunningPods, whose UIDs the store's identify reads), while it runs,
   * and applied once it is done.
   */
  readSourcesOnce(after?: Promise<void>): Promise<void>;
  /** Sets up the pods' cgroups, DNS and oom floor on the host (`run` and `runonce`). */
  placePods(): Promise<PodPlacement>;
  /** The image manager; `checkSpace` is image GC's refusal of a pull that would fill the disk, `pulls` a display. */
  images(checkSpace?: (image: string) => Promise<void>, pulls?: PullObserver): ImageManager;
  volumes(): VolumeManager;
  /**
   * Image and container GC, stats, eviction and the OOM watcher (`run`). Their modules load here, not with the
   * assembly: a `runonce` never evaluates them (issue 41 item 7).
   */
  nodeManagers(placement: PodPlacement): Promise<NodeManagers>;
  /** The sync loop over the store, the runtime and the placement (`run`; its modules load here, as above). */
  /** `resources`: the topology, CPU and memory managers (admission and each container's cpusets), when in use. */
  syncLoop(placement: PodPlacement, managers: NodeManagers, resources?: ResourceManagers): Promise<SyncLoop>;
}

/** Builds what `command` needs from the config; contacts neither the runtime nor a source yet. */
export async function assemble(
  config: KubeletConfig,
  { command, log, resolved }: AssemblyOptions,
  deps: AssemblyDeps = {},
): Promise<Assembly> {
  const node = nodeIdentity(config);
  const metrics = createPrometheusMetrics({ log: log.child("metrics"), nodeName: node.name });
  // runonce shows its own progress: there, the lifecycle events log at debug.
  const events = createEventRecorder({
    log: log.child("events"),
    normalLevel: command === "runonce" ? "debug" : "info",
  });
  const sources = await createSources(config, node.name, log, metrics);
  /**
   * UIDs of the pods this node's runtime holds: a pod from a release before node UIDs keeps its UID. Until
   * the runtime has answered, every pod keeps it: a runtime down at start must not turn an upgrade into restarts.
   */
  let running: Set<string> | undefined;
  const store = createPodStore({
    sources: sources.map((s) => s.name),
    allowPrivileged: config.allowPrivileged,
    allowSensitiveHostPaths: config.allowSensitiveHostPaths,
    trustedSources: config.trustedSources,
    protectedHostPaths: protectedHostPaths(config),
    strictManifests: config.strictManifests,
    onRejected: (pod, message) => events.record(pod, "Warning", "FailedValidation", message),
    identify: assignNodeUids(node.name, (uid) => !running || running.has(uid)),
    log: log.child("config"),
    metrics,
  });
  const opened = await (deps.openRuntime ?? openRuntime)(config, log, metrics);
  if (opened.plegLastSeen) metrics.plegLastSeen(opened.plegLastSeen);
  const runtime = decorateRuntime(opened.runtime, { nodeName: node.name, metrics });
  const backoffAt = (name: string, component: string) =>
    backoffFile(join(config.rootDir, "backoff", name), log.child(component));
  const persist = (name: string, component: string) => (command === "run" ? backoffAt(name, component) : undefined);
  const podOptions: PodExecutorOptions = {
    hostname: node.name,
    hostIP: node.ip,
    networkMode: config.podNetworkMode,
    podLogsDir: config.podLogsDir,
    allowPrivileged: config.allowPrivileged,
    seccomp: { seccompDefault: config.seccompDefault, seccompRoot: join(config.rootDir, "seccomp") },
    runtimeHandlers: config.runtimeHandlers,
    maxContainerRestartMs: config.maxContainerRestartPeriod,
  };
  const admission = admissionPolicy(config, node.name);
  /** The node's cgroup version, read once: memory.oom.group and MemoryQoS's files exist on cgroup v2 only. */
  let cgroupV: 1 | 2 | undefined;
  const explicit = (key: keyof KubeletConfig) => !resolved || resolved.origins[key] !== "default";
  const assembly: Assembly = {
    node,
    metrics,
    events,
    sources,
    store,
    runtime,
    runtimeDescription: opened.description,
    ...(opened.plegCheck ? { plegCheck: opened.plegCheck } : {}),
    admission,
    podOptions,
    savedCrashLoopBackoff: () => backoffAt("crashloop.json", "sync").load(),
    async adoptRunningPods() {
      const [sandboxes, containers] = await Promise.all([runtime.listPodSandboxes(), runtime.listContainers()]);
      running = new Set([
        ...sandboxes.map((sandbox) => sandbox.metadata.uid),
        ...containers.flatMap((container) => container.labels[LABEL.podUid] ?? []),
      ]);
    },
    async readSourcesOnce(after) {
      const reads = Promise.all(sources.map(async (source) => requireReady(await readSourceOnce(source))));
      const [, snapshots] = await Promise.all([after, reads]);
      sources.forEach((source, i) => store.apply(source.name, snapshots[i]!));
    },
    placePods: () => setUpPodPlacement(config, { events, log, runtime, metrics, explicit }),
    images: (checkSpace, pulls) =>
      createImageManager(
        {
          qps: config.registryQps,
          burst: config.registryBurst,
          serialize: config.serializeImagePulls,
          maxParallel: config.maxParallelImagePulls,
          progressDeadlineMs: config.imagePullProgressDeadline,
          configs: store.configs,
          log: log.child("images"),
          metrics,
          events,
          ...(checkSpace ? { checkSpace } : {}),
          ...(pulls ? { pulls } : {}),
          backoffPersistence: persist("image-pull.json", "images"),
        },
        runtime,
      ),
    volumes: () =>
      createVolumeManager({
        rootDir: config.rootDir,
        configs: store.configs,
        hostPaths: {
          allowSensitiveHostPaths: config.allowSensitiveHostPaths,
          trustedSources: config.trustedSources,
          protectedHostPaths: protectedHostPaths(config),
        },
        log: log.child("volumes"),
      }),
    nodeManagers: async (placement) =>
      (await import("./node-managers.ts")).createNodeManagers(config, {
        runtime,
        events,
        nodeName: node.name,
        clock: systemClock,
        log,
        metrics,
        ...(placement.deps.cgroups ? { cgroups: placement.deps.cgroups } : {}),
      }),
    syncLoop: async (placement, managers, resources) =>
      (await import("./sync/sync-loop.ts")).createSyncLoop(
        {
          ...podOptions,
          syncFrequencyMs: config.syncFrequency,
          admission: {
            ...admission,
            nodeShuttingDown: managers.nodeShuttingDown,
            // One admit path: the topology manager's (devices among its providers) when the managers run.
            allocateResources: resources ? resources.admit : (pod) => managers.devices.admit(pod),
          },
          ...placement.options,
        },
        {
          ...placement.deps,
          ...(resources ? { cpusets: resources.cpusets } : {}),
          store,
          runtime,
          images: assembly.images(managers.imageGc.checkSpaceForPull),
          volumes: assembly.volumes(),
          createProbeManager,
          backoffPersistence: persist("crashloop.json", "sync"),
          containerUnified: (container) =>
            containerUnified(container, {
              cgroupVersion: (cgroupV ??= cgroupVersion()),
              singleProcessOomKill: config.singleProcessOomKill,
              memoryQos: config.featureGates.MemoryQoS === "true",
              throttlingFactor: config.memoryThrottlingFactor,
              allocatableMemoryBytes: admission.allocatable?.memoryBytes ?? totalmem(),
            }),
          ...(command === "run"
            ? { allocations: allocationFile(join(config.rootDir, ALLOCATION_FILE), log.child("sync")) }
            : {}),
          clock: systemClock,
          log: log.child("sync"),
          metrics,
          events,
          devices: managers.devices,
        },
      ),
  };
  return assembly;
}

/** Who may run what on this node: the pod count, host namespaces, node labels, sysctls, resources, features. */
function admissionPolicy(config: KubeletConfig, nodeName: string): AdmissionPolicy {
  return {
    maxPods: podCapacity(config.maxPods, config.podsPerCore, cpus().length),
    hostNetworkSources: config.hostNetworkSources,
    hostPidSources: config.hostPidSources,
    hostIpcSources: config.hostIpcSources,
    node: {
      name: nodeName,
      labels: {
        ...config.nodeLabels,
        "kubernetes.io/hostname": nodeName,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": goArch(process.arch),
      },
    },
    sysctls: createSysctlAllowlist(config.allowedUnsafeSysctls),
    allocatable: {
      ...nodeAllocatable(
        { milliCpu: cpus().length * 1000, memoryBytes: totalmem() },
        { ...withReservedSystemCPUs(config), evictionHard: config.evictionHard },
      ),
      // Requests of ephemeral-storage are admitted against root_dir's filesystem (localStorageCapacityIsolation).
      ...(config.localStorageCapacityIsolation
        ? {
            ephemeralStorageBytes: ephemeralStorageAllocatable(filesystemCapacity(config.rootDir), {
              kube: config.kubeReserved,
              system: config.systemReserved,
              evictionHard: config.evictionHard,
            }),
          }
        : {}),
    },
    features: { appArmor: appArmorEnabled(), userNamespaces: false, seLinux: false },
  };
}

/** Whether the kernel enforces AppArmor (the Go kubelet's apparmor.IsEnabled reads the same file). */
function appArmorEnabled(): boolean {
  try {
    return readFileSync("/sys/module/apparmor/parameters/enabled", "utf8").startsWith("Y");
  } catch {
    return false;
  }
}

/** The runtime --container_runtime names: the built-in Docker shim, a CRI runtime over gRPC, or the in-memory one. */
export async function openRuntime(
  config: KubeletConfig,
  log: Logger,
  metrics?: KubeletMetrics,
): Promise<OpenedRuntime> {
  if (config.containerRuntime === "fake") {
    const { MemoryRuntime } = await import("./container/memory/memory-runtime.ts");
    const runtime = new MemoryRuntime(systemClock);
    runtime.podInfraImage = config.networkContainerImage;
    runtime.imageFsMountpoint = config.rootDir;
    return { runtime, description: "the in-memory fake runtime (a hollow node: nothing runs)" };
  }
  if (config.containerRuntime === "docker") {
    // Loaded only when used, as the CRI client below: dockerode costs the CRI mode nothing.
    const { createDockerRuntime, resolveDockerEndpoint } = await import("./container/docker/docker.ts");
    const endpoint = resolveDockerEndpoint(config.dockerEndpoint, process.env);
    const pleg = createPlegHealth({ clock: systemClock });
    return {
      plegCheck: pleg.check,
      plegLastSeen: pleg.lastSeen,
      runtime: createDockerRuntime({
        endpoint,
        log: log.child("docker"),
        plegHealth: pleg,
        ...(metrics ? { relisted: (duration, interval) => metrics.plegRelist(duration, interval) } : {}),
        requestTimeoutMs: config.runtimeRequestTimeout,
        shim: {
          podInfraImage: config.networkContainerImage,
          podNetworkMode: config.podNetworkMode,
          logMaxSizeBytes: logRotationPolicy(config).maxSizeBytes,
          logMaxFiles: config.containerLogMaxFiles,
        },
      }),
      description: `Docker Engine at ${endpoint}`,
    };
  }
  // Loaded only when used: gRPC and the runtime.v1 descriptor cost Docker mode and --version nothing.
  const [{ createCriClient }, { createCriRuntime }] = await Promise.all([
    import("./container/cri/cri-client.ts"),
    import("./container/cri/cri.ts"),
  ]);
  const client = createCriClient({
    runtimeEndpoint: config.containerRuntimeEndpoint,
    imageEndpoint: config.imageServiceEndpoint,
    requestTimeoutMs: config.runtimeRequestTimeout,
  });
  const pleg = createPlegHealth({ clock: systemClock });
  return {
    plegCheck: pleg.check,
    plegLastSeen: pleg.lastSeen,
    runtime: createCriRuntime(client, {
      clock: systemClock,
      log: log.child("pleg"),
      plegHealth: pleg,
      ...(metrics
        ? {
            relisted: (duration, interval) => metrics.plegRelist(duration, interval),
            runtimeOperation: (operation, seconds, failed) => metrics.runtimeOperation(operation, seconds, failed),
            eventStream: {
              connected: () => metrics.eventedPlegConnection("success"),
              failed: () => metrics.eventedPlegConnection("error"),
              latency: (seconds) => metrics.eventedPlegLatency(seconds),
            },
          }
        : {}),
    }),
    description: `CRI runtime at ${client.endpoint}`,
  };
}

/** The sources the config names: --config (file), --manifest_url, etcd (--etcd_servers or --etcd_config). */
async function createSources(
  config: KubeletConfig,
  nodeName: string,
  log: Logger,
  metrics: Assembly["metrics"],
): Promise<PodSource[]> {
  const sources: PodSource[] = [];
  if (config.config) {
    // Loaded only when used, as etcd's below: a node fed by a URL or etcd alone needs no chokidar.
    const { createFileSource } = await import("./sources/file.ts");
    sources.push(
      createFileSource({
        path: config.config,
        checkFrequency: config.fileCheckFrequency,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/file"),
        metrics,
      }),
    );
  }
  if (config.manifestUrl)
    sources.push(
      createUrlSource({
        url: config.manifestUrl,
        headers: config.manifestUrlHeader,
        checkFrequency: config.httpCheckFrequency,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/url"),
        metrics,
      }),
    );
  if (config.etcdServers.length > 0 || config.etcdConfig) {
    // Loaded only when used: etcd3 brings gRPC, a large share of the kubelet's memory.
    const { createEtcdSource } = await import("./sources/etcd.ts");
    sources.push(
      createEtcdSource({
        ...etcdSettings(config),
        hostname: nodeName,
        labels: config.nodeLabels,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/etcd"),
        metrics,
      }),
    );
  }
  return sources;
}

/**
 * One read of a source: file and URL sources read their origin (a failure throws); the etcd source is
 * started, heard once and stopped, within 10 s.
 */
async function readSourceOnce(source: PodSource | (PodSource & { readOnce(): Promise<SourceSnapshot> })) {
  if ("readOnce" in source) return source.readOnce();
  let stop: StopSource | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await new Promise<SourceSnapshot>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new KubeletError("SourceUnavailable", `no answer from the ${source.name} source within 10s`)),
        10_000,
      );
      stop = source.start(resolve);
    });
  } finally {
    clearTimeout(timer);
    await stop?.();
  }
}

/** The node's name (hostname_override or the machine's) and an address to report as status.hostIP. */
export function nodeIdentity(config: KubeletConfig): { name: string; ip: string } {
  const name = (config.hostnameOverride || osHostname()).toLowerCase();
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && a.family === "IPv4" && !a.internal);
  return { name, ip: addresses[0]?.address ?? "127.0.0.1" };
}
