// Fleet serve's core/v1 nodes: every node record in etcd, listed and got as kube-apiserver serves nodes (the
// node module's columns), with Ready as the node lifecycle controller would set it from the node's lease.
//
// Decision: a node's records live on its lease, so a node whose lease expired is gone from etcd and from the
// list. Before that, a lease not renewed for --node-monitor-grace-period means the kubelet stopped heartbeating:
// its Ready condition becomes Unknown with the controller's reason and message, whatever the record last said.
import { Hono } from "hono";
import type { V1Node } from "../../api/types.ts";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import type { EtcdClient, EtcdEntry } from "../../sources/etcd-client.ts";
import { httpError } from "../server-support.ts";
import type { Clock } from "../../clock.ts";
import { streamEtcdWatch } from "./fleet-watch.ts";
import { allOf, createListPages } from "./list-page.ts";
import { fieldSelector, labelSelector, select } from "./selectors.ts";
import { NODE_PRINTER } from "./nodes.ts";
import { isTrue } from "./request-info.ts";
import { respond, rfc3339 } from "./table-print.ts";

/** The node lifecycle controller's default grace period (kube-controller-manager --node-monitor-grace-period). */
export const DEFAULT_NODE_GRACE_MS = 40_000;

export interface FleetNodeRoutesDeps {
  client: Pick<EtcdClient, "list" | "get" | "leaseTimeToLive" | "watch">;
  clock: Clock;
  /** A node whose lease was last renewed longer ago than this is Ready=Unknown. */
  graceMs?: number;
}

type ServedNode = V1Node & { metadata: { name: string } };

/** The node as served: its record, Ready from its lease (`age`: seconds since the lease was renewed). */
export function fleetNode(entry: EtcdEntry, ageSeconds: number | undefined, graceMs: number, now: number) {
  const node = JSON.parse(entry.value) as V1Node;
  const name = node.metadata?.name ?? entry.key.slice(fleetKeys.nodes.length);
  const stale = ageSeconds !== undefined && ageSeconds * 1000 > graceMs;
  const conditions = (node.status?.conditions ?? []).map((condition) =>
    stale && condition.type === "Ready"
      ? {
          ...condition,
          status: "Unknown",
          reason: "NodeStatusUnknown",
          message: "Kubelet stopped posting node status.",
          lastTransitionTime: rfc3339(now - ageSeconds * 1000 + graceMs),
        }
      : condition,
  );
  return {
    ...node,
    apiVersion: "v1",
    kind: "Node",
    metadata: { ...node.metadata, name, uid: node.metadata?.uid ?? name, resourceVersion: String(entry.modRevision) },
    status: { ...node.status, conditions },
  } as ServedNode;
}

export function createFleetNodeRoutes(deps: FleetNodeRoutesDeps): Hono {
  const graceMs = deps.graceMs ?? DEFAULT_NODE_GRACE_MS;
  const served = async (entry: EtcdEntry) => {
    const lease =
      entry.lease !== "0" ? await deps.client.leaseTimeToLive(entry.lease).catch(() => undefined) : undefined;
    return fleetNode(entry, lease ? lease.granted - lease.ttl : undefined, graceMs, deps.clock.now());
  };
  const fields = {
    "metadata.name": (n: V1Node) => n.metadata?.name,
    "spec.unschedulable": (n: V1Node) => String(n.spec?.unschedulable ?? false),
  };
  const pages = createListPages<ServedNode>(
    { printer: NODE_PRINTER, listKind: "NodeList", keyOf: (node) => node.metadata.name },
    { clock: deps.clock },
  );
  const app = new Hono();
  app.get("/api/v1/nodes", async (c) => {
    const byField = fieldSelector(c.req.query("fieldSelector"), fields);
    const byLabel = labelSelector<V1Node>(c.req.query("labelSelector"));
    const all = async () => {
      const { entries, revision } = await deps.client.list(fleetKeys.nodes);
      const nodes = (await Promise.all(entries.map(served))).sort((a, b) =>
        a.metadata.name.localeCompare(b.metadata.name),
      );
      return { objects: nodes, revision };
    };
    const list = async () => {
      const { objects, revision } = await all();
      return { objects: select(objects, byField, byLabel), revision };
    };
    // A node's record is written on its lease: the lease's expiry deletes it (DELETED), a new record or a
    // status report changes it (ADDED, MODIFIED).
    if (isTrue(c.req.query("watch")))
      return streamEtcdWatch(c, {
        client: deps.client,
        clock: deps.clock,
        kind: "Node",
        prefix: fleetKeys.nodes,
        printer: NODE_PRINTER,
        list,
        decode: served,
        gone: (key) =>
          ({ apiVersion: "v1", kind: "Node", metadata: { name: key.slice(fleetKeys.nodes.length) } }) as ServedNode,
        keyOf: (node) => fleetKeys.node(node.metadata.name),
        matches: (node) => select([node], byField, byLabel).length === 1,
      });
    const now = await all();
    return pages(c, { read: () => now, matches: allOf(byField, byLabel) });
  });
  for (const path of ["/api/v1/nodes/:name", "/api/v1/nodes/:name/status"])
    app.get(path, async (c) => {
      const name = c.req.param("name") ?? "";
      const { entry } = await deps.client.get(fleetKeys.node(name));
      if (!entry) throw httpError(404, `nodes "${name}" not found`);
      return respond(c, NODE_PRINTER, await served(entry), { listKind: "NodeList", now: deps.clock.now() });
    });
  return app;
}
