// The etcd source (--etcd_servers / --etcd_config): the key /registry/hosts/<hostname>/kubelet and
// the ConfigMaps and Secrets under …/configmaps/ and …/secrets/, read once, then watched (the whole
// host prefix) from the next revision. A lost connection never empties the source;
// only an empty list or a delete the watch confirms does.
import { systemClock, type Clock } from "../clock.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { ConfigObject } from "../api/config-objects.ts";
import { readManifests, type ManifestResult } from "../api/manifest.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { createEtcdClient, type EtcdClientOptions } from "./etcd-client.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";
import { snapshotSignature, type PodSource, type SourceSnapshot } from "./source.ts";

/** Connection settings (lib/config/etcd-config.ts reads them from the flags), the host and the parts. */
export interface EtcdSourceOptions extends EtcdClientOptions {
  hostname: string;
  /** Largest value read, bytes (--max_manifest_bytes). */
  maxBytes?: number;
  clock?: Clock;
  log?: Logger;
  metrics?: KubeletMetrics;
}

/**
 * Parses one etcd value: the host's key holds pods (and may hold ConfigMaps and Secrets beside them);
 * keys under configmaps/ and secrets/ hold only objects of that kind.
 */
function readKey(name: string, text: string, podKey: string, prefix: string, maxBytes?: number): ManifestResult {
  const result = readManifests(text, { source: "etcd", origin: name }, { maxBytes });
  if (name === podKey) return result;
  const kind = name.startsWith(`${prefix}configmaps/`) ? "ConfigMap" : "Secret";
  const misplaced = (what: string, pod?: string) => ({
    source: "etcd" as const,
    origin: name,
    ...(pod ? { pod } : {}),
    issues: [
      {
        path: "kind",
        type: "Unsupported value",
        value: what,
        detail: `only ${kind} documents are read from ${prefix}${kind === "ConfigMap" ? "configmaps" : "secrets"}/…; put pods under ${podKey}`,
        severity: "error" as const,
      },
    ],
  });
  return {
    pods: [],
    configs: result.configs.filter((c) => c.kind === kind),
    rejected: [
      ...result.rejected,
      ...result.pods.map((p) => misplaced("Pod", `${p.metadata.namespace}/${p.metadata.name}`)),
      ...result.configs
        .filter((c) => c.kind !== kind)
        .map((c) => misplaced(c.kind, `${c.metadata.namespace}/${c.metadata.name}`)),
    ],
  };
}

/** The key a host's pods live under. */
export function etcdKeyFor(hostname: string): string {
  return `/registry/hosts/${hostname}/kubelet`;
}

export function createEtcdSource(options: EtcdSourceOptions): PodSource {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const key = etcdKeyFor(options.hostname);
  const prefix = `/registry/hosts/${options.hostname}/`;

  return {
    name: "etcd",
    start(emit) {
      const client = createEtcdClient(options);
      const stop = new AbortController();
      let lastSignature: string | undefined;
      const values = new Map<string, string>();
      /** Per key, the last value that parsed: a broken value keeps its pods and objects (last-good.ts). */
      const lastGood = new Map<string, LastGood>();
      const publish = () => {
        const snapshot: SourceSnapshot & { configs: ConfigObject[] } = { pods: [], rejected: [], configs: [] };
        for (const name of [...values.keys()].sort()) {
          const read = readKeepingLastGood(values.get(name)!, lastGood.get(name), (text) =>
            readKey(name, text, key, prefix, options.maxBytes),
          );
          if (read.last) lastGood.set(name, read.last);
          snapshot.pods.push(...read.snapshot.pods);
          snapshot.configs.push(...read.snapshot.configs);
          snapshot.rejected.push(...read.snapshot.rejected);
        }
        for (const name of [...lastGood.keys()]) if (!values.has(name)) lastGood.delete(name);
        const signature = snapshotSignature(snapshot);
        if (signature === lastSignature) return;
        lastSignature = signature;
        emit(snapshot);
      };
      const relevant = (name: string) =>
        name === key || name.startsWith(`${prefix}configmaps/`) || name.startsWith(`${prefix}secrets/`);

      const session = async () => {
        const { entries, revision } = await client.list(prefix);
        values.clear();
        for (const entry of entries) if (relevant(entry.key)) values.set(entry.key, entry.value);
        publish();
        let lost = false;
        const watch = await client.watch({ prefix }, revision + 1, {
          put: (entry) => {
            if (!relevant(entry.key)) return;
            values.set(entry.key, entry.value);
            publish();
          },
          delete: (name) => {
            if (values.delete(name)) publish();
          },
          disconnected: () => {
            lost = true;
            log.warn(`lost the etcd watch on ${prefix}; reconnecting (pods are kept)`);
          },
          connected: (from) => {
            if (lost) log.info(`the etcd watch on ${prefix} resumed at revision ${from}`);
            else log.debug(`watching ${prefix} from revision ${from}`);
            lost = false;
          },
        });
        if (stop.signal.aborted)
          void watch.cancel(); // stopped while the watch was being set up
        else stop.signal.addEventListener("abort", () => void watch.cancel(), { once: true });
        await watch.done;
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
