// `kubelet fleet apply` and `kubelet fleet delete`: pods placed on named nodes (one key per pod under
// /registry/hosts/<node>/pods/) or on every node a selector matches (/registry/daemons/), each write
// one etcd transaction with the pod's placement record, after the file has passed `kubelet validate`.
//
// Decision: /registry/placements/<namespace>/<name> records where `apply` put a pod and the manifest's
// hash, so a later apply moves it (the keys of nodes it leaves are deleted in the same transaction) and
// delete and describe find it with one read instead of listing every host. The transaction is made
// only while each placement record is still at the revision read (compare-and-swap): two applies or
// deletes of one pod at once cannot both move it from the same place and leave a copy on a node
// nothing records; the one that lost reads again and retries.
import { readManifestFile } from "../api/manifest-files.ts";
import { DEFAULT_MAX_MANIFEST_BYTES } from "../api/manifest-text.ts";
import { readManifests } from "../api/manifest.ts";
import { podSpecHash } from "../api/hash.ts";
import { ANNOTATION, KubeletError, type Pod } from "../api/types.ts";
import { ETCD_DAEMONS, etcdPodKey } from "../sources/etcd.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { validateCommand } from "./validate.ts";

/** Where `apply` places a pod: on these nodes, or on every node whose labels match (an empty selector: all). */
export type PlacementTarget = { nodes: string[] } | { selector: Record<string, string> };

/** What /registry/placements/<namespace>/<name> holds. */
export type Placement = PlacementTarget & { hash: string };

export const placementKeys = {
  prefix: "/registry/placements/",
  placement: (namespace: string, name: string) => `/registry/placements/${namespace}/${name}`,
  daemon: (namespace: string, name: string) => `${ETCD_DAEMONS}${namespace}/${name}`,
};

/** etcd's default --max-txn-ops is 128: a change bigger than this would not be one transaction. */
const MAX_OPS = 100;

export interface PlacementOptions {
  client: Pick<EtcdClient, "get" | "applyIf">;
  dryRun: boolean;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

/** The etcd keys a placement writes the pod to. */
export function placedKeys(namespace: string, name: string, target: PlacementTarget): string[] {
  return "nodes" in target
    ? target.nodes.map((node) => etcdPodKey(node, namespace, name))
    : [placementKeys.daemon(namespace, name)];
}

/** "on node-a, node-b" or "on every node with gpu=yes". */
export function describeTarget(target: PlacementTarget): string {
  if ("nodes" in target) return `on ${target.nodes.join(", ")}`;
  const labels = Object.entries(target.selector).map(([k, v]) => `${k}=${v}`);
  return labels.length ? `on every node with ${labels.join(",")}` : "on every node";
}

/** The pod as it is written: the manifest with its defaults, without the reader's bookkeeping. */
export function placedPod(pod: Pod, target: PlacementTarget): { pod: Pod; hash: string } {
  const annotations = { ...pod.metadata.annotations };
  for (const key of [
    ANNOTATION.source,
    ANNOTATION.origin,
    ANNOTATION.document,
    ANNOTATION.hash,
    ANNOTATION.manifestHash,
  ])
    delete annotations[key];
  const { uid: _uid, ...metadata } = pod.metadata;
  const spec =
    "selector" in target && Object.keys(target.selector).length > 0
      ? { ...pod.spec, nodeSelector: { ...pod.spec.nodeSelector, ...target.selector } }
      : pod.spec;
  const placed = { ...pod, metadata: { ...metadata, annotations }, spec } as Pod;
  const hash = podSpecHash(placed);
  placed.metadata.annotations = { ...annotations, [ANNOTATION.manifestHash]: hash };
  return { pod: placed, hash };
}

/** A pod's placement record and its revision (0: there is none), which the write is made against. */
async function placementOf(client: PlacementOptions["client"], namespace: string, name: string) {
  const key = placementKeys.placement(namespace, name);
  const { entry } = await client.get(key);
  return {
    placement: entry ? (JSON.parse(entry.value) as Placement) : undefined,
    read: { key, modRevision: entry?.modRevision ?? 0 },
  };
}

/** What one command writes, against the placement records it read, and what it prints once written. */
interface Change {
  changes: Array<{ key: string; value?: string }>;
  read: Array<{ key: string; modRevision: number }>;
  lines: string[];
}

/** Placement records read and written again before giving up: each retry follows another command's write. */
const ATTEMPTS = 5;

/**
 * Writes what `plan` reads and builds as one transaction while the records it read are unchanged, planning again
 * when another command wrote them first; with --dry-run only says what it would write.
 */
async function commit(options: PlacementOptions, plan: () => Promise<Change>, pods: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const { changes, read, lines } = await plan();
    if (changes.length > MAX_OPS)
      throw new KubeletError(
        "TooManyChanges",
        `${changes.length} etcd writes exceed one transaction (${MAX_OPS}): apply fewer pods or nodes at a time`,
      );
    if (options.dryRun || (await options.client.applyIf(read, changes))) {
      for (const line of lines) options.out.write(line);
      if (options.dryRun) options.out.write(`dry run: ${changes.length} etcd writes not made\n`);
      return;
    }
    if (attempt === ATTEMPTS)
      throw new KubeletError(
        "Conflict",
        `Operation cannot be fulfilled on pods ${pods}: the object has been modified; please apply your changes to the latest version and try again (another kubelet fleet apply or delete wrote its placement first, ${ATTEMPTS} times; nothing written)`,
      );
  }
}

/**
 * True when `file` passes `kubelet validate`; else its report and "nothing written" (naming `command`) go to `err`.
 */
export async function manifestValid(
  file: string,
  options: { allowPrivileged: boolean; maxBytes?: number; err: NodeJS.WritableStream; command: string },
): Promise<boolean> {
  const report: string[] = [];
  const sink = { write: (text: string) => report.push(text) > 0 } as unknown as NodeJS.WritableStream;
  const code = await validateCommand([file], {
    allowPrivileged: options.allowPrivileged,
    maxBytes: options.maxBytes,
    format: "text",
    out: sink,
    readStdin: async () => "",
  });
  if (code === 0) return true;
  options.err.write(report.join(""));
  options.err.write(
    `${options.command}: nothing written to etcd: fix ${file} (kubelet validate ${file} shows the same)\n`,
  );
  return false;
}

/**
 * Validates `file` as `kubelet validate` does (the same messages), then places every pod in it on `target` in one
 * transaction. Resolves to the exit code: 1 with nothing written when the file is invalid.
 */
export async function fleetApply(
  file: string,
  target: PlacementTarget,
  options: PlacementOptions & { allowPrivileged: boolean; maxBytes?: number },
): Promise<number> {
  if (!(await manifestValid(file, { ...options, command: "kubelet fleet apply" }))) return 1;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  const { pods, configs } = readManifests((await readManifestFile(file, maxBytes))!, { source: "file", origin: file });
  if (pods.length === 0 || configs.length > 0) {
    options.err.write(
      `kubelet fleet apply: nothing written to etcd: ${file} must hold pods only (${pods.length} pods, ${configs.length} ConfigMaps/Secrets); put ConfigMaps and Secrets under /registry/hosts/<node>/configmaps/ and …/secrets/\n`,
    );
    return 1;
  }
  await placePods(pods, target, options);
  return 0;
}

/** Places validated pods on `target` in one transaction (compare-and-swap on their placement records). */
export async function placePods(pods: Pod[], target: PlacementTarget, options: PlacementOptions): Promise<void> {
  const plan = async (): Promise<Change> => {
    const change: Change = { changes: [], read: [], lines: [] };
    for (const pod of pods) {
      const { namespace, name } = pod.metadata;
      const placed = placedPod(pod, target);
      const keep = new Set(placedKeys(namespace, name, target));
      const { placement: before, read } = await placementOf(options.client, namespace, name);
      change.read.push(read);
      if (before)
        for (const key of placedKeys(namespace, name, before)) if (!keep.has(key)) change.changes.push({ key });
      for (const key of keep) change.changes.push({ key, value: JSON.stringify(placed.pod) });
      change.changes.push({ key: read.key, value: JSON.stringify({ ...target, hash: placed.hash }) });
      const moved =
        before && describeTarget(before) !== describeTarget(target) ? ` (was ${describeTarget(before)})` : "";
      const verdict = !before ? "created" : before.hash === placed.hash && !moved ? "unchanged" : "configured";
      change.lines.push(
        `pod/${namespace}/${name} ${verdict} ${describeTarget(target)}${moved}, manifest ${placed.hash}\n`,
      );
    }
    return change;
  };
  await commit(options, plan, podNames(pods.map((p) => p.metadata)));
}

/** `"default/web", "default/db"`, as the Kubernetes API names objects in a conflict. */
const podNames = (pods: Array<{ namespace: string; name: string }>) =>
  pods.map(({ namespace, name }) => `"${namespace}/${name}"`).join(", ");

/** Removes each pod from every node `apply` placed it on, in one transaction. Resolves to the exit code. */
export async function fleetDelete(
  pods: Array<{ namespace: string; name: string }>,
  options: PlacementOptions,
): Promise<number> {
  const plan = async (): Promise<Change> => {
    const change: Change = { changes: [], read: [], lines: [] };
    const missing: string[] = [];
    for (const { namespace, name } of pods) {
      const { placement, read } = await placementOf(options.client, namespace, name);
      if (!placement) {
        missing.push(`${namespace}/${name}`);
        continue;
      }
      change.read.push(read);
      for (const key of placedKeys(namespace, name, placement)) change.changes.push({ key });
      change.changes.push({ key: read.key });
      change.lines.push(`pod/${namespace}/${name} deleted ${describeTarget(placement)}\n`);
    }
    if (missing.length > 0)
      throw new KubeletError(
        "NotPlaced",
        `nothing deleted: no placement recorded for pod ${missing.join(", ")} under ${placementKeys.prefix} (only pods placed with kubelet fleet apply can be deleted this way; see kubelet fleet pods)`,
      );
    return change;
  };
  try {
    await commit(options, plan, podNames(pods));
  } catch (error) {
    if ((error as KubeletError).code !== "NotPlaced") throw error;
    options.err.write(`kubelet fleet delete: ${(error as Error).message}\n`);
    return 1;
  }
  return 0;
}
