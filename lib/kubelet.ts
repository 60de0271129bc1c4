// Composition root: wires the real parts — sources → merge store → sync loop → info server —
// for `kubelet run` and `kubelet runonce`. The only place concrete implementations meet.
import { access, constants, mkdir } from "node:fs/promises";
import { hostname as osHostname, networkInterfaces } from "node:os";
import { checkServerSecurity, loadAuthenticator } from "./server/auth.ts";
import { systemClock } from "./clock.ts";
import type { KubeletConfig } from "./config/config-types.ts";
import { createDockerRuntime, resolveDockerEndpoint } from "./container/docker.ts";
import { instrumentRuntime } from "./container/instrumented.ts";
import { createEventRecorder } from "./node/events.ts";
import { createImageManager } from "./node/images.ts";
import { createInfoServer, type HealthReport } from "./server/info-server.ts";
import type { Logger } from "./log.ts";
import type { KubeletMetrics } from "./metrics.ts";
import { serve } from "./platform/serve.ts";
import type { RunningServer } from "./platform/types.ts";
import { createProbeManager } from "./node/probes.ts";
import { createPrometheusMetrics } from "./server/prometheus.ts";
import { formatRunOnceReport, runPodsOnce } from "./sync/runonce.ts";
import { createFileSource } from "./sources/file.ts";
import type { PodSource, SourceSnapshot } from "./sources/source.ts";
import { createUrlSource } from "./sources/url.ts";
import { createPodStore } from "./sources/store.ts";
import { createSyncLoop } from "./sync/sync-loop.ts";
import { formatIssue, KubeletError, type SourceName } from "./api/types.ts";
import { createVolumeManager } from "./node/volumes.ts";

export interface RunOptions {
  log: Logger;
  signal: AbortSignal;
}

/**
 * Runs the kubelet until `signal` aborts; containers are left running. Throws KubeletError on fatal start-up errors.
 */
export async function runKubelet(config: KubeletConfig, { log, signal }: RunOptions): Promise<void> {
  const insecure = checkServerSecurity(config);
  if (insecure) throw new KubeletError("InsecureServer", insecure);
  await prepareRootDir(config.rootDir);
  const node = nodeIdentity(config);
  const metrics = createPrometheusMetrics();
  const events = createEventRecorder({ log: log.child("events") });
  const endpoint = resolveDockerEndpoint(config.dockerEndpoint, process.env);
  const runtime = instrumentRuntime(createDockerRuntime({ endpoint, log: log.child("docker") }), metrics);
  const sources = await createSources(config, node.name, log, metrics);
  if (sources.length === 0 && !(config.enableServer && config.enableDebuggingHandlers)) {
    throw new KubeletError(
      "NoSources",
      "no pod source: give --config, --manifest_url or --etcd_servers/--etcd_config (or keep the server's push routes on)",
    );
  }
  await runtime.ping().then(
    () => log.info(`Docker Engine at ${endpoint} answers`),
    (error: Error) => log.warn(`${error.message}; will keep retrying (running containers are left alone)`),
  );
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
      allowPrivileged: config.allowPrivileged,
      maxDeadPerContainer: config.maximumDeadContainersPerContainer,
      syncFrequencyMs: config.syncFrequency,
    },
    {
      store,
      runtime,
      images: createImageManager(
        { qps: config.registryQps, burst: config.registryBurst, log: log.child("images"), metrics, events },
        runtime,
      ),
      volumes: createVolumeManager({ rootDir: config.rootDir, log: log.child("volumes") }),
      createProbeManager,
      clock: systemClock,
      log: log.child("sync"),
      metrics,
      events,
    },
  );

  const servers: RunningServer[] = [];
  const stopSources = sources.map((source) => source.start((snapshot) => store.apply(source.name, snapshot)));
  try {
    if (config.enableServer) {
      const auth = await loadAuthenticator(config);
      const health = async (): Promise<HealthReport> => {
        const checks = [
          await runtime.ping().then(
            () => ({ name: "docker", ok: true, message: "ok" }),
            (e: Error) => ({ name: "docker", ok: false, message: e.message }),
          ),
          syncCheck(syncLoop.lastSyncAt(), config.syncFrequency),
          {
            name: "sources",
            ok: store.allSourcesReady(),
            message: store.allSourcesReady() ? "ok" : "waiting for the first read of every source",
          },
        ];
        return { ok: checks.every((c) => c.ok), checks };
      };
      const deps = {
        config,
        pods: () => syncLoop.pods(),
        podsVersion: () => syncLoop.version(),
        runtime,
        push: store,
        health,
        metrics,
        events,
        allowPrivileged: config.allowPrivileged,
        allowSensitiveHostPaths: config.allowSensitiveHostPaths,
        maxManifestBytes: config.maxManifestBytes,
        auth,
        log: log.child("server"),
      };
      const main = await serve(createInfoServer(deps), { hostname: config.address, port: config.port, tls: auth.tls });
      servers.push(main);
      log.info(`info server listening on ${config.address}:${main.port}${auth.tls ? " (TLS)" : ""}`);
      if (config.readOnlyPort > 0) {
        servers.push(
          await serve(createInfoServer({ ...deps, readOnly: true }), {
            hostname: config.address,
            port: config.readOnlyPort,
          }),
        );
        log.info(`read-only server listening on ${config.address}:${config.readOnlyPort}`);
      }
    }
    log.info("kubelet started", { node: node.name, sources: sources.map((s) => s.name) });
    await syncLoop.run(signal);
  } finally {
    await Promise.allSettled([...stopSources.map((stop) => stop()), ...servers.map((s) => s.stop())]);
    log.info("kubelet stopped; containers left running");
  }
}

/** `runonce`: reads the file and URL sources once, starts every pod, waits; true when all made it. */
export async function runOnce(
  config: KubeletConfig,
  { log, signal, out, tty }: RunOptions & { out: NodeJS.WritableStream; tty: boolean },
): Promise<boolean> {
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
  const runtime = createDockerRuntime({
    endpoint: resolveDockerEndpoint(config.dockerEndpoint, process.env),
    log: log.child("docker"),
  });
  const report = await runPodsOnce(
    store.mergedState(),
    {
      runtime,
      images: createImageManager(
        { qps: config.registryQps, burst: config.registryBurst, log: log.child("images"), events },
        runtime,
      ),
      volumes: createVolumeManager({ rootDir: config.rootDir, log: log.child("volumes") }),
      clock: systemClock,
      log: log.child("runonce"),
      events,
      options: {
        hostname: node.name,
        hostIP: node.ip,
        networkMode: config.podNetworkMode,
        pauseImage: config.networkContainerImage,
        allowPrivileged: config.allowPrivileged,
      },
    },
    { timeoutMs: config.runonceTimeout, signal, tty, out },
  );
  out.write(formatRunOnceReport(report) + "\n");
  return report.ok && rejected.length === 0;
}

async function createSources(
  config: KubeletConfig,
  nodeName: string,
  log: Logger,
  metrics: KubeletMetrics,
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
        endpoints: config.etcdServers,
        configFile: config.etcdConfig || undefined,
        hostname: nodeName,
        maxBytes: config.maxManifestBytes,
        log: log.child("source/etcd"),
        metrics,
      }),
    );
  }
  return sources;
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
