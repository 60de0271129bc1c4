// The etcd source (--etcd_servers / --etcd_config): the key /registry/hosts/<hostname>/kubelet,
// read once, then watched from the next revision. A lost connection never empties the source;
// only an empty list or a delete the watch confirms does.
import { Etcd3, type IOptions } from "etcd3";
import { systemClock, type Clock } from "../clock.ts";
import { silentLogger, type Logger } from "../log.ts";
import { readManifests } from "../api/manifest.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { KubeletError } from "../api/types.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";
import { snapshotSignature, type PodSource } from "./source.ts";

export interface EtcdSourceOptions {
  /** Client URLs of the members (http://ip:port or https://…). */
  endpoints: string[];
  /** How long to wait for a connection, ms (default 5 s). */
  dialTimeoutMs?: number;
  /** PEM contents: the CA to trust, and a client certificate and key to present. */
  tls?: { ca: Buffer; cert?: Buffer; key?: Buffer };
  auth?: { username: string; password: string };
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
  if (options.endpoints.length === 0)
    throw new KubeletError("InvalidValue", "the etcd source needs at least one endpoint");
  const clientOptions: IOptions = {
    hosts: options.endpoints,
    dialTimeout: options.dialTimeoutMs ?? 5000,
    ...(options.tls
      ? {
          credentials: {
            rootCertificate: options.tls.ca,
            ...(options.tls.cert ? { certChain: options.tls.cert } : {}),
            ...(options.tls.key ? { privateKey: options.tls.key } : {}),
          },
        }
      : {}),
    ...(options.auth ? { auth: options.auth } : {}),
  };

  return {
    name: "etcd",
    start(emit) {
      const client = new Etcd3(clientOptions);
      const stop = new AbortController();
      let lastSignature: string | undefined;
      let lastGood: LastGood | undefined;
      /** A value (undefined: the key was deleted, which means no pods) → a snapshot, if it changed. */
      const publish = (value: string | undefined) => {
        const read = readKeepingLastGood(value ?? "", lastGood, (text) =>
          readManifests(text, { source: "etcd", origin: key }),
        );
        lastGood = read.last;
        const snapshot = read.snapshot;
        const signature = snapshotSignature(snapshot);
        if (signature === lastSignature) return;
        lastSignature = signature;
        emit(snapshot);
      };

      const session = async () => {
        const response = await client.get(key).exec();
        const kv = response.kvs[0];
        publish(kv ? kv.value.toString("utf8") : undefined);
        const watcher = await client
          .watch()
          .key(key)
          .startRevision(String(Number(response.header.revision) + 1))
          .create();
        await new Promise<void>((resolve, reject) => {
          watcher.on("put", (kv) => publish(kv.value.toString("utf8")));
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
