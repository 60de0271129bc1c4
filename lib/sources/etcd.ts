// The etcd source (--etcd_servers / --etcd_config): the key /registry/hosts/<hostname>/kubelet (the
// host's pods in one value, as etcdctl users write it), one key per pod under …/pods/ (what `kubelet
// fleet apply --node` writes), the ConfigMaps and Secrets under …/configmaps/ and …/secrets/, and the
// every-node pods under /registry/daemons/ whose spec.nodeSelector the node's labels match; read once,
// then watched (the host prefix and the daemons prefix) from the next revision. A lost connection
// never empties the source; only an empty list or a delete the watch confirms does.
import { systemClock, type Clock } from "../clock.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { ConfigObject } from "../api/config-objects.ts";
import { ANNOTATION } from "../api/types.ts";
import { readManifests, type ManifestResult } from "../api/manifest.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { createEtcdClient, type EtcdClientOptions, type EtcdWatch } from "./etcd-client.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";
import { snapshotSignature, type PodSource, type SourceSnapshot } from "./source.ts";

/** Connection settings (lib/config/etcd-config.ts reads them from the flags), the host and the parts. */
export interface EtcdSourceOptions extends EtcdClientOptions {
  hostname: string;
  /** The node's labels (--node_labels and kubernetes.io/hostname): which every-node pods are this node's. */
  labels?: Record<string, string>;
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
  if (name === podKey || name.startsWith(`${prefix}pods/`) || name.startsWith(ETCD_DAEMONS)) return result;
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

/** The key of one pod placed on one host (`kubelet fleet apply --node`). */
export function etcdPodKey(hostname: string, namespace: string, name: string): string {
  return `/registry/hosts/${hostname}/pods/${namespace}/${name}`;
}

/** Where every-node pods live: `<prefix><namespace>/<name>`, run by each node their spec.nodeSelector matches. */
export const ETCD_DAEMONS = "/registry/daemons/";

/** True when every label the selector names has that value on the node (an empty selector: every node). */
export function selectorMatches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([key, value]) => labels[key] === value);
}

export function createEtcdSource(options: EtcdSourceOptions): PodSource {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const key = etcdKeyFor(options.hostname);
  const labels = { ...options.labels, "kubernetes.io/hostname": options.hostname };
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
          snapshot.pods.push(
            ...(name.startsWith(ETCD_DAEMONS)
              ? read.snapshot.pods.filter((pod) => selectorMatches(pod.spec.nodeSelector, labels))
              : read.snapshot.pods),
          );
          snapshot.configs.push(...read.snapshot.configs);
          snapshot.rejected.push(...read.snapshot.rejected);
        }
        for (const name of [...lastGood.keys()]) if (!values.has(name)) lastGood.delete(name);
        // A pod under the host's own keys wins over the every-node pod of the same name: how a fleet rollout
        // moves one node of a selector placement at a time (lib/cli/fleet-rollout.ts).
        const own = new Set(
          snapshot.pods
            .filter((p) => !p.metadata.annotations[ANNOTATION.origin]?.startsWith(ETCD_DAEMONS))
            .map((p) => `${p.metadata.namespace}/${p.metadata.name}`),
        );
        if (own.size > 0)
          snapshot.pods = snapshot.pods.filter(
            (p) =>
              !p.metadata.annotations[ANNOTATION.origin]?.startsWith(ETCD_DAEMONS) ||
              !own.has(`${p.metadata.namespace}/${p.metadata.name}`),
          );
        const signature = snapshotSignature(snapshot);
        if (signature === lastSignature) return;
        lastSignature = signature;
        emit(snapshot);
      };
      const relevant = (name: string) =>
        name === key ||
        name.startsWith(ETCD_DAEMONS) ||
        ["pods/", "configmaps/", "secrets/"].some((kind) => name.startsWith(prefix + kind));

      // The host's prefix and the daemons' in one snapshot (one list each), then one watch each.
      const session = async () => {
        // A node role that may not read the daemons' prefix (set up before it existed) still gets its own pods.
        const daemons = client.list(ETCD_DAEMONS).catch((error: Error & { code?: string }) => {
          if (error.code !== "PermissionDenied") throw error;
          log.warn(
            `${error.message}; every-node pods (kubelet fleet apply --selector/--all-nodes) are not run here until the node's role may read ${ETCD_DAEMONS}`,
          );
          return undefined;
        });
        const [own, shared] = await Promise.all([client.list(prefix), daemons]);
        const lists = shared ? [own, shared] : [own];
        const watched = [prefix, ETCD_DAEMONS].slice(0, lists.length);
        values.clear();
        for (const { entries } of lists)
          for (const entry of entries) if (relevant(entry.key)) values.set(entry.key, entry.value);
        publish();
        // One after the other: a watch that cannot be set up cancels the one already running.
        const watches: EtcdWatch[] = [];
        try {
          for (const [i, target] of watched.entries()) {
            let lost = false;
            const watch = await client.watch({ prefix: target }, lists[i]!.revision + 1, {
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
                log.warn(`lost the etcd watch on ${target}; reconnecting (pods are kept)`);
              },
              connected: (from) => {
                if (lost) log.info(`the etcd watch on ${target} resumed at revision ${from}`);
                else log.debug(`watching ${target} from revision ${from}`);
                lost = false;
              },
            });
            watch.done.catch(() => {}); // its failure ends the session below, not the process
            watches.push(watch);
          }
        } catch (error) {
          await Promise.all(watches.map((w) => w.cancel()));
          throw error;
        }
        let cancelled: Promise<unknown> | undefined;
        const cancel = () => (cancelled ??= Promise.all(watches.map((w) => w.cancel()))); // once: etcd3 never answers a second cancel
        if (stop.signal.aborted)
          void cancel(); // stopped while the watches were being set up
        else stop.signal.addEventListener("abort", () => void cancel(), { once: true });
        // Either watch ending ends the session: both are set up again from a fresh list.
        await Promise.race(watches.map((w) => w.done)).finally(cancel);
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
