// The etcd source (--etcd_servers / --etcd_config): the key /registry/hosts/<hostname>/kubelet,
// read once, then watched from the next revision. A lost connection never empties the source;
// only an empty list or a delete the watch confirms does.
import { systemClock, type Clock } from "../clock.ts";
import { silentLogger, type Logger } from "../log.ts";
import { readManifests } from "../api/manifest.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { createEtcdClient, etcdClientOptions } from "./etcd-client.ts";
import { snapshotSignature, type PodSource, type SourceSnapshot } from "./source.ts";

export interface EtcdSourceOptions {
  endpoints?: string[];
  /**
   * --etcd_config: the 2014 go-etcd JSON or `{endpoints, caFile, certFile, keyFile, username, password, dialTimeout}`.
   */
  configFile?: string;
  hostname: string;
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
  const clientOptions = etcdClientOptions(options);

  return {
    name: "etcd",
    start(emit) {
      const client = createEtcdClient(clientOptions);
      const stop = new AbortController();
      let lastSignature: string | undefined;
      let lastGood: SourceSnapshot | undefined;
      const publish = (value: string | undefined) => {
        const parsed =
          value === undefined ? { pods: [], rejected: [] } : readManifests(value, { source: "etcd", origin: key });
        const broken = parsed.rejected.some((r) => r.issues.some((i) => i.path === "<document>"));
        const snapshot = broken && lastGood ? { pods: lastGood.pods, rejected: parsed.rejected } : parsed;
        if (!broken) lastGood = parsed;
        const signature = snapshotSignature(snapshot);
        if (signature === lastSignature) return;
        lastSignature = signature;
        emit(snapshot);
      };

      const session = async () => {
        const { entry, revision } = await client.get(key);
        publish(entry?.value);
        const watch = await client.watch({ key }, revision + 1, {
          put: (kv) => publish(kv.value),
          delete: () => publish(undefined),
          disconnected: () => log.warn(`lost the etcd watch on ${key}; reconnecting (pods are kept)`),
          connected: () => log.debug(`watching ${key}`),
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
