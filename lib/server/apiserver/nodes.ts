// core/v1 nodes: the one Node this kubelet is, built from the node record it keeps (node/status/node-status.ts:
// conditions, capacity/allocatable, addresses, nodeInfo) with its images, listed and got as kube-apiserver serves
// nodes and printed with its columns (NAME STATUS ROLES AGE VERSION; wide INTERNAL-IP EXTERNAL-IP OS-IMAGE
// KERNEL-VERSION CONTAINER-RUNTIME).
import { Hono, type Context } from "hono";
import type { V1Node } from "../../api/types.ts";
import type { ImageSummary } from "../../container/runtime.ts";
import { httpError } from "../server-support.ts";
import type { ServedGroupVersion } from "./api-resource.ts";
import { allOf, createListPages } from "./list-page.ts";
import { fieldSelector, labelSelector } from "./selectors.ts";
import { age, respond, rfc3339, type Printer, AGE_COLUMN, NAME_COLUMN, column } from "./table-print.ts";

/** What discovery lists for the nodes this module serves. */
export const NODE_RESOURCES: ServedGroupVersion = {
  groupVersion: "v1",
  resources: [
    {
      name: "nodes",
      singularName: "node",
      namespaced: false,
      kind: "Node",
      verbs: ["get", "list"],
      shortNames: ["no"],
    },
    { name: "nodes/status", singularName: "", namespaced: false, kind: "Node", verbs: ["get"] },
  ],
};

/** The node's images as NodeStatus.images lists them: upstream's nodeStatusMaxImages, largest first. */
const MAX_IMAGES = 50;

export interface NodeRoutesDeps {
  /** The node's record as of now; `previous` keeps its conditions' transition times. */
  node(previous?: V1Node): Promise<V1Node>;
  /** The runtime's images (NodeStatus.images); a failure leaves the list out. */
  images(): Promise<ImageSummary[]>;
  now?(): number;
}

const address = (node: V1Node, type: string) =>
  node.status?.addresses?.find((a) => a.type === type)?.address ?? "<none>";

/** printNode's STATUS: Ready / NotReady / Unknown, then SchedulingDisabled when cordoned. */
export function nodeStatus(node: V1Node): string {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const status = [ready ? (ready.status === "True" ? "Ready" : "NotReady") : "Unknown"];
  if (node.spec?.unschedulable) status.push("SchedulingDisabled");
  return status.join(",");
}

/** findNodeRoles: node-role.kubernetes.io/<role> labels and kubernetes.io/role, sorted; `<none>` without. */
export function nodeRoles(node: V1Node): string {
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(node.metadata?.labels ?? {})) {
    if (key.startsWith("node-role.kubernetes.io/") && key.length > "node-role.kubernetes.io/".length)
      roles.add(key.slice("node-role.kubernetes.io/".length));
    else if (key === "kubernetes.io/role" && value) roles.add(value);
  }
  return [...roles].sort().join(",") || "<none>";
}

export const NODE_PRINTER: Printer<V1Node & { metadata: { name: string } }> = {
  columns: [
    NAME_COLUMN,
    column("Status", "The status of the node"),
    column("Roles", "The roles of the node"),
    AGE_COLUMN,
    column("Version", "Kubelet Version reported by the node."),
    column("Internal-IP", "List of addresses reachable to the node.", 1),
    column("External-IP", "List of addresses reachable to the node.", 1),
    column("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1),
    column("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
    column(
      "Container-Runtime",
      "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
      1,
    ),
  ],
  cells: (node, now) => {
    const info = node.status?.nodeInfo;
    return [
      node.metadata.name,
      nodeStatus(node),
      nodeRoles(node),
      age(node.metadata.creationTimestamp as unknown as string | undefined, now),
      info?.kubeletVersion ?? "",
      address(node, "InternalIP"),
      address(node, "ExternalIP"),
      info?.osImage || "<unknown>",
      info?.kernelVersion || "<unknown>",
      info?.containerRuntimeVersion || "<unknown>",
    ];
  },
};

/** The routes of core/v1 nodes: /api/v1/nodes and /api/v1/nodes/{name}[/status]. */
export function createNodeRoutes(deps: NodeRoutesDeps): Hono {
  const now = deps.now ?? Date.now;
  /** The node's creation time: when this server started (its record is rebuilt on each read). */
  const started = rfc3339(now());
  let previous: V1Node | undefined;
  let version = 0;
  let signature = "";
  /** The Node now: the record, its images, uid = its name (as the kubelet's events refer to it). */
  const current = async () => {
    const [node, images] = await Promise.all([deps.node(previous), deps.images().catch(() => undefined)]);
    previous = node;
    const name = node.metadata!.name!;
    const status = {
      ...node.status,
      ...(images
        ? {
            images: [...images]
              .sort((a, b) => b.sizeBytes - a.sizeBytes)
              .slice(0, MAX_IMAGES)
              .map((image) => ({ names: image.tags.length ? image.tags : [image.id], sizeBytes: image.sizeBytes })),
          }
        : {}),
    };
    // A new resourceVersion only when something other than the heartbeat changed.
    const next = JSON.stringify({
      ...status,
      conditions: status.conditions?.map(({ lastHeartbeatTime: _, ...rest }) => rest),
    });
    if (next !== signature) {
      signature = next;
      version++;
    }
    return {
      ...node,
      metadata: {
        ...node.metadata,
        name,
        uid: name,
        resourceVersion: String(version),
        creationTimestamp: started,
      },
      status,
    } as V1Node & { metadata: { name: string } };
  };
  const fields = {
    "metadata.name": (n: V1Node) => n.metadata?.name,
    "spec.unschedulable": (n: V1Node) => String(n.spec?.unschedulable ?? false),
  };

  const pages = createListPages(
    { printer: NODE_PRINTER, listKind: "NodeList", keyOf: (node) => node.metadata.name },
    { clock: { now } },
  );
  const app = new Hono();
  app.get("/api/v1/nodes", async (c: Context) => {
    const byField = fieldSelector(c.req.query("fieldSelector"), fields);
    const byLabel = labelSelector<V1Node>(c.req.query("labelSelector"));
    const node = await current();
    return pages(c, {
      read: () => ({ revision: Number(node.metadata.resourceVersion), objects: [node] }),
      matches: allOf(byField, byLabel),
    });
  });
  for (const path of ["/api/v1/nodes/:name", "/api/v1/nodes/:name/status"])
    app.get(path, async (c) => {
      const node = await current();
      const name = c.req.param("name");
      if (node.metadata.name !== name) throw httpError(404, `nodes "${name}" not found`);
      return respond(c, NODE_PRINTER, node, { listKind: "NodeList", now: now() });
    });
  return app;
}
