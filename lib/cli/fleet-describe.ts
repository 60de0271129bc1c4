// `kubelet fleet describe node NAME|pod NAME`: where a pod is placed and, per node, the manifest hash
// the node reports running (its revisions record) beside the placed one, so a rollout is seen converging.
import { ANNOTATION, type V1Node, type V1PodStatus } from "../api/types.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { ETCD_DAEMONS, selectorMatches } from "../sources/etcd.ts";
import { describeTarget, placementKeys, type Placement } from "./fleet-apply.ts";
import { table as formatTable } from "./fleet.ts";

type Reader = Pick<EtcdClient, "get" | "list">;

function parse<T>(text: string | undefined): T | undefined {
  try {
    return text === undefined ? undefined : (JSON.parse(text) as T);
  } catch {
    return undefined;
  }
}

/** One node's view of one pod: the hash it runs and its status. */
async function onNode(client: Reader, node: string, namespace: string, name: string) {
  const [revisions, status] = await Promise.all([
    client.get(fleetKeys.revisions(node)),
    client.get(fleetKeys.status(node, namespace, name)),
  ]);
  const running = parse<Record<string, string>>(revisions.entry?.value)?.[`${namespace}/${name}`];
  const pod = parse<V1PodStatus>(status.entry?.value);
  const containers = pod?.containerStatuses ?? [];
  return {
    running: running ?? "-",
    phase: pod?.phase ?? "-",
    ready: pod ? `${containers.filter((c) => c.ready).length}/${containers.length}` : "-",
  };
}

async function registeredNodes(client: Reader): Promise<V1Node[]> {
  return (await client.list(fleetKeys.nodes)).entries.flatMap((e) => parse<V1Node>(e.value) ?? []);
}

/** Where the pod is placed and, on each node it targets, the manifest it runs. */
export async function describePod(client: Reader, namespace: string, name: string): Promise<string | undefined> {
  const placement = parse<Placement>((await client.get(placementKeys.placement(namespace, name))).entry?.value);
  if (!placement) return undefined;
  const nodes =
    "nodes" in placement
      ? placement.nodes
      : (await registeredNodes(client))
          .filter((n) => selectorMatches(placement.selector, n.metadata?.labels ?? {}))
          .map((n) => n.metadata!.name!)
          .sort();
  const rows = await Promise.all(
    nodes.map(async (node) => {
      const seen = await onNode(client, node, namespace, name);
      return [
        node,
        placement.hash,
        seen.running,
        seen.running === placement.hash ? "yes" : "no",
        seen.phase,
        seen.ready,
      ];
    }),
  );
  const current = rows.filter((r) => r[3] === "yes").length;
  return (
    `Pod:       ${namespace}/${name}\n` +
    `Placed:    ${describeTarget(placement)}\n` +
    `Manifest:  ${placement.hash}\n` +
    `Rollout:   ${current}/${rows.length} nodes run this manifest\n\n` +
    formatTable(["NODE", "MANIFEST", "RUNNING", "CURRENT", "PHASE", "READY"], rows, "No node matches the placement.")
  );
}

/** The node's record, and every pod placed on it (by name or by selector) with the manifest it runs. */
export async function describeNode(client: Reader, node: string): Promise<string | undefined> {
  const record = parse<V1Node>((await client.get(fleetKeys.node(node))).entry?.value);
  const [own, daemons] = await Promise.all([client.list(`/registry/hosts/${node}/pods/`), client.list(ETCD_DAEMONS)]);
  if (!record && own.entries.length === 0) return undefined;
  const labels = { ...record?.metadata?.labels, "kubernetes.io/hostname": node };
  const pods = [
    ...own.entries.map((e) => ({ key: e.key.split("/").slice(-2), source: "node", value: e.value })),
    ...daemons.entries.map((e) => ({ key: e.key.split("/").slice(-2), source: "selector", value: e.value })),
  ].flatMap(({ key, source, value }) => {
    const pod = parse<{
      metadata?: { annotations?: Record<string, string> };
      spec?: { nodeSelector?: Record<string, string> };
    }>(value);
    if (source === "selector" && !selectorMatches(pod?.spec?.nodeSelector, labels)) return [];
    return [
      { namespace: key[0]!, name: key[1]!, source, hash: pod?.metadata?.annotations?.[ANNOTATION.manifestHash] ?? "-" },
    ];
  });
  const rows = await Promise.all(
    pods.map(async (p) => {
      const seen = await onNode(client, node, p.namespace, p.name);
      return [`${p.namespace}/${p.name}`, p.source, p.hash, seen.running, seen.phase, seen.ready];
    }),
  );
  const ready = record?.status?.conditions?.find((c) => c.type === "Ready");
  return (
    `Node:      ${node}\n` +
    `Status:    ${!record ? "not registered (no /registry/nodes record: down, or not started)" : ready?.status === "True" ? "Ready" : "NotReady"}\n` +
    `Labels:    ${Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join(",")}\n\n` +
    formatTable(["POD", "PLACED BY", "MANIFEST", "RUNNING", "PHASE", "READY"], rows, "No pods placed on this node.")
  );
}
