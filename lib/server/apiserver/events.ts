// core/v1 events from the event recorder's ring: list and watch across namespaces or in one, with the field
// selectors `kubectl describe` sends (involvedObject.name/namespace/kind/uid), printed with kube-apiserver's
// columns (LAST SEEN TYPE REASON OBJECT MESSAGE; wide SUBOBJECT SOURCE FIRST SEEN COUNT NAME).
import { Hono, type Context } from "hono";
import { systemClock, type Clock } from "../../clock.ts";
import type { EventRecorder, KubeEvent } from "../../node/events/events.ts";
import { httpError } from "../server-support.ts";
import type { ServedGroupVersion } from "./api-resource.ts";
import { allOf, createListPages } from "./list-page.ts";
import { fieldSelector, labelSelector } from "./selectors.ts";
import { age, respond, rfc3339, type Printer, type ServedMeta, column, NAME_COLUMN } from "./table-print.ts";
import { watchResponse, type WatchEvent } from "./events-watch.ts";

/** What discovery lists for the events this module serves. */
export const EVENT_RESOURCES: ServedGroupVersion = {
  groupVersion: "v1",
  resources: [
    {
      name: "events",
      singularName: "event",
      namespaced: true,
      kind: "Event",
      verbs: ["get", "list", "watch"],
      shortNames: ["ev"],
    },
  ],
};

/** A v1 Event as the API serves it. */
export interface V1Event {
  apiVersion: "v1";
  kind: "Event";
  metadata: ServedMeta;
  involvedObject: { kind: string; namespace?: string; name: string; uid: string; apiVersion: "v1"; fieldPath?: string };
  reason: string;
  message: string;
  source: { component: string; host: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: string;
  eventTime: null;
  reportingComponent: string;
  reportingInstance: string;
}

export interface EventRoutesDeps {
  events: EventRecorder;
  nodeName: string;
  clock?: Clock;
  /** How long a watch without timeoutSeconds stays open, ms (default 30 min, as the API server's upper bound). */
  maxWatchMs?: number;
}

const PRINTER: Printer<V1Event> = {
  columns: [
    column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    column(
      "Reason",
      "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    column("Object", "The object that this event is about."),
    column("Subobject", "The path of the involved object's field this event is about.", 1),
    column("Source", "The component reporting this event.", 1),
    column("Message", "A human-readable description of the status of this operation."),
    column("First Seen", "The time at which the event was first recorded.", 1),
    column("Count", "The number of times this event has occurred.", 1),
    { ...NAME_COLUMN, priority: 1 },
  ],
  cells: (e, now) => [
    age(e.lastTimestamp, now),
    e.type,
    e.reason,
    `${e.involvedObject.kind.toLowerCase()}/${e.involvedObject.name}`,
    e.involvedObject.fieldPath ?? "",
    `${e.source.component}, ${e.source.host}`,
    e.message.trim(),
    age(e.firstTimestamp, now),
    e.count,
    e.metadata.name,
  ],
};

const FIELDS: Record<string, (e: V1Event) => string | undefined> = {
  "metadata.name": (e) => e.metadata.name,
  "metadata.namespace": (e) => e.metadata.namespace,
  "involvedObject.kind": (e) => e.involvedObject.kind,
  "involvedObject.namespace": (e) => e.involvedObject.namespace,
  "involvedObject.name": (e) => e.involvedObject.name,
  "involvedObject.uid": (e) => e.involvedObject.uid,
  "involvedObject.apiVersion": (e) => e.involvedObject.apiVersion,
  "involvedObject.resourceVersion": () => "",
  "involvedObject.fieldPath": (e) => e.involvedObject.fieldPath,
  reason: (e) => e.reason,
  reportingComponent: (e) => e.reportingComponent,
  source: (e) => e.source.component,
  type: (e) => e.type,
};

/** Each recorded event's name and resourceVersion, from one counter of changes the module keeps from its start. */
function createEventVersions(recorder: EventRecorder) {
  let counter = 0;
  const versions = new WeakMap<KubeEvent, { name: string; version: number }>();
  const of = (event: KubeEvent) => {
    let known = versions.get(event);
    if (!known) {
      known = { name: `${event.involvedObject.name}.${(++counter).toString(16).padStart(16, "0")}`, version: counter };
      versions.set(event, known);
    }
    return known;
  };
  const listeners = new Set<(event: KubeEvent, change: "recorded" | "dropped") => void>();
  recorder.subscribe((event, change) => {
    const known = of(event);
    if (change === "recorded") known.version = ++counter;
    for (const listener of listeners) listener(event, change);
  });
  return {
    of,
    current: () => counter,
    listen(listener: (event: KubeEvent, change: "recorded" | "dropped") => void) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
}

/** The routes of core/v1 events: /api/v1/events and /api/v1/namespaces/{namespace}/events[/{name}]. */
export function createEventRoutes(deps: EventRoutesDeps): Hono {
  const clock = deps.clock ?? systemClock;
  const now = () => clock.now();
  const versions = createEventVersions(deps.events);
  const toV1 = (event: KubeEvent): V1Event => {
    const { name, version } = versions.of(event);
    const { kind, namespace, name: objectName, uid, fieldPath } = event.involvedObject;
    return {
      apiVersion: "v1",
      kind: "Event",
      // A node's events are kept in "default", as the kubelet records them.
      metadata: {
        name,
        namespace: namespace || "default",
        uid: `${uid}-${name.split(".").pop()}`,
        resourceVersion: String(version),
        creationTimestamp: rfc3339(event.firstTimestamp),
      },
      involvedObject: {
        kind,
        ...(namespace ? { namespace } : {}),
        name: objectName,
        uid,
        apiVersion: "v1",
        ...(fieldPath ? { fieldPath } : {}),
      },
      reason: event.reason,
      message: event.message,
      source: { component: "kubelet", host: deps.nodeName },
      firstTimestamp: rfc3339(event.firstTimestamp),
      lastTimestamp: rfc3339(event.lastTimestamp),
      count: event.count,
      type: event.type,
      eventTime: null,
      reportingComponent: "kubelet",
      reportingInstance: deps.nodeName,
    };
  };

  const pages = createListPages(
    { printer: PRINTER, listKind: "EventList", keyOf: (e) => `${e.metadata.namespace}/${e.metadata.name}` },
    { clock: { now } },
  );
  const list = (c: Context, namespace: string | undefined) => {
    const fields = fieldSelector(c.req.query("fieldSelector"), FIELDS);
    const labels = labelSelector<V1Event>(c.req.query("labelSelector"));
    const inNamespace = namespace ? (e: V1Event) => e.metadata.namespace === namespace : undefined;
    const matches = (e: V1Event) =>
      (!inNamespace || inNamespace(e)) && (!fields || fields(e)) && (!labels || labels(e));
    if (isWatch(c)) return watch(c, matches);
    const objects = deps.events.list().map(toV1);
    return pages(c, {
      read: () => ({ revision: versions.current(), objects }),
      namespace,
      matches: allOf(fields, labels),
    });
  };

  const watch = (c: Context, matches: (e: V1Event) => boolean) => {
    const since = Number(c.req.query("resourceVersion") || 0);
    if (!Number.isFinite(since) || since < 0)
      throw httpError(
        400,
        `invalid resourceVersion "${c.req.query("resourceVersion")}": give a version a list returned`,
      );
    const initial: WatchEvent[] = deps.events
      .list()
      .map(toV1)
      .filter((e) => matches(e) && Number(e.metadata.resourceVersion) > since)
      .map((object) => ({ type: "ADDED", object }));
    return watchResponse(c, {
      initial,
      maxMs: deps.maxWatchMs ?? 30 * 60_000,
      clock,
      bookmark: () => ({ kind: "Event", apiVersion: "v1", metadata: { resourceVersion: String(versions.current()) } }),
      subscribe: (send) =>
        versions.listen((event, change) => {
          const object = toV1(event);
          if (!matches(object)) return;
          send({ type: change === "dropped" ? "DELETED" : event.count > 1 ? "MODIFIED" : "ADDED", object });
        }),
    });
  };

  const app = new Hono();
  app.get("/api/v1/events", (c) => list(c, undefined));
  app.get("/api/v1/namespaces/:namespace/events", (c) => list(c, c.req.param("namespace")));
  app.get("/api/v1/namespaces/:namespace/events/:name", (c) => {
    const { namespace, name } = c.req.param();
    const event = deps.events
      .list()
      .map(toV1)
      .find((e) => e.metadata.namespace === namespace && e.metadata.name === name);
    if (!event) throw httpError(404, `events "${name}" not found`);
    return respond(c, PRINTER, event, { listKind: "EventList", now: now() });
  });
  return app;
}

/** `?watch=true` (or 1), as client-go sends it. */
export function isWatch(c: Context): boolean {
  const value = c.req.query("watch");
  return value === "true" || value === "1";
}
