// Fleet mode's write path (the modern kubelet's nodeLeaseController, syncNodeStatus and status
// manager in one loop): the Node record, each pod's status and the recent events, all on one etcd
// lease of --node_lease_duration renewed every --node_status_update_frequency, so a dead node's
// records vanish by themselves.
//
// Decisions: the loop owns all timing and compares what etcd should hold with what it last wrote,
// so nothing is ever queued: while etcd is away only the latest state is kept, and it is written
// when etcd answers again (a lost lease is granted anew and everything rewritten). A round runs every
// coalesce window (1 s), and sooner when a pod's status changes: the change is written after a short
// settling delay (100 ms), so a burst is one transaction and put → running stays under a second at
// 1,000 nodes (bench/fleet-scale.bench.ts; with the whole 1 s window its p99 was over 1 s). The Node
// record's heartbeat times alone never cause a write before --node_status_report_frequency: the
// lease renewal is the heartbeat. A change wakes the loop (onPodsChange) rather than the loop polling
// for one, and a round whose inputs are the ones it last wrote compares nothing: a hollow node's
// 10 polls a second and its per-second diff of ~130 records were a third of its idle CPU (profiled).
import type { Clock, Timer } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { ANNOTATION, type Pod, type V1Node } from "../../api/types.ts";
import type { KubeEvent } from "../events/events.ts";
import { nodeSignature } from "./node-status.ts";

/** Where the fleet's records live. */
export const fleetKeys = {
  node: (node: string) => `/registry/nodes/${node}`,
  nodes: "/registry/nodes/",
  statuses: (node: string) => `/registry/hosts/${node}/status/`,
  status: (node: string, namespace: string, name: string) => `/registry/hosts/${node}/status/${namespace}/${name}`,
  events: (node: string) => `/registry/hosts/${node}/events/`,
  /** `{"namespace/name": manifest hash}` of the node's pods that carry one (`kubelet fleet apply` sets it). */
  revisions: (node: string) => `/registry/hosts/${node}/revisions`,
  event: (node: string, namespace: string, name: string) => `/registry/hosts/${node}/events/${namespace}/${name}`,
  hosts: "/registry/hosts/",
};

/** The part of the etcd client the reporter uses (lib/sources/etcd-client.ts implements it). */
export interface FleetStore {
  list(prefix: string): Promise<{ entries: Array<{ key: string }> }>;
  apply(changes: Array<{ key: string; value?: string }>, lease?: string): Promise<void>;
  grantLease(ttlSeconds: number): Promise<string>;
  keepAlive(lease: string): Promise<number>;
}

export interface FleetReporterOptions {
  hostname: string;
  /** --node_lease_duration */
  leaseDurationMs: number;
  /** --node_status_update_frequency: lease renewal and node status refresh. */
  updateFrequencyMs: number;
  /** --node_status_report_frequency: the Node record is rewritten at least this often. */
  reportFrequencyMs: number;
  /** A round at least this often: node record, events, lease (default 1 s). */
  coalesceMs?: number;
  /** A pod status change is written this long after it is seen, with whatever else changed meanwhile (default 100 ms). */
  settleMs?: number;
  /** Events kept in etcd per node (default 100, the most recent). */
  eventLimit?: number;
  clock: Clock;
  log: Logger;
}

export interface FleetReporterDeps {
  store: FleetStore;
  /** The node's record as of now; `previous` keeps condition transition times. */
  node(previous?: V1Node): Promise<V1Node>;
  /** Desired pods with their latest status (what /pods serves). */
  pods(): Pod[];
  /** Changes whenever pods() would answer differently. */
  podsVersion(): number;
  /** Calls `listener` on each change of podsVersion() until the returned function is called. */
  onPodsChange(listener: () => void): () => void;
  /** The event recorder's log, oldest first. */
  events(): KubeEvent[];
}

export interface FleetReporter {
  /** Writes until the signal aborts. The lease is left to expire, as a killed kubelet's would. */
  run(signal: AbortSignal): Promise<void>;
}

export function createFleetReporter(options: FleetReporterOptions, deps: FleetReporterDeps): FleetReporter {
  const { clock, log } = options;
  const { store } = deps;
  const host = options.hostname;
  const coalesceMs = options.coalesceMs ?? 1000;
  const settleMs = options.settleMs ?? 100;
  const eventLimit = options.eventLimit ?? 100;
  const ttlSeconds = Math.max(1, Math.round(options.leaseDurationMs / 1000));

  let lease: string | undefined;
  let renewedAt = 0;
  /** What etcd holds under the current lease, as far as this loop knows. */
  const written = new Map<string, string>();
  let built: { node: V1Node; at: number } | undefined;
  let nodeValue: { json: string; signature: string; at: number } | undefined;
  let podRecords: { version: number; records: Map<string, string> } | undefined;

  const refreshNode = async (now: number, force: boolean) => {
    if (!force && built && now - built.at < options.updateFrequencyMs) return;
    const node = await deps.node(built?.node);
    built = { node, at: now };
    const signature = nodeSignature(node);
    if (force || !nodeValue || nodeValue.signature !== signature || now - nodeValue.at >= options.reportFrequencyMs)
      nodeValue = { json: JSON.stringify(node), signature, at: now };
  };

  const podStatusRecords = () => {
    const version = deps.podsVersion();
    if (podRecords?.version === version) return podRecords.records;
    const records = new Map<string, string>();
    const revisions: Record<string, string> = {};
    for (const pod of deps.pods()) {
      records.set(fleetKeys.status(host, pod.metadata.namespace, pod.metadata.name), JSON.stringify(pod.status ?? {}));
      const hash = pod.metadata.annotations?.[ANNOTATION.manifestHash];
      if (hash) revisions[`${pod.metadata.namespace}/${pod.metadata.name}`] = hash;
    }
    if (Object.keys(revisions).length > 0) records.set(fleetKeys.revisions(host), JSON.stringify(revisions));
    podRecords = { version, records };
    return records;
  };

  let eventCache: { signature: string; records: Map<string, string> } | undefined;
  /**
   * The recent events as records, rebuilt only when the log changed (an event added, or a repeat counted): building
   * them every round was most of an idle hollow node's CPU (bench/fleet-scale.bench.ts).
   */
  const eventRecords = () => {
    const recent = deps.events().slice(-eventLimit);
    const signature = `${recent.length}/${recent.at(-1)?.lastTimestamp}/${recent.reduce((n, e) => n + e.count, 0)}`;
    if (eventCache?.signature === signature) return eventCache.records;
    const records = new Map<string, string>();
    eventCache = { signature, records };
    for (const event of recent) {
      const { namespace, name } = event.involvedObject;
      const id = eventIds.get(event) ?? eventId(event);
      eventIds.set(event, id); // the FNV id in BigInt was most of a churning node's event cost
      const eventName = `${name}.${id}`;
      records.set(
        fleetKeys.event(host, namespace, eventName),
        JSON.stringify({
          apiVersion: "v1",
          kind: "Event",
          metadata: { name: eventName, namespace },
          ...event,
          source: { component: "kubelet", host },
        }),
      );
    }
    return records;
  };
  /** Each event's id, by event (a repeat keeps its object and its id: the fields it hashes do not change). */
  const eventIds = new WeakMap<KubeEvent, string>();

  /** A lease to write on: renewed when due, granted anew (and every record rewritten) when lost. */
  const ensureLease = async (now: number): Promise<string> => {
    if (lease && now - renewedAt >= options.updateFrequencyMs) {
      try {
        await store.keepAlive(lease);
        renewedAt = now;
      } catch (error) {
        if ((error as { code?: string }).code !== "LeaseNotFound") throw error;
        log.warn(`etcd lease of node ${host} expired while etcd was away: registering again`);
        lease = undefined;
      }
    }
    if (lease) return lease;
    const granted = await store.grantLease(ttlSeconds);
    // Records of an earlier lease (a previous run, or before an outage) are cleaned up or rewritten.
    written.clear();
    for (const prefix of [fleetKeys.statuses(host), fleetKeys.events(host), fleetKeys.revisions(host)])
      for (const { key } of (await store.list(prefix)).entries) written.set(key, "");
    lease = granted;
    renewedAt = now;
    built = undefined;
    log.info(`node ${host} registered in etcd (lease ${granted}, ${ttlSeconds}s)`);
    return granted;
  };

  /** The inputs (node record, pod records, event records) etcd holds under `lease`: the same ones need no diff. */
  let inSync: { lease: string; node: unknown; pods: unknown; events: unknown } | undefined;
  /** podsVersion() when the round last read the pods: a change after that wakes the next round at once. */
  let readVersion: number | undefined;

  const round = async () => {
    const now = clock.now();
    const id = await ensureLease(now);
    await refreshNode(now, written.size === 0 || !written.has(fleetKeys.node(host)));
    readVersion = deps.podsVersion();
    const inputs = { lease: id, node: nodeValue, pods: podStatusRecords(), events: eventRecords() };
    if (inSync && Object.entries(inputs).every(([k, v]) => inSync![k as keyof typeof inputs] === v)) return;
    const desired = new Map([[fleetKeys.node(host), nodeValue!.json], ...inputs.pods, ...inputs.events]);
    const changes: Array<{ key: string; value?: string }> = [];
    for (const [key, value] of desired) if (written.get(key) !== value) changes.push({ key, value });
    for (const key of written.keys()) if (!desired.has(key)) changes.push({ key });
    if (changes.length > 0) {
      inSync = undefined;
      try {
        await store.apply(changes, id);
      } catch (error) {
        if ((error as { code?: string }).code === "LeaseNotFound") lease = undefined;
        throw error;
      }
      for (const { key, value } of changes) value === undefined ? written.delete(key) : written.set(key, value);
    }
    inSync = inputs;
  };

  /** Waits out the coalesce window, or less when the pods change: then `settleMs` more to take in a burst. */
  const nextRound = (signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      let settling: Timer | undefined;
      const settle = () => (settling ??= clock.setTimeout(done, settleMs));
      const unsubscribe = deps.onPodsChange(settle);
      const window = clock.setTimeout(done, coalesceMs);
      function done() {
        window.cancel();
        settling?.cancel();
        unsubscribe();
        signal.removeEventListener("abort", done);
        resolve();
      }
      if (signal.aborted) return done();
      signal.addEventListener("abort", done, { once: true });
      if (readVersion !== deps.podsVersion()) settle(); // changed while the round was writing
    });

  return {
    async run(signal) {
      let failures = 0;
      while (!signal.aborted) {
        try {
          await round();
          if (failures > 0) log.info(`etcd reachable again: node ${host} and its pods' statuses are up to date`);
          failures = 0;
        } catch (error) {
          failures++;
          if (failures <= 3 || failures % 60 === 0)
            log.warn(
              `cannot write node ${host}'s status to etcd: ${(error as Error).message}; retrying (the latest state is kept)`,
            );
        }
        await nextRound(signal);
      }
    },
  };
}

/** A stable id per event (object, field, reason, message), so a repeat rewrites the same key with its count. */
function eventId(event: KubeEvent): string {
  const text = `${event.involvedObject.uid}\0${event.involvedObject.fieldPath ?? ""}\0${event.reason}\0${event.message}`;
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) hash = BigInt.asUintN(64, (hash ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n);
  return hash.toString(16).padStart(16, "0");
}
