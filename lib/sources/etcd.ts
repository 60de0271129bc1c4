// The etcd source (--etcd_servers / --etcd_config): the key /registry/hosts/<hostname>/kubelet,
// read once, then watched from the next revision. A lost connection never empties the source;
// only an empty list or a delete the watch confirms does.
import { Etcd3, type IOptions } from "etcd3";
import { readFileSync } from "node:fs";
import { systemClock, type Clock } from "../clock.ts";
import { parseDuration } from "../config/config.ts";
import { silentLogger, type Logger } from "../log.ts";
import { parseYaml, readManifests } from "../api/manifest.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { KubeletError } from "../api/types.ts";
import { snapshotSignature, type PodSource, type SourceSnapshot } from "./source.ts";

export interface EtcdSourceOptions {
  endpoints?: string[];
  /**
   * --etcd_config: the 2014 go-etcd JSON or `{endpoints, caFile, certFile, keyFile, username, password, dialTimeout}`.
   */
  configFile?: string;
  hostname: string;
  /** Largest value read, bytes (--max_manifest_bytes). */
  maxBytes?: number;
  clock?: Clock;
  log?: Logger;
  metrics?: KubeletMetrics;
}

/** The key a host's pods live under. */
export function etcdKeyFor(hostname: string): string {
  return `/registry/hosts/${hostname}/kubelet`;
}

export function createEtcdSource(options: EtcdSourceOptions): PodSource {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const key = etcdKeyFor(options.hostname);
  const clientOptions = options.configFile
    ? readEtcdConfig(options.configFile)
    : { hosts: options.endpoints ?? [], dialTimeout: 5000 };
  if (clientOptions.hosts.length === 0)
    throw new KubeletError("InvalidValue", "the etcd source needs at least one endpoint");

  return {
    name: "etcd",
    start(emit) {
      const client = new Etcd3(clientOptions as IOptions);
      const stop = new AbortController();
      let lastSignature: string | undefined;
      let lastGood: SourceSnapshot | undefined;
      const publish = (value: Buffer | undefined) => {
        const parsed =
          value === undefined
            ? { pods: [], rejected: [] }
            : readManifests(value, { source: "etcd", origin: key }, { maxBytes: options.maxBytes });
        const broken = parsed.rejected.some((r) => r.issues.some((i) => i.path === "<document>"));
        const snapshot = broken && lastGood ? { pods: lastGood.pods, rejected: parsed.rejected } : parsed;
        if (!broken) lastGood = parsed;
        const signature = snapshotSignature(snapshot);
        if (signature === lastSignature) return;
        lastSignature = signature;
        emit(snapshot);
      };

      const session = async () => {
        const response = await client.get(key).exec();
        const kv = response.kvs[0];
        publish(kv ? kv.value : undefined);
        const watcher = await client
          .watch()
          .key(key)
          .startRevision(String(Number(response.header.revision) + 1))
          .create();
        await new Promise<void>((resolve, reject) => {
          watcher.on("put", (kv) => publish(kv.value));
          watcher.on("delete", () => publish(undefined));
          watcher.on("disconnected", () => log.warn(`lost the etcd watch on ${key}; reconnecting (pods are kept)`));
          watcher.on("connected", () => log.debug(`watching ${key}`));
          watcher.on("error", (error) => reject(error));
          watcher.on("end", () => resolve());
          const cancel = () => void watcher.cancel().then(resolve, resolve);
          if (stop.signal.aborted)
            cancel(); // stopped while the watch was being set up
          else stop.signal.addEventListener("abort", cancel, { once: true });
        });
      };

      const loop = async () => {
        let delay = 500;
        while (!stop.signal.aborted) {
          const startedAt = clock.now();
          try {
            await session();
          } catch (error) {
            if (stop.signal.aborted) break;
            options.metrics?.sourceError("etcd");
            log.warn(`etcd source ${key}: ${(error as Error).message}; retrying in ${delay / 1000}s (pods are kept)`);
          }
          if (stop.signal.aborted) break;
          if (clock.now() - startedAt > 60_000) delay = 500;
          await clock.sleep(delay, stop.signal).catch(() => {});
          delay = Math.min(delay * 2, 30_000);
        }
      };
      const running = loop();
      return async () => {
        stop.abort();
        await running;
        client.close();
      };
    },
  };
}

interface EtcdClientOptions {
  hosts: string[];
  dialTimeout: number;
  credentials?: { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer };
  auth?: { username: string; password: string };
}

/** Reads --etcd_config; errors name the file and the key. */
export function readEtcdConfig(path: string): EtcdClientOptions {
  const fail = (why: string) => new KubeletError("InvalidConfigFile", `--etcd_config "${path}": ${why}`);
  let doc: Record<string, any>;
  try {
    doc = parseYaml(readFileSync(path, "utf8")) as Record<string, any>;
  } catch (error) {
    throw fail((error as Error).message);
  }
  if (!doc || typeof doc !== "object") throw fail("expected a mapping");
  const legacy =
    doc.cluster || doc.config
      ? {
          endpoints: doc.cluster?.machines,
          caFile: doc.config?.caCertFiles?.[0],
          certFile: doc.config?.certFile,
          keyFile: doc.config?.keyFile,
          dialTimeout: doc.config?.timeout,
        }
      : doc;
  const endpoints = legacy.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0)
    throw fail(`"endpoints" (or cluster.machines) must list at least one URL`);
  const file = (name: string, value: unknown) => {
    try {
      return readFileSync(String(value));
    } catch (error) {
      throw fail(`${name}: ${(error as Error).message}`);
    }
  };
  const options: EtcdClientOptions = { hosts: endpoints.map(String), dialTimeout: 5000 };
  if (legacy.dialTimeout !== undefined) {
    options.dialTimeout =
      typeof legacy.dialTimeout === "number" ? legacy.dialTimeout / 1e6 : parseDuration(String(legacy.dialTimeout));
  }
  if (legacy.caFile) {
    options.credentials = { rootCertificate: file("caFile", legacy.caFile) };
    if (legacy.certFile) options.credentials.certChain = file("certFile", legacy.certFile);
    if (legacy.keyFile) options.credentials.privateKey = file("keyFile", legacy.keyFile);
  }
  if (legacy.username) options.auth = { username: String(legacy.username), password: String(legacy.password ?? "") };
  for (const name of Object.keys(legacy)) {
    if (!["endpoints", "caFile", "certFile", "keyFile", "username", "password", "dialTimeout"].includes(name))
      throw fail(`unknown setting "${name}"`);
  }
  return options;
}
