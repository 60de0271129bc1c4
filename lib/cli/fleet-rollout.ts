// The fleet rollout controller: a changed pod taken across the nodes it is placed on in batches, each
// batch waited on in the statuses the nodes report to etcd, a failed batch rolled back (or paused).
//
// Decisions: the rollout's state (revision, batches, the batch in hand, phase) is one etcd key written
// only by compare-and-swap on the revision the writer last read, and the process running this code is
// only its driver: it holds the rollout through a lease (gone within DRIVER_TTL of its death), so a
// killed CLI leaves a rollout that `status` shows and `resume` takes over from the batch it was in.
// The nodes' keys are written against the placement record's revision as `fleet apply` writes them, so
// an apply of the same pod during a rollout is seen and the rollout paused rather than overwritten.
// A pod placed by selector is read by every node from one key: each node of a done batch gets the new
// pod under its own key (which wins over the every-node key), and the every-node key takes the new pod
// only when the rollout completes; a node that comes back, or joins, reads the current revision.
import { hostname, userInfo } from "node:os";
import type { Clock } from "../clock.ts";
import { KubeletError, type V1Node, type V1PodStatus } from "../api/types.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { etcdPodKey } from "../sources/etcd.ts";
import { placementKeys, type Placement, type PlacementTarget } from "./fleet-apply.ts";
import {
  baselineOf,
  judgeNode,
  restartedContainers,
  surgeCopy,
  surgeName,
  type NodeBaseline,
  type NodeRecords,
  type NodeVerdict,
} from "./fleet-rollout-plan.ts";
import { listRevisions, type PodRevision } from "./fleet-revisions.ts";

export type RolloutClient = Pick<
  EtcdClient,
  "get" | "list" | "applyIf" | "grantLease" | "keepAlive" | "leaseTimeToLive" | "revokeLease"
>;

export interface RolloutStrategy {
  maxUnavailable: string;
  maxSurge: string;
  minReadySeconds: number;
  progressDeadlineSeconds: number;
  onFailure: "rollback" | "pause";
  revisionHistoryLimit: number;
}

export type RolloutPhase = "Progressing" | "Paused" | "RollingBack" | "Complete" | "RolledBack" | "Failed";

/** One batch as it ended. */
export interface BatchResult {
  /** 1-based, of `of` batches, in the phase it ran in. */
  index: number;
  of: number;
  phase: "Progressing" | "RollingBack";
  nodes: number;
  ready: number;
  /** Node → why it was not waited on (down, NotReady, cordoned). */
  unavailable: Record<string, string>;
  result: "Ready" | "Failed";
  reason?: string;
  seconds: number;
}

/** What /registry/rollouts/<namespace>/<name> holds. */
export interface RolloutState {
  namespace: string;
  name: string;
  /** The revision the nodes are being moved to now (while rolling back: the one rolled back to). */
  revision: number;
  hash: string;
  /** The revision they are moved from. */
  fromRevision: number;
  fromHash: string;
  /** The revision the rollout was started for, and its hash (what the placement record holds until a rollback ends). */
  updateRevision: number;
  updateHash: string;
  target: PlacementTarget;
  /** Hash of the pod the every-node key holds (selector placements): nodes running it need no key of their own. */
  daemonHash?: string;
  batches: string[][];
  /** Index of the batch in hand; batches.length once all are done. */
  batch: number;
  /** The batch's keys are written. */
  written: boolean;
  /**
   * --max-surge as nodes per batch (the batch's first ones): there the pod the batch moves to starts beside the one it
   * replaces, forward and while rolling back.
   */
  surge?: number;
  /**
   * Where the batch's surge nodes are: "copy", their surge copy (the new pod under surgeName) written beside the old
   * pod; "replace", the copy Ready and the pod's own key given the new pod, the copy removed once that is Ready.
   */
  surgeStep?: "copy" | "replace";
  /**
   * Node → the name of a Ready surge copy left serving on it because its batch failed (or its rollout was undone)
   * after the node's own key took the new pod: removed when a batch holding the node ends Ready, or at the end.
   */
  strays?: Record<string, string>;
  baseline?: Record<string, NodeBaseline>;
  batchStartedAt?: number;
  phase: RolloutPhase;
  /** The phase `resume` returns to. */
  pausedPhase?: "Progressing" | "RollingBack";
  reason?: string;
  message?: string;
  strategy: RolloutStrategy;
  startedAt: number;
  startedBy: string;
  updatedAt: number;
  results: BatchResult[];
  driver?: { lease: string; pid: number; host: string };
}

export const rolloutKeys = {
  prefix: "/registry/rollouts/",
  rollout: (namespace: string, name: string) => `/registry/rollouts/${namespace}/${name}`,
  cordon: (node: string) => `/registry/cordons/${node}`,
  cordons: "/registry/cordons/",
};

/** Phases in which a rollout holds the pod: another is refused. */
export const ACTIVE_PHASES: RolloutPhase[] = ["Progressing", "RollingBack", "Paused"];

/** Seconds a driver's lease outlives it. */
export const DRIVER_TTL = 10;

/** etcd's default --max-txn-ops is 128: node keys are written this many per transaction. */
const CHUNK = 100;

/** Node records read at once. */
const READ_CONCURRENCY = 32;

export function whoAmI(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `uid ${process.getuid?.() ?? "?"}@${hostname()}`;
  }
}

const parse = <T>(text: string | undefined): T | undefined => {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
};

/** The rollout state and the revision it was read at (0: none). */
export async function readRollout(client: Pick<EtcdClient, "get">, namespace: string, name: string) {
  const { entry } = await client.get(rolloutKeys.rollout(namespace, name));
  return { state: parse<RolloutState>(entry?.value), modRevision: entry?.modRevision ?? 0 };
}

/** True while the driver's lease lives. */
export async function driverAlive(client: Pick<EtcdClient, "leaseTimeToLive">, state: RolloutState) {
  if (!state.driver) return false;
  const ttl = await client.leaseTimeToLive(state.driver.lease).catch(() => undefined);
  return ttl !== undefined && ttl.ttl > 0;
}

/** "rollout of default/web to revision 3 (batch 2/10, Progressing, started by ann@ops at …)". */
export function describeRollout(state: RolloutState): string {
  const batch = Math.min(state.batch + 1, state.batches.length);
  return `rollout of ${state.namespace}/${state.name} to revision ${state.updateRevision} (${state.phase}, batch ${batch}/${state.batches.length}, started by ${state.startedBy} at ${new Date(state.startedAt).toISOString()})`;
}

/**
 * The batch's surge nodes: of its first `surge` nodes, those still to be moved (forward or back): a node already at
 * the revision, or with a stray copy serving, needs no copy of its own.
 */
export function surgeNodesOf(state: RolloutState): string[] {
  const active = ["Progressing", "RollingBack", "Paused"].includes(state.phase);
  if (!state.surge || !active) return [];
  return (state.batches[state.batch] ?? [])
    .slice(0, state.surge)
    .filter((node) => !state.baseline?.[node]?.atTarget && !state.strays?.[node]);
}

/** The deletes of the batch's surge copies (none unless they were written). */
export function surgeCopyDeletes(state: RolloutState): Array<{ key: string }> {
  if (!state.surgeStep) return [];
  return surgeNodesOf(state).map((node) => ({
    key: etcdPodKey(node, state.namespace, surgeName(state.name, state.hash)),
  }));
}

/**
 * The batch's surge copies made strays: in the replace step they are the surge nodes' Ready pods (the nodes' own keys
 * hold the pod the batch moved to, maybe failing), so they stay until the node is moved again.
 */
export function strandedCopies(state: RolloutState): Record<string, string> {
  if (state.surgeStep !== "replace") return { ...state.strays };
  const copy = surgeName(state.name, state.hash);
  return { ...state.strays, ...Object.fromEntries(surgeNodesOf(state).map((node) => [node, copy])) };
}

/** The deletes of the strays on `nodes`, and the strays left. */
function straysOff(state: RolloutState, nodes: string[]) {
  const on = new Set(nodes);
  const strays = Object.entries(state.strays ?? {});
  return {
    deletes: strays.filter(([n]) => on.has(n)).map(([n, copy]) => ({ key: etcdPodKey(n, state.namespace, copy) })),
    left: strays.some(([n]) => !on.has(n)) ? Object.fromEntries(strays.filter(([n]) => !on.has(n))) : undefined,
  };
}

/**
 * An etcd call that may succeed when made again: it timed out, no member answered, or the client's circuit breaker
 * (etcd3's, open for a while after calls to a member failed) refused to make it.
 */
export function transientEtcdError(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: string };
  return code === "Unavailable" || /\b(DEADLINE_EXCEEDED|UNAVAILABLE)\b|circuit breaker is open/.test(message ?? "");
}

/** One node's records for one pod, read in one round. */
async function readNode(
  client: RolloutClient,
  node: string,
  namespace: string,
  name: string,
  cordoned: Set<string>,
): Promise<NodeRecords> {
  const [record, revisions, status] = await Promise.all([
    client.get(fleetKeys.node(node)),
    client.get(fleetKeys.revisions(node)),
    client.get(fleetKeys.status(node, namespace, name)),
  ]);
  return {
    node: parse<V1Node>(record.entry?.value),
    cordoned: cordoned.has(node),
    running: parse<Record<string, string>>(revisions.entry?.value)?.[`${namespace}/${name}`],
    status: parse<V1PodStatus>(status.entry?.value),
  };
}

/** Every node's records, READ_CONCURRENCY at a time. */
export async function readNodes(
  client: RolloutClient,
  nodes: string[],
  namespace: string,
  name: string,
): Promise<Map<string, NodeRecords>> {
  const cordoned = new Set(
    (await client.list(rolloutKeys.cordons)).entries.map((e) => e.key.slice(rolloutKeys.cordons.length)),
  );
  const out = new Map<string, NodeRecords>();
  let next = 0;
  const reader = async () => {
    for (let i = next++; i < nodes.length; i = next++)
      out.set(nodes[i]!, await readNode(client, nodes[i]!, namespace, name, cordoned));
  };
  await Promise.all(Array.from({ length: READ_CONCURRENCY }, reader));
  return out;
}

export interface DriverOptions {
  client: RolloutClient;
  clock: Clock;
  /** Between two reads of the batch's nodes (default 1 s). */
  pollMs?: number;
  /** Told each time the state changes (a batch starts or ends, the phase changes) and on every poll. */
  onProgress?(state: RolloutState, verdicts?: Map<string, NodeVerdict>): void;
  signal?: AbortSignal;
}

/**
 * Drives the rollout of namespace/name from where its state in etcd says it is until it completes, rolls back,
 * fails, is paused, or another driver takes it; resolves to its last state. Throws "Conflict" when it cannot take
 * the rollout (another live driver holds it).
 */
export async function driveRollout(options: DriverOptions, namespace: string, name: string): Promise<RolloutState> {
  const { client, clock } = options;
  const pollMs = options.pollMs ?? 1000;
  const stateKey = rolloutKeys.rollout(namespace, name);
  const placementKey = placementKeys.placement(namespace, name);
  let { state, modRevision } = await readRollout(client, namespace, name);
  if (!state) throw new KubeletError("NotFound", `no rollout of ${namespace}/${name} recorded under ${stateKey}`);
  if (!["Progressing", "RollingBack"].includes(state.phase)) return state;
  if (state.driver && (await driverAlive(client, state)))
    throw new KubeletError(
      "Conflict",
      `${describeRollout(state)} is driven by pid ${state.driver.pid} on ${state.driver.host}; kubelet fleet rollout status ${name} follows it`,
    );
  let lease = await client.grantLease(DRIVER_TTL);
  const revisions = new Map<number, PodRevision>();
  const revisionOf = async (n: number) => {
    if (!revisions.has(n)) for (const r of await listRevisions(client, namespace, name)) revisions.set(r.revision, r);
    const found = revisions.get(n);
    if (!found) throw new KubeletError("NotFound", `revision ${n} of ${namespace}/${name} is not in etcd`);
    return found;
  };

  /** Since when etcd calls fail with transient errors (undefined: the last step got through). */
  let troubleSince: number | undefined;
  /** Writes the state if nobody else wrote it since it was read; false when someone did. */
  const save = async (next: RolloutState, extra: Array<{ key: string; value?: string }> = []) => {
    next.updatedAt = clock.now();
    const value = JSON.stringify(next);
    if (!(await client.applyIf([{ key: stateKey, modRevision }], [{ key: stateKey, value }, ...extra]))) return false;
    const { entry } = await client.get(stateKey);
    if (entry?.value !== value) return false;
    state = next;
    modRevision = entry.modRevision;
    troubleSince = undefined;
    options.onProgress?.(state);
    return true;
  };
  /** Re-reads the state after a refused write: still ours to drive, or not. */
  const reload = async () => {
    const read = await readRollout(client, namespace, name);
    if (!read.state) return false;
    state = read.state;
    modRevision = read.modRevision;
    return state.driver?.lease === lease && ["Progressing", "RollingBack"].includes(state.phase);
  };

  const claimed = { ...state, driver: { lease, pid: process.pid, host: hostname() }, batchStartedAt: clock.now() };
  if (!(await save(claimed))) {
    await client.revokeLease(lease).catch(() => {});
    throw new KubeletError("Conflict", `${describeRollout(state)} was taken by another command first`);
  }

  // The placement as the rollout left it: a write of it by anyone else (fleet apply, delete) stops the rollout.
  const placement = await client.get(placementKey);
  const placed = placement.entry?.modRevision ?? 0;
  /** Writes node keys in transactions of CHUNK, each only while the state and the placement are as read. */
  const writeKeys = async (changes: Array<{ key: string; value?: string }>) => {
    for (let i = 0; i < changes.length; i += CHUNK) {
      const guard = [
        { key: stateKey, modRevision },
        { key: placementKey, modRevision: placed },
      ];
      if (!(await client.applyIf(guard, changes.slice(i, i + CHUNK)))) return false;
    }
    return true;
  };
  /** The key changes that make `nodes` run revision `r`. */
  const keysFor = (nodes: string[], r: PodRevision) =>
    nodes.map((node) => {
      const key = etcdPodKey(node, namespace, name);
      // A selector placement's node running what the every-node key holds needs no key of its own.
      return "selector" in state!.target && r.hash === state!.daemonHash
        ? { key }
        : { key, value: JSON.stringify(r.pod) };
    });

  /** After a refused write of node keys: true to go on (the state moved: read again), false to stop. */
  const refused = async () => {
    const before = modRevision;
    if (!(await reload())) return false;
    if (modRevision !== before) return true;
    // The state is as it was: the placement moved on under the rollout.
    await halt("Paused", "PlacementChanged", placementChanged);
    return false;
  };

  const placementChanged = `the placement of ${namespace}/${name} was changed by another command (kubelet fleet apply or delete) during the rollout; check it, then kubelet fleet rollout resume ${name} or undo ${name}`;
  const halt = async (phase: RolloutPhase, reason: string, message: string) => {
    const next = { ...state!, phase, reason, message };
    if (phase === "Paused") next.pausedPhase = state!.phase as "Progressing" | "RollingBack";
    return save(next);
  };

  // The lease is kept alive every second apart from the batches' work, which under load can take longer than
  // its TTL; one lost anyway (etcd away longer than DRIVER_TTL) is granted anew and the rollout claimed again,
  // unless another driver took it meanwhile.
  const keeping = new AbortController();
  let lost = false;
  const keeper = (async () => {
    while (!keeping.signal.aborted) {
      await clock.sleep(1000, keeping.signal).catch(() => {});
      if (keeping.signal.aborted) break;
      await client.keepAlive(lease).catch((error: { code?: string }) => {
        if (error.code === "LeaseNotFound") lost = true;
      });
    }
  })();
  const reclaim = async () => {
    lost = false;
    lease = await client.grantLease(DRIVER_TTL);
    return save({ ...state!, driver: { lease, pid: process.pid, host: hostname() } });
  };
  try {
    if (parse<Placement>(placement.entry?.value)?.hash !== state.updateHash) {
      await halt("Paused", "PlacementChanged", placementChanged);
      return state;
    }
    const readySince = new Map<string, number>();
    while (!options.signal?.aborted) {
      try {
        if (lost && !(await reclaim())) break;
        const current = state!;
        if (!["Progressing", "RollingBack"].includes(current.phase)) break;
        const to = await revisionOf(current.revision);
        if (current.batch >= current.batches.length) {
          if (!(await finish(current, to)) && !(await refused())) break;
          continue;
        }
        const nodes = current.batches[current.batch]!;
        if (!current.baseline) {
          const records = await readNodes(client, nodes, namespace, name);
          const baseline = Object.fromEntries(nodes.map((n) => [n, baselineOf(records.get(n)!, current.hash)]));
          if (!(await save({ ...current, baseline, batchStartedAt: clock.now() }))) if (!(await reload())) break;
          readySince.clear();
          continue;
        }
        // Surge nodes get the new pod as a copy beside the old one first; the rest of the batch is replaced in place.
        const surging = surgeNodesOf(current);
        const inPlace =
          surging.length > 0 && current.surgeStep !== "replace" ? nodes.filter((n) => !surging.includes(n)) : nodes;
        if (!current.written) {
          const copies = surging.map((node) => ({
            key: etcdPodKey(node, namespace, surgeName(name, to.hash)),
            value: JSON.stringify(surgeCopy(to.pod, to.hash)),
          }));
          if (!(await writeKeys([...copies, ...keysFor(inPlace, to)]))) {
            if (await refused()) continue;
            break;
          }
          const step = surging.length > 0 ? { surgeStep: "copy" as const } : {};
          if (!(await save({ ...current, written: true, ...step }))) if (!(await reload())) break;
          continue;
        }
        // The batch is written: judge its nodes (a surge node by its copy until the copy is Ready).
        const from = await revisionOf(current.fromRevision).catch(() => undefined);
        const restarted = restartedContainers(from?.pod, to.pod);
        const records = await readNodes(client, inPlace, namespace, name);
        const verdicts = new Map(
          inPlace.map((n) => [n, judgeNode(records.get(n)!, current.hash, restarted, current.baseline?.[n])]),
        );
        if (inPlace.length < nodes.length) {
          const copyName = surgeName(name, to.hash);
          const copies = await readNodes(client, surging, namespace, copyName);
          const all = to.pod.spec.containers.map((c) => c.name);
          for (const n of surging) verdicts.set(n, judgeNode(copies.get(n)!, current.hash, all, undefined));
        }
        options.onProgress?.(current, verdicts);
        const now = clock.now();
        for (const [node, v] of verdicts)
          if (v.state !== "ready") readySince.delete(node);
          else if (!readySince.has(node)) readySince.set(node, now);
        const failed = [...verdicts].find(([, v]) => v.state === "failed");
        const waiting = [...verdicts].filter(
          ([node, v]) =>
            v.state === "pending" ||
            (v.state === "ready" && now - readySince.get(node)! < current.strategy.minReadySeconds * 1000),
        );
        const elapsed = now - (current.batchStartedAt ?? now);
        const overdue = elapsed > current.strategy.progressDeadlineSeconds * 1000;
        if (failed || waiting.length === 0 || overdue) {
          const unavailable = Object.fromEntries(
            [...verdicts].flatMap(([n, v]) => (v.state === "unavailable" ? [[n, v.reason]] : [])),
          );
          const ok = !failed && waiting.length === 0;
          const reason = failed
            ? (failed[1] as { reason: string }).reason
            : ok
              ? undefined
              : "ProgressDeadlineExceeded";
          const message = failed
            ? `node ${failed[0]}: ${(failed[1] as { message: string }).message}`
            : ok
              ? undefined
              : `batch ${current.batch + 1} not Ready within --progress-deadline ${current.strategy.progressDeadlineSeconds}s: node ${waiting[0]![0]}: ${(waiting[0]![1] as { reason?: string }).reason ?? "not ready long enough"}`;
          const result: BatchResult = {
            index: current.batch + 1,
            of: current.batches.length,
            phase: current.phase as "Progressing" | "RollingBack",
            nodes: nodes.length,
            ready: [...verdicts.values()].filter((v) => v.state === "ready").length,
            unavailable,
            result: ok ? "Ready" : "Failed",
            ...(reason ? { reason } : {}),
            seconds: Math.round(elapsed / 100) / 10,
          };
          if (ok && current.surgeStep === "copy") {
            // The copies are Ready: the surge nodes' own keys take the new pod, the copies serving while it restarts.
            if (!(await writeKeys(keysFor(surging, to)))) {
              if (await refused()) continue;
              break;
            }
            readySince.clear();
            if (!(await save({ ...current, surgeStep: "replace" }))) if (!(await reload())) break;
            continue;
          }
          // The batch is done: its surge copies go, and the strays on its nodes (each node runs the revision, Ready).
          // It failed: copies that never replaced the old pod go; copies already serving stay, as strays.
          const strays = ok ? straysOff(current, nodes) : { deletes: [], left: strandedCopies(current) };
          const copies = ok || current.surgeStep === "copy" ? surgeCopyDeletes(current) : [];
          const deletes = [...copies, ...strays.deletes];
          if (deletes.length > 0 && !(await writeKeys(deletes))) {
            if (await refused()) continue;
            break;
          }
          const next: RolloutState = {
            ...current,
            results: [...current.results, result],
            surgeStep: undefined,
            strays: strays.left && Object.keys(strays.left).length > 0 ? strays.left : undefined,
          };
          if (ok) Object.assign(next, { batch: current.batch + 1, written: false, baseline: undefined });
          else Object.assign(next, failure(next, reason!, message!));
          if (!(await save(next))) if (!(await reload())) break;
          continue;
        }
        await clock.sleep(pollMs, options.signal).catch(() => {});
        // A pause, an undo or another driver shows as a newer state.
        const seen = await readRollout(client, namespace, name);
        if (seen.modRevision !== modRevision && !(await reload())) break;
      } catch (error) {
        // A call that timed out or found no member (etcd slow under load, a member restarting) is tried again at the
        // next poll, from the state as etcd has it (a write that landed before its answer was lost included), until
        // etcd has been away as long as a batch's --progress-deadline.
        if (!transientEtcdError(error)) throw error;
        troubleSince ??= clock.now();
        if (clock.now() - troubleSince > state!.strategy.progressDeadlineSeconds * 1000) throw error;
        await clock.sleep(pollMs, options.signal).catch(() => {});
        if ((await reload().catch(() => true)) === false) break;
        continue;
      }
      troubleSince = undefined;
    }
  } finally {
    keeping.abort();
    await keeper;
    await client.revokeLease(lease).catch(() => {});
  }
  return state!;

  /** A failed batch: rolled back, paused, or (a failed rollback) Failed. */
  function failure(next: RolloutState, reason: string, message: string): Partial<RolloutState> {
    if (next.phase === "RollingBack")
      return { phase: "Failed", reason, message: `rollback to revision ${next.revision} failed: ${message}` };
    if (next.strategy.onFailure === "pause") {
      // Its copies are gone (or strays): a resume writes the batch again.
      const again = next.surge ? { written: false, baseline: undefined } : {};
      return { phase: "Paused", pausedPhase: "Progressing", reason, message, ...again };
    }
    // Back over every batch that got the new pod, the failed one first.
    const done = next.batches.slice(0, next.batch + 1).reverse();
    return {
      phase: "RollingBack",
      reason,
      message,
      revision: next.fromRevision,
      hash: next.fromHash,
      fromRevision: next.revision,
      fromHash: next.hash,
      batches: done,
      batch: 0,
      written: false,
      baseline: undefined,
    };
  }

  /** All batches done: the every-node key takes the pod, the nodes' own keys go, the phase ends. */
  async function finish(current: RolloutState, to: PodRevision): Promise<boolean> {
    const placed = await client.get(placementKey);
    const placement = parse<Placement>(placed.entry?.value);
    // Strays left (of batches a rollback did not take again): each node's own key is Ready at the revision by now.
    const strays = straysOff(current, Object.keys(current.strays ?? {})).deletes;
    if (strays.length > 0 && !(await writeKeys(strays))) return false;
    if ("selector" in current.target) {
      const nodes = current.batches.flat();
      // The every-node key first, in a transaction of its own: a node's watches see it (at its revision) before the
      // delete of the node's own key (at a later one). In one transaction the two events share a revision, and a node
      // could see its own key go before the every-node key change: the old pod for a moment, a restart twice.
      if (!(await writeKeys([{ key: placementKeys.daemon(namespace, name), value: JSON.stringify(to.pod) }])))
        return false;
      if (!(await writeKeys(nodes.map((n) => ({ key: etcdPodKey(n, namespace, name) }))))) return false;
    }
    const rollingBack = current.phase === "RollingBack";
    return save(
      {
        ...current,
        phase: rollingBack ? "RolledBack" : "Complete",
        strays: undefined,
        daemonHash: "selector" in current.target ? to.hash : undefined,
        ...(rollingBack ? {} : { reason: undefined, message: undefined }),
      },
      placement ? [{ key: placementKey, value: JSON.stringify({ ...placement, hash: to.hash }) }] : [],
    );
  }
}
