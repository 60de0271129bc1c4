// Composition root: `kubelet run` (the lock, the start-up order, the servers, fleet mode),
// `kubelet runonce` and `kubelet plan`, each built from the one assembly (lib/assembly.ts) so the
// three see the same sources, store, runtime and admission settings.
import { access, constants, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { ResolvedConfig } from "./config/config.ts";
import { acquireLock, lockHolder } from "./node/state/lock-file.ts";
import { createCgroupManager } from "./node/cm/cgroups.ts";
import { checkSwap } from "./node/cm/swap.ts";
import { systemClock, untilAborted } from "./clock.ts";
import type { KubeletConfig } from "./config/config-types.ts";
import { RUNTIME_CHECK, runtimeCheck } from "./node/status/node-status.ts";
import type { HealthReport } from "./server/info-server.ts";
import { protectedHostPaths } from "./api/host-paths.ts";
import type { Logger } from "./log.ts";
import type { RunningServer } from "./platform/types.ts";
import { formatRunOnceReport, runPodsOnce } from "./sync/runonce.ts";
import { ANNOTATION, formatIssue, KubeletError, podKey, type Pod, type RejectedPod } from "./api/types.ts";
import { LABEL } from "./container/runtime.ts";
import { noneObserved, type Observed } from "./sync/pod-plan.ts";
import { planNode, type NodePlan } from "./sync/node-plan.ts";
import { assemble, nodeIdentity, openRuntime, type Assembly, type AssemblyDeps } from "./assembly.ts";
import { admissionOrder, admitPod } from "./sync/admission.ts";
import type { ServingCertificate } from "./server/serving-cert.ts";
import { checkKernelDefaults } from "./node/cm/kernel-defaults.ts";
import { createVolumeManager } from "./node/volumes/volumes.ts";
import { noConfigs } from "./api/config-objects.ts";
import { resetNode, type NodeResetOptions, type ResetStep } from "./node/reset/node-reset.ts";
import { decorateRuntime } from "./container/decorated.ts";
import { createRuntimeOutage } from "./node/status/runtime-outage.ts";
import { createRunOnceProgress } from "./sync/runonce-progress.ts";

/**
 * What only `run` uses: the servers (the node's API routes, the info server, auth, TLS, audit), fleet mode and the
 * resource managers, imported when `run` starts so that `runonce`, `plan` and `reset` never evaluate them.
 */
async function runModules() {
  const modules = await Promise.all([
    import("./server/auth.ts"),
    import("./server/authn/admin-token.ts"),
    import("./server/tls-settings.ts"),
    import("./server/listeners.ts"),
    import("./server/info-server.ts"),
    import("./server/apiserver/apiserver.ts"),
    import("./server/refused-edits.ts"),
    import("./server/serving-cert.ts"),
    import("./server/audit/audit.ts"),
    import("./platform/heap.ts"),
    import("./platform/shrink.ts"),
    import("./platform/serve.ts"),
    import("./fleet-mode.ts"),
    import("./node/cm/resource-managers.ts"),
  ]);
  return Object.assign({}, ...modules) as UnionToIntersection<(typeof modules)[number]>;
}
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

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
  const {
    accessNotice,
    adminTokenPath,
    checkListeners,
    checkServerSecurity,
    configuredListeners,
    securityNotice,
    tlsSettings,
    webhookNotice,
  } = await runModules();
  if (options.version) log.info(options.version);
  if (options.resolved) logSettings(config, options.resolved, log);
  const insecure = checkServerSecurity(config);
  if (insecure) throw new KubeletError("InsecureServer", insecure);
  const notice = securityNotice(config, adminTokenPath(config));
  if (notice) log.warn(notice);
  const webhook = webhookNotice(config);
  if (webhook) log.warn(webhook);
  const access = accessNotice(config, adminTokenPath(config));
  if (access) log.info(access);
  for (const note of tlsSettings(config).notes) log.warn(note);
  await checkSwap(config.failSwapOn);
  await checkKernelDefaults({ protect: config.protectKernelDefaults, log });
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
    await checkListeners(configuredListeners(config));
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
  { log: rootLog, signal, resolved }: Pick<RunOptions, "log" | "signal" | "resolved">,
): Promise<void> {
  const {
    adminTokenPath,
    bound,
    configuredListeners,
    createApiServer,
    createAuditHook,
    createFleetMode,
    createHealthzServer,
    createInfoServer,
    createResourceManagers,
    createServingCertificate,
    ensureAdminToken,
    heapObjectCounts,
    heapBytes,
    shrinkAfterStart,
    loadAuthenticator,
    NODE_API_SERVED,
    nodeApiRoutes,
    nodeRecord,
    resourceManagersWanted,
    serve,
    tlsSettings,
    withRefusedEdits,
  } = await runModules();
  // A runtime that does not answer is one line every 30 s, not a warning from every part that called it.
  const outage = createRuntimeOutage({ log: rootLog, clock: systemClock });
  const log = outage.log;
  const assembly = await assemble(
    config,
    { command: "run", log, resolved },
    {
      openRuntime: async (settings, runtimeLog, metrics) => {
        const opened = await openRuntime(settings, runtimeLog, metrics);
        return { ...opened, runtime: outage.watch(opened.runtime) };
      },
    },
  );
  const { node, metrics, events, sources, store, runtime } = assembly;
  outage.waitingPods(() => store.mergedState().map(podKey));
  if (sources.length === 0 && !(config.enableServer && config.enableDebuggingHandlers)) {
    throw new KubeletError(
      "NoSources",
      "no pod source: give --config, --manifest_url or --etcd_servers/--etcd_config (or keep the server's push routes on)",
    );
  }
  // Start-up waits on the runtime (up to its request timeout per call): a SIGTERM meanwhile ends it there.
  await untilAborted(
    runtime
      .version()
      .then(() => log.info(`${assembly.runtimeDescription} answers`))
      .then(adoptRunningPods(assembly, log))
      .catch((error: Error) => log.warn(`${error.message}; will keep retrying (running containers are left alone)`)),
    signal,
  );
  const placement = await untilAborted(assembly.placePods(), signal);
  if (!placement) return void log.info("stopped while starting: nothing was started");
  const managers = await assembly.nodeManagers(placement);
  // The CPU, memory and topology managers restore their state files here: a refused one stops the start.
  const resources = resourceManagersWanted(config)
    ? createResourceManagers(config, { runtime, log: log.child("cm"), devices: managers.devices })
    : undefined;
  const syncLoop = await assembly.syncLoop(placement, managers, resources);
  metrics.countPods({ desired: () => syncLoop.pods(), active: () => syncLoop.activePods() });

  /** The serving certificate on disk, watched once the TLS server is up. */
  let servingCert: ServingCertificate | undefined;
  const health = async (): Promise<HealthReport> => {
    const checks = [
      await runtime.status().then(runtimeCheck, (e: Error) => ({ name: RUNTIME_CHECK, ok: false, message: e.message })),
      syncCheck(syncLoop.lastSyncAt(), config.syncFrequency),
      {
        name: "sources",
        ok: store.allSourcesReady(),
        message: store.allSourcesReady()
          ? "ok"
          : store
              .sourcesNotReady()
              .map((s) => `${s.source}: ${s.reason}`)
              .join("; "),
      },
      ...[managers.shutdownCheck(), assembly.plegCheck?.()].filter((c) => c !== undefined),
    ];
    const warnings = servingCert?.warnings() ?? [];
    return {
      ok: checks.every((c) => c.ok),
      checks,
      conditions: managers.conditions(),
      ...(warnings.length ? { warnings } : {}),
    };
  };
  const servers: RunningServer[] = [];
  let stopAuth = () => {};
  let stopApi = () => {};
  const listener = (flag: string) => configuredListeners(config).find((l) => l.flag === flag)!;
  const idleTimeoutSeconds = config.httpIdleTimeout / 1000;
  const fleet = await createFleetMode(config, node, {
    runtime,
    health,
    pods: () => syncLoop.pods(),
    podsVersion: () => syncLoop.version(),
    onPodsChange: (listener) => syncLoop.onChange(listener),
    events: () => events.list(),
    port: () => servers[0]?.port ?? 0,
    pressure: managers.pressure,
    extendedResources: () => managers.devices.capacity(),
    log: log.child("fleet"),
  });
  await managers.startResourceManagers(() => syncLoop.activePods(), signal, resources?.podResources);

  const stopSources = sources.map((source) => source.start((snapshot) => store.apply(source.name, snapshot)));
  const audit = config.enableServer
    ? createAuditHook(config, node.name, { clock: systemClock, log: log.child("audit") })
    : undefined;
  try {
    if (config.enableServer) {
      const serving = { ...config, ...(await servingFiles(config, node.name, log)) };
      const auth = await loadAuthenticator(serving, {
        adminToken: await ensureAdminToken(adminTokenPath(config)),
        nodeName: node.name,
        log: log.child("auth"),
      });
      stopAuth = () => auth.stop();
      const { notes: _, ...policy } = tlsSettings(config);
      const pods = () => withRefusedEdits(syncLoop.pods(), store.refusedEdits());
      // Both counters only grow, so their sum changes whenever either does: /pods' cache key.
      const podsVersion = () => syncLoop.version() + store.refusedEditsVersion();
      const nodeApi = {
        nodeName: node.name,
        node: nodeRecord(config, node, {
          runtime,
          health,
          port: () => servers[0]?.port ?? 0,
          pressure: managers.pressure,
        }),
        configs: () => store.configs.all(),
        statsWindowMs: 10_000,
      };
      const infoDeps = {
        config,
        pods,
        podsVersion,
        runtime,
        push: store,
        health,
        summary: managers.summary,
        currentSummary: managers.currentSummary,
        sample: managers.sample,
        metrics,
        events,
        allowPrivileged: config.allowPrivileged,
        allowSensitiveHostPaths: config.allowSensitiveHostPaths,
        maxManifestBytes: config.maxManifestBytes,
        auth,
        audit: audit?.middleware,
        log: log.child("server"),
        heapObjectCounts,
        heapBytes,
      };
      const api = createApiServer(
        {
          // Pods being stopped show with their deletionTimestamp until gone; a wanted pod of the same name wins.
          pods: {
            pods: () => [...syncLoop.terminatingPods(), ...pods()],
            version: podsVersion,
            onChange: (listener) => syncLoop.onChange(listener),
          },
          push: store,
          clock: systemClock,
          validation: {
            allowPrivileged: config.allowPrivileged,
            allowSensitiveHostPaths: config.allowSensitiveHostPaths,
            trustedSources: config.trustedSources,
            protectedHostPaths: protectedHostPaths(config),
            strictManifests: config.strictManifests,
          },
          maxBytes: config.maxManifestBytes,
        },
        NODE_API_SERVED,
        nodeApiRoutes(infoDeps, nodeApi),
      );
      stopApi = api.close;
      const deps = { ...infoDeps, api: api.app };
      const main = await bound(
        listener("--port"),
        serve(createInfoServer(deps), {
          hostname: config.address,
          port: config.port,
          ...(auth.tls ? { tls: { ...auth.tls, ...policy } } : {}),
          idleTimeoutSeconds,
        }),
      );
      servers.push(main);
      const setTls = main.setTls;
      if (auth.tls && setTls)
        servingCert = createServingCertificate(
          {
            certFile: serving.tlsCertFile,
            keyFile: serving.tlsPrivateKeyFile,
            log: log.child("server"),
            onChange: (files) => setTls(files),
          },
          auth.tls,
          { clock: systemClock },
        );
      log.info(`info server listening on ${config.address}:${main.port}${auth.tls ? " (TLS)" : ""}`);
      if (config.readOnlyPort > 0) {
        servers.push(
          await bound(
            listener("--read_only_port"),
            serve(createInfoServer({ ...deps, readOnly: true }), {
              hostname: config.address,
              port: config.readOnlyPort,
              idleTimeoutSeconds,
            }),
          ),
        );
        log.info(`read-only server listening on ${config.address}:${config.readOnlyPort}`);
      }
    }
    if (config.healthzPort > 0) {
      // A health listener that cannot bind stops the kubelet: a supervisor probing it would restart it anyway.
      const server = await bound(
        listener("--healthz_port"),
        serve(createHealthzServer(health), {
          hostname: config.healthzBindAddress,
          port: config.healthzPort,
          idleTimeoutSeconds,
        }),
      );
      servers.push(server);
      log.info(`healthz listening on ${config.healthzBindAddress}:${server.port}`);
    }
    log.info("kubelet started", { node: node.name, sources: sources.map((s) => s.name) });
    // The pods are being adopted now; what that burst allocated is given back once it is over.
    shrinkAfterStart(signal, { clock: systemClock, log });
    await Promise.all([
      syncLoop.run(signal),
      fleet?.run(signal),
      servingCert?.run(signal),
      resources?.run(
        { activePods: () => syncLoop.activePods(), allSourcesReady: () => store.allSourcesReady() },
        systemClock,
        signal,
      ),
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
    await audit?.log.close();
    stopAuth();
    stopApi();
    fleet?.close();
    log.info("kubelet stopped; containers left running");
  }
}

/** `runonce`: reads the file and URL sources once, starts every pod, waits; true when all made it. */
export async function runOnce(
  config: KubeletConfig,
  { log, signal, out, tty, resolved }: RunOptions & { out: NodeJS.WritableStream; tty: boolean },
  deps: AssemblyDeps = {},
): Promise<boolean> {
  await checkSwap(config.failSwapOn);
  await prepareRootDir(config.rootDir);
  const assembly = await assemble(config, { command: "runonce", log, resolved }, deps);
  const { store, runtime } = assembly;
  if (assembly.sources.length === 0)
    throw new KubeletError("NoSources", "runonce needs --config and/or --manifest_url");
  // The manifests are read while the runtime lists the running pods (the first call, which also connects).
  await assembly.readSourcesOnce(adoptRunningPods(assembly, log)());
  const rejected = store.rejected();
  for (const r of rejected) {
    out.write(
      `invalid manifest ${r.origin}${r.document !== undefined ? `[${r.document}]` : ""}${r.pod ? ` ${r.pod}` : ""}:\n`,
    );
    for (const issue of r.issues.filter((i) => i.severity === "error")) out.write(`  ${formatIssue(issue)}\n`);
  }
  const placement = await assembly.placePods();
  const progress = createRunOnceProgress({ out, tty });
  const report = await runPodsOnce(
    store.mergedState(),
    {
      ...placement.deps,
      runtime,
      images: assembly.images(undefined, progress),
      volumes: assembly.volumes(),
      configs: store.configs,
      clock: systemClock,
      log: log.child("runonce"),
      events: assembly.events,
      admission: assembly.admission,
      options: { ...assembly.podOptions, ...placement.options },
    },
    { timeoutMs: config.runonceTimeout, signal, progress },
  );
  const { runtimeVersion: version } = report;
  out.write(
    formatRunOnceReport(report, `${version.runtimeName} ${version.runtimeVersion} (${assembly.runtimeDescription})`) +
      "\n",
  );
  return report.ok && rejected.length === 0;
}

/**
 * `plan`: reads every configured source once, observes the node through the runtime port (reads only: list,
 * inspect, image look-ups) and returns what a sync would do, with the manifests that were rejected. Pods the
 * sync would not admit (--max_pods, --host_*_sources) are shown waiting, with the kubelet's reason.
 */
export async function planOnce(
  config: KubeletConfig,
  { log }: { log: Logger },
  deps: AssemblyDeps = {},
): Promise<{ plan: NodePlan; rejected: RejectedPod[] }> {
  const assembly = await assemble(config, { command: "plan", log }, deps);
  const { store, runtime, podOptions } = assembly;
  if (assembly.sources.length === 0)
    throw new KubeletError("NoSources", "plan needs --config, --manifest_url or --etcd_servers/--etcd_config");
  // Through the port, on whichever runtime --container_runtime names; only reads are made.
  await runtime.version();
  await adoptRunningPods(assembly, log)();
  await assembly.readSourcesOnce();
  const unreadable = (what: string) => (error: Error) => {
    log.warn(`plan: cannot inspect ${what}: ${error.message}; it is left out of the plan`);
    return undefined;
  };
  const observed = new Map<string, Observed>();
  const of = (uid: string) => observed.get(uid) ?? observed.set(uid, noneObserved()).get(uid)!;
  for (const summary of await runtime.listPodSandboxes()) {
    const status = await runtime.podSandboxStatus(summary.id).catch(unreadable(`pod sandbox ${summary.id}`));
    if (status) of(summary.metadata.uid).sandboxes.push(status);
  }
  for (const summary of await runtime.listContainers()) {
    const details = await runtime.inspectContainer(summary.id).catch(unreadable(`container ${summary.id}`));
    const uid = summary.labels[LABEL.podUid];
    if (details && uid) of(uid).containers.push(details);
  }
  const admitted: Pod[] = [];
  const refused: NodePlan["pods"] = [];
  for (const pod of admissionOrder(store.mergedState())) {
    const rejection = admitPod(pod, admitted.length, assembly.admission);
    if (!rejection) admitted.push(pod);
    else
      refused.push({
        pod: podKey(pod),
        uid: pod.metadata.uid,
        origin: pod.metadata.annotations[ANNOTATION.origin] ?? "",
        actions: [{ action: "wait", reason: `${rejection.reason}: Pod was rejected: ${rejection.message}` }],
      });
  }
  // The sandbox image is the runtime's own (containerd's sandbox_image; the Docker shim's --network_container_image).
  const { sandboxImage } = await runtime.status();
  const images = new Set([
    ...(sandboxImage ? [sandboxImage] : []),
    ...admitted.flatMap((p) => [...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.image ?? "")),
  ]);
  const present = new Set<string>();
  for (const image of images) if (await runtime.imageStatus(image)) present.add(image);
  const backoff = assembly.savedCrashLoopBackoff();
  const plan = planNode({
    pods: admitted,
    observed,
    networkMode: podOptions.networkMode,
    ...(sandboxImage ? { sandboxImage } : {}),
    imagePresent: (image) => present.has(image),
    configs: store.configs,
    now: Date.now(),
    backoff: { get: (key) => backoff[key] },
    resize: { cfsQuota: config.cpuCfsQuota, cfsPeriodUs: config.cpuCfsQuotaPeriod * 1000 },
    ...(assembly.admission.allocatable ? { allocatable: assembly.admission.allocatable } : {}),
    unreadSources: new Set(
      store
        .rejected()
        .filter((r) => r.issues.some((i) => i.path === "<document>" || i.path === "<file>"))
        .map((r) => r.source),
    ),
  });
  return { plan: { ...plan, pods: [...plan.pods, ...refused] }, rejected: store.rejected() };
}

/** With --client_ca_file and no serving certificate: the self-signed one under --cert_dir, as the Go kubelet. */
async function servingFiles(config: KubeletConfig, hostname: string, log: Logger) {
  const { selfSignedServingFiles } = await import("./server/self-signed.ts");
  const files = await selfSignedServingFiles(config, hostname);
  if (files)
    log.info(
      `no --tls_cert_file/--tls_private_key_file with --client_ca_file: serving with the self-signed certificate ${files.tlsCertFile} (key ${files.tlsPrivateKeyFile}, ${files.generated ? `generated now for ${hostname}, valid 1 year` : "generated earlier"})`,
    );
  return files && { tlsCertFile: files.tlsCertFile, tlsPrivateKeyFile: files.tlsPrivateKeyFile };
}

/** The pods already running keep their UIDs; when the runtime cannot say, every pod keeps its node-less UID. */
function adoptRunningPods(assembly: Assembly, log: Logger) {
  return () =>
    assembly
      .adoptRunningPods()
      .catch((error: Error) =>
        log.warn(
          `cannot list the running pods before reading the sources (${error.message}): pods keep the UIDs of releases before node-scoped UIDs until the next start, so none started by such a release is restarted`,
        ),
      );
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

function syncCheck(lastSyncAt: number, syncFrequency: number) {
  const age = Date.now() - lastSyncAt;
  const ok = lastSyncAt > 0 && age < Math.max(3 * syncFrequency, 30_000);
  return {
    name: "syncloop",
    ok,
    message: ok ? "ok" : lastSyncAt === 0 ? "no sync completed yet" : `last sync ${Math.round(age / 1000)}s ago`,
  };
}

/**
 * `reset`: refuses while a kubelet holds the lock file, then holds it itself (no kubelet starts mid-way) while it
 * removes this node's pods from the runtime and the kubelet's state on the host (node-reset.ts).
 */
export async function resetOnce(
  config: KubeletConfig,
  options: { log: Logger; dryRun: boolean } & Pick<NodeResetOptions, "onStep" | "onPodStopping" | "onPodStopped">,
): Promise<{ runtime: string; steps: ResetStep[] }> {
  const lockFile = config.lockFile || join(config.rootDir, "kubelet.lock");
  const holder = await lockHolder(lockFile);
  if (holder !== undefined)
    throw new KubeletError(
      "LockContention",
      `a kubelet (pid ${holder.pid ?? "not written yet"}) holds --lock_file "${lockFile}": stop it first (systemctl stop kubelet), then run reset again`,
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
      {
        rootDir,
        podLogsDir,
        lockFile,
        dryRun: options.dryRun,
        onStep: options.onStep,
        onPodStopping: options.onPodStopping,
        onPodStopped: options.onPodStopped,
      },
      {
        runtime: decorateRuntime(runtime, { nodeName: nodeIdentity(config).name }),
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
