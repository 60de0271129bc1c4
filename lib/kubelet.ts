// Composition root: wires the real parts — sources → merge store → sync loop → info server —
// for `kubelet run` and `kubelet runonce`. The only place concrete implementations meet.
import { access, constants, mkdir } from "node:fs/promises";
import { hostname as osHostname, networkInterfaces } from "node:os";
import { join } from "node:path";
import { checkServerSecurity, loadAuthenticator, securityNotice } from "./server/auth.ts";
import type { ResolvedConfig } from "./config/config.ts";
import { acquireLock, lockHolder } from "./node/lock-file.ts";
import { cpus, totalmem } from "node:os";
import { GUARANTEED_OOM_SCORE_ADJ, POD_INFRA_OOM_SCORE_ADJ } from "./api/qos.ts";
import { cgroupPath, cgroupVersion, createCgroupManager, nodeAllocatable } from "./node/cgroups.ts";
import { chooseCgroupDriver, hostDefaultDriver, planQosCgroups } from "./node/cgroup-driver.ts";
import { createDnsConfigurer } from "./node/dns.ts";
import type { EventRecorder } from "./node/events.ts";
import { oomScoreAdjFloor } from "./node/oom-score.ts";
import { logRotationPolicy } from "./node/container-log-manager.ts";
import { checkSwap } from "./node/swap.ts";
import { podCapacity } from "./node/pod-capacity.ts";
import { systemClock, untilAborted } from "./clock.ts";
import type { KubeletConfig } from "./config/config-types.ts";
import { etcdSettings } from "./config/etcd-config.ts";
import type { Runtime } from "./container/runtime.ts";
import { createFleetReporter, type FleetReporterDeps } from "./node/fleet-reporter.ts";
import { buildNode, readHostFacts, readinessFrom, runtimeCheck, type PressureObserver } from "./node/node-status.ts";
import { backoffFile } from "./node/backoff-file.ts";
import { createNodeManagers } from "./node-managers.ts";
import pkg from "../package.json" with { type: "json" };
import { createDockerRuntime, resolveDockerEndpoint } from "./container/docker.ts";
import { instrumentRuntime } from "./container/instrumented.ts";
import { scopeRuntimeToNode } from "./container/node-scoped.ts";
import { createEventRecorder } from "./node/events.ts";
import { createImageManager } from "./node/images.ts";
import { createHealthzServer, createInfoServer, type HealthReport } from "./server/info-server.ts";
import type { Logger } from "./log.ts";
import type { KubeletMetrics } from "./metrics.ts";
import { heapObjectCounts } from "./platform/heap.ts";
import { serve } from "./platform/serve.ts";
import type { RunningServer } from "./platform/types.ts";
import { createProbeManager } from "./node/probes.ts";
import { createPrometheusMetrics } from "./server/prometheus.ts";
import { formatRunOnceReport, runPodsOnce } from "./sync/runonce.ts";
import { createFileSource } from "./sources/file.ts";
import type { PodSource, SourceSnapshot, StopSource } from "./sources/source.ts";
import { createUrlSource } from "./sources/url.ts";
import { createPodStore } from "./sources/store.ts";
import { createSyncLoop } from "./sync/sync-loop.ts";
import type { AdmissionPolicy } from "./sync/admission.ts";
import { formatIssue, KubeletError, type RejectedPod, type SourceName } from "./api/types.ts";
import { LABEL } from "./container/runtime.ts";
import { noneObserved, type Observed } from "./sync/pod-plan.ts";
import { planNode, type NodePlan } from "./sync/node-plan.ts";
import { createVolumeManager } from "./node/volumes.ts";
import { noConfigs } from "./api/config-objects.ts";
import { resetNode, type ResetStep } from "./node/node-reset.ts";

export interface RunOptions {
  log: Logger;
  signal: AbortSignal;
  /** Logged first, as the kubelet does (`kubelet v0.1.0 (commit …)`). */
  version?: string;
  /** Where each setting came from and the config file's fields that do not apply, logged once at start. */
  resolved?: Pick<ResolvedConfig, "origins" | "notApplicable" | "fileFields">;
}

/**
 * Runs the kubelet until `signal` aborts; containers are left running. Throws KubeletError on fatal start-up errors.
 */
export async function runKubelet(config: KubeletConfig, options: RunOptions): Promise<void> {
  const { log } = options;
  if (options.version) log.info(options.version);
  if (options.resolved) logSettings(config, options.resolved, log);
  const insecure = checkServerSecurity(config);
  if (insecure) throw new KubeletError("InsecureServer", insecure);
  const notice = securityNotice(config);
  if (notice) log.warn(notice);
  await checkSwap(config.failSwapOn);
  await prepareRootDir(config.rootDir);
  const lockPath = config.lockFile || join(config.rootDir, "kubelet.lock");
  const lock = await acquireLock({ path: lockPath, exitOnContention: config.exitOnLockContention });
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal.addEventListener("abort", onAbort, { once: true });
  if (options.signal.aborted) stop.abort();
  void lock.contended.then(() => {
    log.info(`a newer kubelet asked for --lock_file "${lockPath}": releasing it and exiting`);
    stop.abort();
  });
  try {
    await runLocked(config, { log, signal: stop.signal, resolved: options.resolved });
  } finally {
    options.signal.removeEventListener("abort", onAbort);
    await lock.release();
  }
}

/** Each setting that is not a default, with where it came from; then the file's fields that do not apply here. */
function logSettings(config: KubeletConfig, resolved: NonNullable<RunOptions["resolved"]>, log: Logger): void {
  const settings = Object.fromEntries(
    (Object.keys(resolved.origins) as Array<keyof KubeletConfig>)
      .filter((key) => resolved.origins[key] !== "default")
      .map((key) => [
        key,
        `${JSON.stringify(key === "authTokenFile" ? "<set>" : config[key])} (${resolved.origins[key]}${resolved.fileFields[key] ? `: ${resolved.fileFields[key]}` : ""})`,
      ]),
  );
  log.info("effective settings (defaults apart)", settings);
  for (const note of resolved.notApplicable)
    log.warn(`config file field ${note.field} is accepted but not applicable here: ${note.why}`);
}

async function runLocked(
  config: KubeletConfig,
  { log, signal, resolved }: Pick<RunOptions, "log" | "signal" | "resolved">,
): Promise<void> {
  const node = nodeIdentity(config);
  const metrics = createPrometheusMetrics({ log: log.child("metrics") });
  const events = createEventRecorder({ log: log.child("events") });
  const opened = await openRuntime(config, log);
  const runtime = instrumentRuntime(scopeRuntimeToNode(opened.runtime, node.name), metrics, config.containerRuntime);
  const sources = await createSources(config, node.name, log, metrics);
  if (sources.length === 0 && !(config.enableServer && config.enableDebuggingHandlers)) {
    throw new KubeletError(
      "NoSources",
      "no pod source: give --config, --manifest_url or --etcd_servers/--etcd_config (or keep the server's push routes on)",
    );
  }
  // Start-up waits on the runtime (up to its request timeout per call): a SIGTERM meanwhile ends it there.
  await untilAborted(
    runtime.version().then(
      () => log.info(`${opened.description} answers`),
      (error: Error) => log.warn(`${error.message}; will keep retrying (running containers are left alone)`),
    ),
    signal,
  );
  const placement = await untilAborted(
    podPlacement(config, { events, log, runtime, explicit: explicitIn(resolved) }),
    signal,
  );
  if (!placement) return void log.info("stopped while starting: nothing was started");
  const managers = createNodeManagers(config, {
    runtime,
    events,
    nodeName: node.name,
    clock: systemClock,
    log,
    ...(placement.deps.cgroups ? { podCgroupUsage: placement.deps.cgroups.podUsage } : {}),
  });
  const store = createPodStore({
    sources: sources.map((s) => s.name),
    allowPrivileged: config.allowPrivileged,
    allowSensitiveHostPaths: config.allowSensitiveHostPaths,
    log: log.child("config"),
    metrics,
  });
  const syncLoop = createSyncLoop(
    {
      hostname: node.name,
      hostIP: node.ip,
      networkMode: config.podNetworkMode,
      pauseImage: config.networkContainerImage,
      podLogsDir: config.podLogsDir,
      allowPrivileged: config.allowPrivileged,
      syncFrequencyMs: config.syncFrequency,
      admission: admissionPolicy(config),
      ...placement.options,
    },
    {
      ...placement.deps,
      store,
      runtime,
      images: createImageManager(
        {
          ...pullOptions(config),
          configs: store.configs,
          log: log.child("images"),
          metrics,
          events,
          checkSpace: managers.imageGc.checkSpaceForPull,
          backoffPersistence: backoffFile(join(config.rootDir, "backoff", "image-pull.json"), log.child("images")),
        },
        runtime,
      ),
      volumes: createVolumeManager({ rootDir: config.rootDir, configs: store.configs, log: log.child("volumes") }),
      createProbeManager,
      backoffPersistence: backoffFile(join(config.rootDir, "backoff", "crashloop.json"), log.child("sync")),
      clock: systemClock,
      log: log.child("sync"),
      metrics,
      events,
    },
  );

  const health = async (): Promise<HealthReport> => {
    const checks = [
      await runtime.status().then(runtimeCheck, (e: Error) => ({ name: "docker", ok: false, message: e.message })),
      syncCheck(syncLoop.lastSyncAt(), config.syncFrequency),
      {
        name: "sources",
        ok: store.allSourcesReady(),
        message: store.allSourcesReady() ? "ok" : "waiting for the first read of every source",
      },
      ...[managers.shutdownCheck()].filter((c) => c !== undefined),
    ];
    return { ok: checks.every((c) => c.ok), checks, conditions: managers.conditions() };
  };
  const servers: RunningServer[] = [];
  const idleTimeoutSeconds = config.httpIdleTimeout / 1000;
  const fleet = await createFleetMode(config, node, {
    runtime,
    health,
    pods: () => syncLoop.pods(),
    podsVersion: () => syncLoop.version(),
    events: () => events.list(),
    port: () => servers[0]?.port ?? 0,
    pressure: managers.pressure,
    log: log.child("fleet"),
  });

  const stopSources = sources.map((source) => source.start((snapshot) => store.apply(source.name, snapshot)));
  try {
    if (config.enableServer) {
      const auth = await loadAuthenticator(config);
      const deps = {
        config,
        pods: () => syncLoop.pods(),
        podsVersion: () => syncLoop.version(),
        runtime,
        push: store,
        health,
        summary: managers.summary,
        metrics,
        events,
        allowPrivileged: config.allowPrivileged,
        allowSensitiveHostPaths: config.allowSensitiveHostPaths,
        maxManifestBytes: config.maxManifestBytes,
        auth,
        log: log.child("server"),
        heapObjectCounts,
      };
      const main = await serve(createInfoServer(deps), {
        hostname: config.address,
        port: config.port,
        tls: auth.tls,
        idleTimeoutSeconds,
      });
      servers.push(main);
      log.info(`info server listening on ${config.address}:${main.port}${auth.tls ? " (TLS)" : ""}`);
      if (config.readOnlyPort > 0) {
        servers.push(
          await serve(createInfoServer({ ...deps, readOnly: true }), {
            hostname: config.address,
            port: config.readOnlyPort,
            idleTimeoutSeconds,
          }),
        );
        log.info(`read-only server listening on ${config.address}:${config.readOnlyPort}`);
      }
    }
    if (config.healthzPort > 0) {
      // Like the kubelet, a health listener that cannot bind is reported, never fatal.
      await serve(createHealthzServer(health), {
        hostname: config.healthzBindAddress,
        port: config.healthzPort,
        idleTimeoutSeconds,
      }).then(
        (server) => {
          servers.push(server);
          log.info(`healthz listening on ${config.healthzBindAddress}:${server.port}`);
        },
        (error: Error) =>
          log.error(`cannot serve healthz on ${config.healthzBindAddress}:${config.healthzPort}: ${error.message}`),
      );
    }
    log.info("kubelet started", { node: node.name, sources: sources.map((s) => s.name) });
    await Promise.all([
      syncLoop.run(signal),
      fleet?.run(signal),
      managers.run(
        {
          pods: () => syncLoop.pods(),
          activePods: () => syncLoop.activePods(),
          evict: (pod, message, options) => syncLoop.evict(pod, message, options),
          allSourcesReady: () => store.allSourcesReady(),
        },
        signal,
      ),
    ]);
  } finally {
    await Promise.allSettled([...stopSources.map((stop) => stop()), ...servers.map((s) => s.stop())]);
    fleet?.close();
    log.info("kubelet stopped; containers left running");
  }
}

/** `runonce`: reads the file and URL sources once, starts every pod, waits; true when all made it. */
export async function runOnce(
  config: KubeletConfig,
  { log, signal, out, tty, resolved }: RunOptions & { out: NodeJS.WritableStream; tty: boolean },
): Promise<boolean> {
  await checkSwap(config.failSwapOn);
  await prepareRootDir(config.rootDir);
  const node = nodeIdentity(config);
  const readers: Array<{ name: SourceName; readOnce(): Promise<SourceSnapshot> }> = [];
  if (config.config)
    readers.push(
      createFileSource({
        path: config.config,
        checkFrequency: config.fileCheckFrequency,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/file"),
      }),
    );
  if (config.manifestUrl)
    readers.push(
      createUrlSource({
        url: config.manifestUrl,
        headers: config.manifestUrlHeader,
        checkFrequency: config.httpCheckFrequency,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/url"),
      }),
    );
  if (readers.length === 0) throw new KubeletError("NoSources", "runonce needs --config and/or --manifest_url");
  const store = createPodStore({
    sources: readers.map((r) => r.name),
    allowPrivileged: config.allowPrivileged,
    allowSensitiveHostPaths: config.allowSensitiveHostPaths,
    log: log.child("config"),
  });
  for (const reader of readers) store.apply(reader.name, await reader.readOnce());
  const rejected = store.rejected();
  for (const r of rejected) {
    out.write(
      `invalid manifest ${r.origin}${r.document !== undefined ? `[${r.document}]` : ""}${r.pod ? ` ${r.pod}` : ""}:\n`,
    );
    for (const issue of r.issues.filter((i) => i.severity === "error")) out.write(`  ${formatIssue(issue)}\n`);
  }
  const events = createEventRecorder({ log: log.child("events") });
  const opened = await openRuntime(config, log);
  const { description } = opened;
  const runtime = scopeRuntimeToNode(opened.runtime, node.name);
  const placement = await podPlacement(config, { events, log, runtime, explicit: explicitIn(resolved) });
  const report = await runPodsOnce(
    store.mergedState(),
    {
      ...placement.deps,
      runtime,
      images: createImageManager(
        { ...pullOptions(config), configs: store.configs, log: log.child("images"), events },
        runtime,
      ),
      volumes: createVolumeManager({ rootDir: config.rootDir, configs: store.configs, log: log.child("volumes") }),
      configs: store.configs,
      clock: systemClock,
      log: log.child("runonce"),
      events,
      admission: admissionPolicy(config),
      options: {
        hostname: node.name,
        hostIP: node.ip,
        networkMode: config.podNetworkMode,
        pauseImage: config.networkContainerImage,
        podLogsDir: config.podLogsDir,
        allowPrivileged: config.allowPrivileged,
        ...placement.options,
      },
    },
    { timeoutMs: config.runonceTimeout, signal, tty, out },
  );
  const version = await runtime.version().catch(() => undefined);
  out.write(
    formatRunOnceReport(
      report,
      version ? `${version.runtimeName} ${version.runtimeVersion} (${description})` : description,
    ) + "\n",
  );
  return report.ok && rejected.length === 0;
}

/** The runtime --container_runtime names: the built-in Docker shim, or a CRI runtime over gRPC. */
async function openRuntime(config: KubeletConfig, log: Logger): Promise<{ runtime: Runtime; description: string }> {
  if (config.containerRuntime === "docker") {
    const endpoint = resolveDockerEndpoint(config.dockerEndpoint, process.env);
    return {
      runtime: createDockerRuntime({
        endpoint,
        log: log.child("docker"),
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
    import("./container/cri-client.ts"),
    import("./container/cri.ts"),
  ]);
  const client = createCriClient({
    runtimeEndpoint: config.containerRuntimeEndpoint,
    imageEndpoint: config.imageServiceEndpoint,
    requestTimeoutMs: config.runtimeRequestTimeout,
  });
  return {
    runtime: createCriRuntime(client, { clock: systemClock }),
    description: `CRI runtime at ${client.endpoint}`,
  };
}

/**
 * `plan`: reads every configured source once, observes the node through the runtime port (reads only: list,
 * inspect, image look-ups) and returns what a sync would do, with the manifests that were rejected.
 */
export async function planOnce(
  config: KubeletConfig,
  { log }: { log: Logger },
): Promise<{ plan: NodePlan; rejected: RejectedPod[] }> {
  const node = nodeIdentity(config);
  const sources = await createSources(config, node.name, log, undefined);
  if (sources.length === 0)
    throw new KubeletError("NoSources", "plan needs --config, --manifest_url or --etcd_servers/--etcd_config");
  const store = createPodStore({
    sources: sources.map((s) => s.name),
    allowPrivileged: config.allowPrivileged,
    log: log.child("config"),
  });
  for (const source of sources) store.apply(source.name, await readSourceOnce(source));
  // Through the port, on whichever runtime --container_runtime names; only reads are made.
  const runtime = scopeRuntimeToNode((await openRuntime(config, log)).runtime, node.name);
  await runtime.version();
  const observed = new Map<string, Observed>();
  const of = (uid: string) => observed.get(uid) ?? observed.set(uid, noneObserved()).get(uid)!;
  for (const summary of await runtime.listPodSandboxes()) {
    const status = await runtime.podSandboxStatus(summary.id).catch(() => undefined);
    if (status) of(summary.metadata.uid).sandboxes.push(status);
  }
  for (const summary of await runtime.listContainers()) {
    const details = await runtime.inspectContainer(summary.id).catch(() => undefined);
    const uid = summary.labels[LABEL.podUid];
    if (details && uid) of(uid).containers.push(details);
  }
  const pods = store.mergedState();
  const images = new Set([
    config.networkContainerImage,
    ...pods.flatMap((p) => [...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.image ?? "")),
  ]);
  const present = new Set<string>();
  for (const image of images) if (await runtime.imageStatus(image)) present.add(image);
  const plan = planNode({
    pods,
    observed,
    networkMode: config.podNetworkMode,
    pauseImage: config.networkContainerImage,
    imagePresent: (image) => present.has(image),
    configs: store.configs,
    now: Date.now(),
    unreadSources: new Set(
      store
        .rejected()
        .filter((r) => r.issues.some((i) => i.path === "<document>" || i.path === "<file>"))
        .map((r) => r.source),
    ),
  });
  return { plan, rejected: store.rejected() };
}

/**
 * `reset`: refuses while a kubelet holds the lock file, then holds it itself (no kubelet starts mid-way) while it
 * removes this node's pods from the runtime and the kubelet's state on the host (node-reset.ts).
 */
export async function resetOnce(
  config: KubeletConfig,
  options: { log: Logger; dryRun: boolean; onStep(step: ResetStep): void },
): Promise<{ runtime: string; steps: ResetStep[] }> {
  const lockFile = config.lockFile || join(config.rootDir, "kubelet.lock");
  const holder = await lockHolder(lockFile);
  if (holder !== undefined)
    throw new KubeletError(
      "LockContention",
      `a kubelet (pid ${holder}) holds --lock_file "${lockFile}": stop it first (systemctl stop kubelet), then run reset again`,
    );
  const { runtime, description } = await openRuntime(config, options.log);
  await runtime.version().catch((error: Error) => {
    throw new KubeletError("RuntimeUnavailable", `cannot reach the ${description}: ${error.message}`, { cause: error });
  });
  const log = options.log;
  const lock = options.dryRun ? undefined : await acquireLock({ path: lockFile, exitOnContention: false });
  try {
    const { rootDir, podLogsDir } = config;
    const steps = await resetNode(
      { rootDir, podLogsDir, lockFile, dryRun: options.dryRun, onStep: options.onStep },
      {
        runtime: scopeRuntimeToNode(runtime, nodeIdentity(config).name),
        volumes: createVolumeManager({ rootDir, configs: noConfigs, log: log.child("volumes") }),
        // Pod cgroups under either driver's names: the driver they were made with need not be today's.
        cgroups: (["cgroupfs", "systemd"] as const).map((driver) =>
          createCgroupManager({ driver, root: config.cgroupRoot, cfsQuota: false, cfsPeriodUs: 0, pidsLimit: -1, log }),
        ),
      },
    );
    return { runtime: description, steps };
  } finally {
    await lock?.release();
  }
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

/** Whether a setting was given (flag or config file); without origins (a programmatic caller) every value counts as given. */
function explicitIn(resolved: RunOptions["resolved"]) {
  return (key: keyof KubeletConfig) => !resolved || resolved.origins[key] !== "default";
}

/**
 * Where and how pods run on this node: the cgroup driver (Docker's), QoS cgroups bounded by node
 * allocatable, the oom_score_adj floor, CFS quota settings and each pod's resolv.conf.
 */
async function podPlacement(
  config: KubeletConfig,
  {
    events,
    log,
    runtime,
    explicit,
  }: { events: EventRecorder; log: Logger; runtime: Runtime; explicit: (key: keyof KubeletConfig) => boolean },
) {
  const dns = createDnsConfigurer(
    {
      clusterDns: config.clusterDns,
      clusterDomain: config.clusterDomain,
      resolvConf: config.resolvConf,
      rootDir: config.rootDir,
    },
    { events },
  );
  const oom = await oomScoreAdjFloor();
  if (oom.why)
    log.warn(
      `the kernel refuses negative oom_score_adj here (${oom.why}): containers get at least ${oom.floor} (Guaranteed ${GUARANTEED_OOM_SCORE_ADJ} and pod sandboxes ${POD_INFRA_OOM_SCORE_ADJ} are clamped)`,
    );
  const options = {
    oomScoreAdjMin: oom.floor,
    cfsQuota: config.cpuCfsQuota,
    cfsPeriodUs: config.cpuCfsQuotaPeriod * 1000,
  };
  const version = cgroupVersion();
  // The driver must be Docker's: pods placed under cgroupfs paths on a systemd Docker fail every create.
  const reported = await runtime.machineInfo().then(
    (info) => info.cgroupDriver,
    () => undefined,
  );
  const { driver, source } = chooseCgroupDriver(config.cgroupDriver, reported, hostDefaultDriver(version));
  const plan = planQosCgroups({
    cgroupsPerQos: config.cgroupsPerQos,
    enforcePods: config.enforceNodeAllocatable.includes("pods"),
    explicit: explicit("cgroupsPerQos") || explicit("enforceNodeAllocatable"),
    version,
    driver,
  });
  if (plan.warning) log.warn(plan.warning);
  if (!plan.qos) return { options, deps: { dns } };
  const cgroups = createCgroupManager({
    driver,
    root: config.cgroupRoot,
    cfsQuota: config.cpuCfsQuota,
    cfsPeriodUs: config.cpuCfsQuotaPeriod * 1000,
    pidsLimit: config.podPidsLimit,
    log: log.child("cgroups"),
  });
  const capacity = { milliCpu: cpus().length * 1000, memoryBytes: totalmem() };
  const allocatable = plan.enforcePods
    ? nodeAllocatable(capacity, {
        kube: config.kubeReserved,
        system: config.systemReserved,
        evictionHard: config.evictionHard,
      })
    : undefined;
  const kubepods = cgroupPath(config.cgroupRoot, ["kubepods"], driver);
  try {
    await cgroups.init(allocatable);
  } catch (error) {
    throw new KubeletError(
      "CgroupSetupFailed",
      `cannot set up the QoS cgroups under ${kubepods}: ${(error as Error).message}; run as root, or give --cgroups_per_qos=false --enforce_node_allocatable=none to leave pods in Docker's default cgroup`,
      { cause: error },
    );
  }
  const ignored = Object.keys({ ...config.kubeReserved, ...config.systemReserved }).filter(
    (name) => name !== "cpu" && name !== "memory",
  );
  if (ignored.length)
    log.warn(`reserved ${[...new Set(ignored)].join(", ")} are not enforced here: only cpu and memory bound kubepods`);
  log.info(
    `pods run under ${kubepods} (cgroup v${cgroups.version}, ${driver} driver, ${source})` +
      (allocatable
        ? `, bounded by node allocatable: cpu ${allocatable.milliCpu}m, memory ${allocatable.memoryBytes} bytes (capacity − kubeReserved − systemReserved − evictionHard memory.available)`
        : ""),
  );
  return { options, deps: { dns, cgroups } };
}

/** How images are pulled: the registry QPS bucket, serialized or parallel pulls, the progress deadline. */
function pullOptions(config: KubeletConfig) {
  return {
    qps: config.registryQps,
    burst: config.registryBurst,
    serialize: config.serializeImagePulls,
    maxParallel: config.maxParallelImagePulls,
    progressDeadlineMs: config.imagePullProgressDeadline,
  };
}

/** Who may run what here: --max_pods (within --pods_per_core × cores) and the sources allowed each host namespace. */
function admissionPolicy(config: KubeletConfig): AdmissionPolicy {
  return {
    maxPods: podCapacity(config.maxPods, config.podsPerCore, cpus().length),
    hostNetworkSources: config.hostNetworkSources,
    hostPidSources: config.hostPidSources,
    hostIpcSources: config.hostIpcSources,
  };
}

async function createSources(
  config: KubeletConfig,
  nodeName: string,
  log: Logger,
  metrics: KubeletMetrics | undefined,
): Promise<PodSource[]> {
  const sources: PodSource[] = [];
  if (config.config)
    sources.push(
      createFileSource({
        path: config.config,
        checkFrequency: config.fileCheckFrequency,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/file"),
        metrics,
      }),
    );
  if (config.manifestUrl) {
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
  }
  if (config.etcdServers.length > 0 || config.etcdConfig) {
    // Loaded only when used: etcd3 brings gRPC, a large share of the kubelet's memory.
    const { createEtcdSource } = await import("./sources/etcd.ts");
    sources.push(
      createEtcdSource({
        ...etcdSettings(config),
        hostname: nodeName,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/etcd"),
        metrics,
      }),
    );
  }
  return sources;
}

/**
 * Fleet mode (etcd configured, --register_node on): the node record, pod statuses and events written to etcd on
 * the node's lease. The etcd client loads only when used, like the etcd source.
 */
async function createFleetMode(
  config: KubeletConfig,
  node: { name: string; ip: string },
  deps: Pick<FleetReporterDeps, "pods" | "podsVersion" | "events"> & {
    runtime: Runtime;
    health(): Promise<HealthReport>;
    /** The info server's port once it listens (0 = none). */
    port(): number;
    pressure: PressureObserver;
    log: Logger;
  },
): Promise<{ run(signal: AbortSignal): Promise<void>; close(): void } | undefined> {
  if (!config.registerNode || (config.etcdServers.length === 0 && !config.etcdConfig)) return undefined;
  const { createEtcdClient } = await import("./sources/etcd-client.ts");
  const client = createEtcdClient(etcdSettings(config));
  const host = readHostFacts(config.rootDir);
  const allocatable = nodeAllocatable(
    { milliCpu: host.cpus * 1000, memoryBytes: host.memoryBytes },
    { kube: config.kubeReserved, system: config.systemReserved, evictionHard: config.evictionHard },
  );
  const reporter = createFleetReporter(
    {
      hostname: node.name,
      leaseDurationMs: config.nodeLeaseDuration,
      updateFrequencyMs: config.nodeStatusUpdateFrequency,
      reportFrequencyMs: config.nodeStatusReportFrequency,
      clock: systemClock,
      log: deps.log,
    },
    {
      store: client,
      pods: deps.pods,
      podsVersion: deps.podsVersion,
      events: deps.events,
      async node(previous) {
        const [health, runtime] = await Promise.all([deps.health(), deps.runtime.version().catch(() => undefined)]);
        return buildNode({
          name: node.name,
          hostIP: node.ip,
          port: deps.port(),
          kubeletVersion: `v${pkg.version}`,
          host,
          maxPods: podCapacity(config.maxPods, config.podsPerCore, cpus().length),
          allocatable,
          runtime,
          readiness: readinessFrom(health.checks),
          pressure: deps.pressure.conditions(),
          now: new Date().toISOString(),
          previous,
        });
      },
    },
  );
  return { run: (signal) => reporter.run(signal), close: () => client.close() };
}

/** Creates root_dir and checks it is writable, so volume set-up cannot fail later for that reason. */
async function prepareRootDir(rootDir: string): Promise<void> {
  try {
    await mkdir(rootDir, { recursive: true });
    await access(rootDir, constants.W_OK);
  } catch (error) {
    throw new KubeletError("RootDirUnusable", `cannot use --root_dir "${rootDir}": ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The node's name (hostname_override or the machine's) and an address to report as status.hostIP. */
function nodeIdentity(config: KubeletConfig): { name: string; ip: string } {
  const name = (config.hostnameOverride || osHostname()).toLowerCase();
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && a.family === "IPv4" && !a.internal);
  return { name, ip: addresses[0]?.address ?? "127.0.0.1" };
}

function syncCheck(lastSyncAt: number, syncFrequency: number) {
  const age = Date.now() - lastSyncAt;
  const ok = lastSyncAt > 0 && age < Math.max(3 * syncFrequency, 30_000);
  return {
    name: "syncloop",
    ok,
    message: ok ? "ok" : lastSyncAt === 0 ? "no sync completed yet" : `last sync ${Math.round(age / 1000)}s ago`,
  };
}
