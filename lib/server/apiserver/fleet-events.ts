// Fleet serve's core/v1 events: every node's recent events, as the fleet reporter writes them under
// /registry/hosts/<node>/events/, listed and watched as kube-apiserver serves /api/v1/events (kubectl's columns
// LAST SEEN TYPE REASON OBJECT MESSAGE, field selectors on involvedObject.name/namespace/kind).
import { Hono, type Context } from "hono";
import type { Clock } from "../../clock.ts";
import type { KubeEvent } from "../../node/events/events.ts";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import type { EtcdClient, EtcdEntry } from "../../sources/etcd-client.ts";
import type { ServedGroupVersion } from "./api-resource.ts";
import { EVENT_RESOURCES } from "./events.ts";
import { streamEtcdWatch } from "./fleet-watch.ts";
import { allOf, createListPages } from "./list-page.ts";
import { fieldSelector, labelSelector, select } from "./selectors.ts";
import { isTrue } from "./request-info.ts";
import { age, column, type Printer } from "./table-print.ts";

/** An event as the reporter stored it. */
export type FleetEvent = KubeEvent & {
  apiVersion: "v1";
  kind: "Event";
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
  source?: { component: string; host: string };
};

/** kubectl's event columns (printEvent's LAST SEEN TYPE REASON OBJECT MESSAGE). */
export const EVENT_PRINTER: Printer<FleetEvent> = {
  columns: [
    column("Last Seen", "Time when this Event was last observed."),
    column("Type", "Type of this event (Normal, Warning)."),
    column("Reason", "This should be a short, machine understandable string that gives the reason for this event."),
    column("Object", "The object that this event is about."),
    column("Message", "A human-readable description of the status of this operation."),
  ],
  cells: (event, now) => [
    age(event.lastTimestamp, now),
    event.type,
    event.reason,
    `${event.involvedObject.kind.toLowerCase()}/${event.involvedObject.name}`,
    event.message,
  ],
};

const FIELDS = {
  "metadata.name": (e: FleetEvent) => e.metadata.name,
  "metadata.namespace": (e: FleetEvent) => e.metadata.namespace,
  "involvedObject.name": (e: FleetEvent) => e.involvedObject.name,
  "involvedObject.namespace": (e: FleetEvent) => e.involvedObject.namespace,
  "involvedObject.kind": (e: FleetEvent) => e.involvedObject.kind,
  type: (e: FleetEvent) => e.type,
  reason: (e: FleetEvent) => e.reason,
};

/** Node prefixes listed at once (fleet-pods.ts's figure). */
const LIST_CONCURRENCY = 32;

/** `/registry/hosts/<node>/events/<namespace>/<name>` → true. */
function isEventKey(key: string): boolean {
  const parts = key.slice(fleetKeys.hosts.length).split("/");
  return key.startsWith(fleetKeys.hosts) && parts.length === 4 && parts[1] === "events";
}

function decode(entry: EtcdEntry): FleetEvent | undefined {
  if (!isEventKey(entry.key)) return undefined;
  try {
    const event = JSON.parse(entry.value) as FleetEvent;
    return { ...event, metadata: { ...event.metadata, resourceVersion: String(entry.modRevision) } };
  } catch {
    return undefined;
  }
}

export interface FleetEventRoutesDeps {
  client: Pick<EtcdClient, "list" | "watch">;
  clock: Clock;
}

/** What fleet serve's discovery lists for events: a list and a watch across the fleet (no get of one by name). */
export const FLEET_EVENT_RESOURCES: ServedGroupVersion = {
  groupVersion: "v1",
  resources: EVENT_RESOURCES.resources.map((resource) => ({ ...resource, verbs: ["list", "watch"] })),
};

export function createFleetEventRoutes(deps: FleetEventRoutesDeps): Hono {
  const list = async () => {
    const serializable = { serializable: true };
    const nodes = await deps.client.list(fleetKeys.nodes, serializable);
    const prefixes = nodes.entries.map(({ key }) => fleetKeys.events(key.slice(fleetKeys.nodes.length)));
    const objects: FleetEvent[] = [];
    let next = 0;
    const lister = async () => {
      for (let i = next++; i < prefixes.length; i = next++)
        for (const entry of (await deps.client.list(prefixes[i]!, serializable)).entries) {
          const event = decode(entry);
          if (event) objects.push(event);
        }
    };
    await Promise.all(Array.from({ length: LIST_CONCURRENCY }, lister));
    objects.sort((a, b) => a.lastTimestamp.localeCompare(b.lastTimestamp));
    return { objects, revision: nodes.revision };
  };
  const pages = createListPages<FleetEvent>(
    { printer: EVENT_PRINTER, listKind: "EventList", keyOf: (e) => `${e.metadata.namespace}/${e.metadata.name}` },
    { clock: deps.clock },
  );
  const serve = (namespace: string | undefined) => async (c: Context) => {
    const byField = fieldSelector(c.req.query("fieldSelector"), FIELDS);
    const byLabel = labelSelector<FleetEvent>(c.req.query("labelSelector"));
    const inNamespace = (e: FleetEvent) => namespace === undefined || e.metadata.namespace === namespace;
    const matches = (e: FleetEvent) => select([e], inNamespace, byField, byLabel).length === 1;
    if (isTrue(c.req.query("watch")))
      return streamEtcdWatch(c, {
        client: deps.client,
        clock: deps.clock,
        kind: "Event",
        prefix: fleetKeys.hosts,
        printer: EVENT_PRINTER,
        list: async () => {
          const now = await list();
          return { objects: now.objects.filter(matches), revision: now.revision };
        },
        decode: async (entry) => decode(entry),
        gone: (key) => {
          if (!isEventKey(key)) return undefined;
          const [, , namespace, name] = key.slice(fleetKeys.hosts.length).split("/") as [
            string,
            string,
            string,
            string,
          ];
          return { metadata: { name, namespace } } as FleetEvent;
        },
        keyOf: (e) => fleetKeys.event(e.source?.host ?? "", e.metadata.namespace, e.metadata.name),
        matches: (e) => e.involvedObject === undefined || matches(e),
      });
    const now = await list();
    return pages(c, { read: () => now, namespace, matches: allOf(byField, byLabel) });
  };
  const app = new Hono();
  app.get("/api/v1/events", serve(undefined));
  app.get("/api/v1/namespaces/:namespace/events", (c) => serve(c.req.param("namespace"))(c));
  return app;
}
