// The writes that begin, pause and resume a fleet rollout: each one etcd transaction made only while the
// rollout's state and the pod's placement are at the revisions read (compare-and-swap), so a second
// rollout of a pod while one is under way is refused, naming it.
import type { Clock } from "../clock.ts";
import { KubeletError, type Pod } from "../api/types.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import { etcdPodKey, selectorMatches } from "../sources/etcd.ts";
import type { V1Node } from "../api/types.ts";
import { placedPod, placementKeys, type Placement } from "./fleet-apply.ts";
import { batchSizes, planBatches } from "./fleet-rollout-plan.ts";
import { listRevisions, pruneRevisions, type PodRevision, revisionKeys } from "./fleet-revisions.ts";
import {
  ACTIVE_PHASES,
  describeRollout,
  readRollout,
  type RolloutClient,
  type RolloutState,
  type RolloutStrategy,
  rolloutKeys,
  strandedCopies,
  surgeCopyDeletes,
} from "./fleet-rollout.ts";

export interface StartOptions {
  client: RolloutClient;
  clock: Clock;
  /** user@host, recorded with the revision and the rollout. */
  who: string;
  strategy: RolloutStrategy;
  changeCause?: string;
  /** A paused rollout is replaced rather than refused (undo). */
  supersede?: boolean;
}

export type StartResult =
  | { started: RolloutState }
  | { unchanged: { revision: number; hash: string } }
  | { refused: string };

const parse = <T>(text: string | undefined): T | undefined =>
  text === undefined ? undefined : (JSON.parse(text) as T);

/** The nodes a placement targets now: the named ones, or the registered nodes its selector matches. */
export async function placementNodes(client: RolloutClient, placement: Placement): Promise<string[]> {
  if ("nodes" in placement) return [...placement.nodes];
  const { entries } = await client.list(fleetKeys.nodes);
  return entries
    .map((e) => parse<V1Node>(e.value))
    .filter(
      (n) =>
        n?.metadata?.name &&
        selectorMatches(placement.selector, { ...n.metadata.labels, "kubernetes.io/hostname": n.metadata.name }),
    )
    .map((n) => n!.metadata!.name!)
    .sort();
}

/** The pod as placed now (the every-node key, or the first named node's key). */
async function placedNow(client: RolloutClient, placement: Placement, namespace: string, name: string) {
  const key =
    "nodes" in placement ? etcdPodKey(placement.nodes[0]!, namespace, name) : placementKeys.daemon(namespace, name);
  return parse<Pod>((await client.get(key)).entry?.value);
}

/**
 * Begins a rollout of `pod` (as read from a manifest) over the nodes its placement names: records the revision it
 * replaces (when none is recorded yet) and the new one, the placement's new hash, and the rollout's state, in one
 * transaction. Refused while another rollout of the pod is under way, or when the pod was not placed.
 */
export async function startRollout(options: StartOptions, input: Pod): Promise<StartResult> {
  const { client, clock } = options;
  const { namespace, name } = input.metadata;
  const stateKey = rolloutKeys.rollout(namespace, name);
  const placementKey = placementKeys.placement(namespace, name);
  const [{ state, modRevision }, placedEntry] = await Promise.all([
    readRollout(client, namespace, name),
    client.get(placementKey),
  ]);
  if (state && ACTIVE_PHASES.includes(state.phase) && !(options.supersede && state.phase === "Paused"))
    return {
      refused: `${describeRollout(state)} is under way: kubelet fleet rollout status ${name} follows it; pause, resume or undo it first`,
    };
  const placement = parse<Placement>(placedEntry.entry?.value);
  if (!placement)
    return {
      refused: `pod ${namespace}/${name} is not placed: no placement under ${placementKey} (place it with kubelet fleet apply first)`,
    };
  const target = "nodes" in placement ? { nodes: placement.nodes } : { selector: placement.selector };
  const next = placedPod(input, target);
  const revisions = await listRevisions(client, namespace, name);
  const changes: Array<{ key: string; value?: string }> = [];
  const now = clock.now();
  let current = [...revisions].reverse().find((r) => r.hash === placement.hash);
  if (!current) {
    const pod = await placedNow(client, placement, namespace, name);
    if (!pod) return { refused: `pod ${namespace}/${name} is placed but its manifest is missing from etcd` };
    current = {
      revision: (revisions.at(-1)?.revision ?? 0) + 1,
      hash: placement.hash,
      pod,
      createdAt: new Date(now).toISOString(),
      createdBy: "kubelet fleet apply",
    };
    changes.push({ key: revisionKeys.revision(namespace, name, current.revision), value: JSON.stringify(current) });
  }
  if (next.hash === placement.hash) return { unchanged: { revision: current.revision, hash: current.hash } };
  const annotated = input.metadata.annotations?.["kubernetes.io/change-cause"];
  const revision: PodRevision = {
    revision: Math.max(current.revision, revisions.at(-1)?.revision ?? 0) + 1,
    hash: next.hash,
    pod: next.pod,
    createdAt: new Date(now).toISOString(),
    createdBy: options.who,
    ...((options.changeCause ?? annotated) ? { changeCause: options.changeCause ?? annotated } : {}),
  };
  changes.push({ key: revisionKeys.revision(namespace, name, revision.revision), value: JSON.stringify(revision) });
  changes.push(
    ...pruneRevisions(
      [...revisions, revision],
      options.strategy.revisionHistoryLimit,
      [current.revision, revision.revision],
      namespace,
      name,
    ),
  );
  const nodes = await placementNodes(client, placement);
  // A paused rollout superseded (undo) mid-surge: copies not yet serving go with it; copies serving (the replace step)
  // and strays of an earlier rollout stay until the new rollout moves their nodes.
  const superseded = state && options.supersede && state.phase === "Paused";
  const strays = state ? (superseded ? strandedCopies(state) : { ...state.strays }) : {};
  if (superseded && state.surgeStep === "copy") changes.push(...surgeCopyDeletes(state));
  const sizes = batchSizes(options.strategy.maxUnavailable, options.strategy.maxSurge, nodes.length);
  const started: RolloutState = {
    namespace,
    name,
    revision: revision.revision,
    hash: revision.hash,
    fromRevision: current.revision,
    fromHash: current.hash,
    updateRevision: revision.revision,
    updateHash: revision.hash,
    target,
    ...("selector" in target ? { daemonHash: current.hash } : {}),
    batches: planBatches(nodes, sizes.unavailable + sizes.surge),
    batch: 0,
    written: false,
    ...(sizes.surge > 0 ? { surge: sizes.surge } : {}),
    ...(Object.keys(strays).length > 0 ? { strays } : {}),
    phase: "Progressing",
    strategy: options.strategy,
    startedAt: now,
    startedBy: options.who,
    updatedAt: now,
    results: [],
  };
  changes.push({ key: stateKey, value: JSON.stringify(started) });
  changes.push({ key: placementKey, value: JSON.stringify({ ...placement, hash: revision.hash }) });
  const written = await client.applyIf(
    [
      { key: stateKey, modRevision },
      { key: placementKey, modRevision: placedEntry.entry?.modRevision ?? 0 },
    ],
    changes,
  );
  if (!written) {
    const rival = (await readRollout(client, namespace, name)).state;
    return {
      refused:
        rival && ACTIVE_PHASES.includes(rival.phase)
          ? `${describeRollout(rival)} began first: kubelet fleet rollout status ${name} follows it`
          : `Operation cannot be fulfilled on pods "${namespace}/${name}": the object has been modified (another kubelet fleet command wrote its placement or rollout first); nothing written`,
    };
  }
  return { started };
}

/** Pauses a rollout under way (its driver stops at its next read); resolves to the paused state. */
export async function pauseRollout(client: RolloutClient, namespace: string, name: string): Promise<RolloutState> {
  const { state, modRevision } = await readRollout(client, namespace, name);
  if (!state) throw new KubeletError("NotFound", `no rollout of ${namespace}/${name} recorded`);
  if (state.phase === "Paused") return state;
  if (state.phase !== "Progressing" && state.phase !== "RollingBack")
    throw new KubeletError("NotRunning", `${describeRollout(state)} has ended: nothing to pause`);
  const paused: RolloutState = {
    ...state,
    phase: "Paused",
    pausedPhase: state.phase,
    reason: "Paused",
    message: "paused by kubelet fleet rollout pause",
  };
  const key = rolloutKeys.rollout(namespace, name);
  if (!(await client.applyIf([{ key, modRevision }], [{ key, value: JSON.stringify(paused) }])))
    return pauseRollout(client, namespace, name);
  return paused;
}

/** Marks a paused rollout to go on in the phase it was paused in (the driver is started next). */
export async function unpauseRollout(client: RolloutClient, namespace: string, name: string): Promise<RolloutState> {
  const { state, modRevision } = await readRollout(client, namespace, name);
  if (!state) throw new KubeletError("NotFound", `no rollout of ${namespace}/${name} recorded`);
  if (state.phase !== "Paused") return state;
  const resumed: RolloutState = {
    ...state,
    phase: state.pausedPhase ?? "Progressing",
    pausedPhase: undefined,
    reason: undefined,
    message: undefined,
  };
  const key = rolloutKeys.rollout(namespace, name);
  if (!(await client.applyIf([{ key, modRevision }], [{ key, value: JSON.stringify(resumed) }])))
    return unpauseRollout(client, namespace, name);
  return resumed;
}
