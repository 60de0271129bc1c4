// Fleet serve's pods, from etcd alone: every pod a node was given or reports a status for, with the manifest
// placed for it and spec.nodeName naming the node, kept current by one etcd watch; the feed's version is etcd's
// revision, so every fleet serve behind a load balancer stamps a pod with the same resourceVersion.
//
// Decision: a pod that runs on several nodes (a selector placement, or `fleet apply --node a,b`) is served once per
// node as `<name>-<node>`, as the API names a static pod's mirror; a pod on one node keeps its name. The placed
// name is kept in FLEET_PLACED so a write to any copy is a write to the placement.
import type { Pod, V1PodStatus } from "../../api/types.ts";
import { systemClock, type Clock, type Timer } from "../../clock.ts";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import type { EtcdClient, EtcdWatch } from "../../sources/etcd-client.ts";
import { ETCD_DAEMONS } from "../../sources/etcd.ts";
import type { PodFeed } from "./watch.ts";

/** On a served pod that `kubelet fleet apply` (or fleet serve) placed: `namespace/name` as placed. */
export const FLEET_PLACED = "kubelet.fleet/placed";

/** Node prefixes listed at once at start (readFleet's figure). */
const LIST_CONCURRENCY = 32;
/** How long a failed relist waits before the next try. */
const RELIST_RETRY_MS = 1000;

export interface FleetPodFeed extends PodFeed {
  /** Lists the fleet's pods and starts the watch that keeps them current. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** How many times the watch ended and the fleet was listed again (the tests read it). */
  relists(): number;
}

/** `/registry/hosts/<node>/<kind>/<namespace>/<name>` → its parts, for the kinds the feed reads. */
function hostKey(key: string): { node: string; kind: string; namespace: string; name: string } | undefined {
  if (!key.startsWith(fleetKeys.hosts)) return undefined;
  const [node, kind, namespace, name, ...rest] = key.slice(fleetKeys.hosts.length).split("/");
  if (!node || !namespace || !name || rest.length || (kind !== "status" && kind !== "pods")) return undefined;
  return { node, kind, namespace, name };
}

/** A served pod and the feed's objects it was made from. */
interface Made {
  pod: Pod;
  own?: Pod;
  daemon?: Pod;
  status?: V1PodStatus;
  copied: boolean;
}

function parse<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

export function createFleetPodFeed(
  client: Pick<EtcdClient, "list" | "watch">,
  deps: { clock: Clock } = { clock: systemClock },
): FleetPodFeed {
  /** `node\tnamespace/name` → what etcd holds for the pod on that node. */
  const onNode = new Map<string, { manifest?: Pod; status?: V1PodStatus }>();
  /** `namespace/name` → a selector placement's manifest. */
  const daemons = new Map<string, Pod>();
  let version = 0;
  let served: { version: number; pods: Pod[] } | undefined;
  /**
   * Each served pod and what it was made from, by `node\tnamespace/name`: a pod whose parts are the same objects is
   * served as the same object again (`immutable`), so a change costs the changed pods, not the fleet's 30,000.
   */
  let made = new Map<string, Made>();
  const listeners = new Set<() => void>();
  let watch: EtcdWatch | undefined;

  const entryOf = (node: string, namespace: string, name: string) => {
    const id = `${node}\t${namespace}/${name}`;
    let entry = onNode.get(id);
    if (!entry) onNode.set(id, (entry = {}));
    return { id, entry };
  };

  /** Applies one key's new value (undefined: deleted); true when it changes what is served. */
  const apply = (key: string, value: string | undefined): boolean => {
    if (key.startsWith(ETCD_DAEMONS)) {
      const id = key.slice(ETCD_DAEMONS.length);
      const pod = value === undefined ? undefined : parse<Pod>(value);
      if (pod) daemons.set(id, pod);
      else return daemons.delete(id);
      return true;
    }
    const parts = hostKey(key);
    if (!parts) return false;
    const { id, entry } = entryOf(parts.node, parts.namespace, parts.name);
    if (parts.kind === "status") entry.status = value === undefined ? undefined : parse<V1PodStatus>(value);
    else entry.manifest = value === undefined ? undefined : parse<Pod>(value);
    if (!entry.status && !entry.manifest) onNode.delete(id);
    return true;
  };

  const changed = (revision: number) => {
    version = Math.max(version, revision);
    for (const listener of listeners) listener();
  };

  const build = (): Pod[] => {
    const copies = new Map<string, number>();
    for (const id of onNode.keys()) {
      const podId = id.slice(id.indexOf("\t") + 1);
      copies.set(podId, (copies.get(podId) ?? 0) + 1);
    }
    const pods: Pod[] = [];
    const now = new Map<string, Made>();
    for (const [id, { manifest: own, status }] of onNode) {
      const node = id.slice(0, id.indexOf("\t"));
      const podId = id.slice(node.length + 1);
      const [namespace, name] = podId.split("/") as [string, string];
      const daemon = own ? undefined : daemons.get(podId);
      const copied = (copies.get(podId) ?? 0) > 1;
      const last = made.get(id);
      if (last && last.own === own && last.daemon === daemon && last.status === status && last.copied === copied) {
        now.set(id, last);
        pods.push(last.pod);
        continue;
      }
      const manifest = own ?? daemon;
      // A pod the node runs from its own files reports only a status: its containers are named from it.
      const spec = manifest?.spec ?? {
        containers: (status?.containerStatuses ?? []).map((c) => ({ name: c.name, image: c.image })),
      };
      // Decision: FLEET_PLACED is the only annotation added, not a node's config.source and config.origin: it
      // already says the pod is a placement in etcd (its key follows from it and spec.nodeName), and a write drops
      // the other two. Each key on each of 30,000 rows costs kubectl's decoding (bench/results.md).
      const annotations: Record<string, string> = { ...manifest?.metadata.annotations };
      if (manifest) annotations[FLEET_PLACED] = podId;
      const pod = {
        ...manifest,
        apiVersion: "v1",
        kind: "Pod",
        metadata: { ...manifest?.metadata, namespace, name: copied ? `${name}-${node}` : name, annotations },
        spec: { ...spec, nodeName: node },
        status: status ?? { phase: "Pending" },
      } as Pod;
      now.set(id, { pod, own, daemon, status, copied });
      pods.push(pod);
    }
    made = now;
    return pods;
  };

  /**
   * Lists the fleet and watches from the list's revision. Decision: when the watch ends or fails (etcd compacted the
   * revision it would resume from, or it was lost for good), the maps are rebuilt from a new list, as an informer
   * relists: what changed meanwhile, deletions included, is served, and nothing is kept that a list cannot rebuild.
   */
  const listAndWatch = async (): Promise<void> => {
    const serializable = { serializable: true };
    const nodes = await client.list(fleetKeys.nodes, serializable);
    const prefixes = [
      ETCD_DAEMONS,
      ...nodes.entries.flatMap(({ key }) => {
        const node = key.slice(fleetKeys.nodes.length);
        return [fleetKeys.statuses(node), `${fleetKeys.hosts}${node}/pods/`];
      }),
    ];
    onNode.clear();
    daemons.clear();
    let next = 0;
    const lister = async () => {
      for (let i = next++; i < prefixes.length; i = next++)
        for (const entry of (await client.list(prefixes[i]!, serializable)).entries) apply(entry.key, entry.value);
    };
    await Promise.all(Array.from({ length: LIST_CONCURRENCY }, lister));
    // A relist is a change even at the same revision: a delete is stamped past etcd's (below), and the maps are new.
    const relisted = version > 0;
    version = relisted ? Math.max(version + 1, nodes.revision) : nodes.revision;
    served = undefined;
    if (relisted) changed(version);
    // From the first list's revision on: what changed while the others were read comes again, and is applied again.
    const current = await client.watch({ prefix: "/registry/" }, nodes.revision + 1, {
      put: (entry) => {
        if (apply(entry.key, entry.value)) changed(entry.modRevision);
      },
      // The client's delete event carries no revision: the change is stamped one past the newest seen.
      delete: (key) => {
        if (apply(key, undefined)) changed(version + 1);
      },
    });
    watch = current;
    const again = () => {
      if (stopped || watch !== current) return;
      relists++;
      listAndWatch().catch(() => retry());
    };
    // A relist that fails (etcd unreachable) is tried again after RELIST_RETRY_MS until one succeeds.
    const retry = () => {
      if (!stopped) retryTimer = deps.clock.setTimeout(() => listAndWatch().catch(retry), RELIST_RETRY_MS);
    };
    current.done.then(again, again);
  };
  let stopped = false;
  let relists = 0;
  let retryTimer: Timer | undefined;

  return {
    relists: () => relists,
    pods() {
      if (served?.version !== version) served = { version, pods: build() };
      return served.pods;
    },
    version: () => version,
    revisioned: true,
    // apply() parses a new object for every change, and build() makes a new pod only from new parts.
    immutable: true,
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async start() {
      await listAndWatch();
    },
    async stop() {
      stopped = true;
      retryTimer?.cancel();
      await watch?.cancel();
    },
  };
}
