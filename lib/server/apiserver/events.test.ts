import { describe, expect, test } from "bun:test";
import { createEventRecorder, nodeRef } from "../../node/events/events.ts";
import { apiApp, readWatchEvents } from "../../testing/api-app.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createEventRoutes, type V1Event } from "./events.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const pod = (namespace: string, name: string) => ({ metadata: { namespace, name, uid: `uid-${name}` } });

function setUp() {
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  const events = createEventRecorder({ clock });
  const app = apiApp(createEventRoutes({ events, nodeName: "node-a", clock }));
  events.record(
    pod("default", "web"),
    "Normal",
    "Pulled",
    'Container image "busybox" already present',
    "spec.containers{c}",
  );
  events.record(pod("prod", "db"), "Warning", "BackOff", "Back-off restarting failed container");
  events.record(nodeRef("node-a"), "Normal", "Starting", "Starting kubelet.");
  return { clock, events, app };
}

const items = async (response: Response) => ((await response.json()) as { items: V1Event[] }).items;

describe("core/v1 events", () => {
  test("the list across namespaces holds every recorded event as a v1 Event, a node's in default", async () => {
    const { app } = setUp();
    const list = await items(await app.request("/api/v1/events"));
    expect(list.map((e) => [e.metadata.namespace, e.involvedObject.kind, e.involvedObject.name, e.reason])).toEqual([
      ["default", "Pod", "web", "Pulled"],
      ["prod", "Pod", "db", "BackOff"],
      ["default", "Node", "node-a", "Starting"],
    ]);
    expect(list[0]!.source).toEqual({ component: "kubelet", host: "node-a" });
    expect(list[0]!.metadata.name).toStartWith("web.");
  });

  test("a namespace's list holds only its events", async () => {
    const { app } = setUp();
    const list = await items(await app.request("/api/v1/namespaces/prod/events"));
    expect(list.map((e) => e.involvedObject.name)).toEqual(["db"]);
  });

  test("kubectl describe's field selectors pick one object's events", async () => {
    const { app } = setUp();
    const selector =
      "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=uid-web";
    const list = await items(
      await app.request(`/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(selector)}`),
    );
    expect(list.map((e) => e.reason)).toEqual(["Pulled"]);
    const node = await items(
      await app.request(
        `/api/v1/events?fieldSelector=${encodeURIComponent("involvedObject.kind=Node,involvedObject.uid=node-a")}`,
      ),
    );
    expect(node.map((e) => e.reason)).toEqual(["Starting"]);
  });

  test("a field selector on an unknown field is a 400 naming it", async () => {
    const { app } = setUp();
    const response = await app.request("/api/v1/events?fieldSelector=spec.color%3Dred");
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toBe("field label not supported: spec.color");
  });

  test("as a Table, events have kube-apiserver's columns, the wide ones at priority 1", async () => {
    const { app, clock } = setUp();
    await clock.advance(75_000);
    const table = (await (
      await app.request("/api/v1/namespaces/default/events", { headers: { accept: TABLE } })
    ).json()) as {
      columnDefinitions: Array<{ name: string; priority: number }>;
      rows: Array<{ cells: unknown[] }>;
    };
    expect(table.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name)).toEqual([
      "Last Seen",
      "Type",
      "Reason",
      "Object",
      "Message",
    ]);
    const [lastSeen, type, reason, object, subobject, source, message, firstSeen, count, name] = table.rows[0]!.cells;
    expect([lastSeen, type, reason, object, message]).toEqual([
      "75s",
      "Normal",
      "Pulled",
      "pod/web",
      'Container image "busybox" already present',
    ]);
    expect([subobject, source, firstSeen, count]).toEqual(["spec.containers{c}", "kubelet, node-a", "75s", 1]);
    expect(name).toStartWith("web.");
  });

  test("a watch sends the events after the version it was given, then each event as it is recorded or counted", async () => {
    const { app, events } = setUp();
    const list = (await (await app.request("/api/v1/events")).json()) as { metadata: { resourceVersion: string } };
    const response = await app.request(
      `/api/v1/namespaces/default/events?watch=true&resourceVersion=${list.metadata.resourceVersion}`,
    );
    const reader = response.body!.getReader();
    events.record(pod("default", "web"), "Warning", "Unhealthy", "Liveness probe failed");
    events.record(pod("prod", "db"), "Warning", "BackOff", "Back-off restarting failed container");
    events.record(pod("default", "web"), "Warning", "Unhealthy", "Liveness probe failed");
    const lines = await readWatchEvents<{ type: string; object: V1Event }>(reader, 2);
    await reader.cancel();
    expect(lines.map((l) => [l.type, l.object.reason, l.object.count])).toEqual([
      ["ADDED", "Unhealthy", 1],
      ["MODIFIED", "Unhealthy", 2],
    ]);
  });

  test("a watch ends after timeoutSeconds", async () => {
    const { app, clock } = setUp();
    const response = await app.request("/api/v1/events?watch=1&timeoutSeconds=5");
    const reader = response.body!.getReader();
    expect(await readWatchEvents(reader, 3)).toHaveLength(3);
    await clock.advance(5_000);
    expect((await reader.read()).done).toBe(true);
  });

  test("one event is got by name, and an unknown name is a NotFound", async () => {
    const { app } = setUp();
    const [first] = await items(await app.request("/api/v1/events"));
    const got = await app.request(`/api/v1/namespaces/default/events/${first!.metadata.name}`);
    expect(((await got.json()) as V1Event).reason).toBe("Pulled");
    const missing = await app.request("/api/v1/namespaces/default/events/nope");
    expect(missing.status).toBe(404);
  });

  test("limit and continue page the events in namespace/name order, as etcd lists them", async () => {
    const { app } = setUp();
    const first = (await (await app.request("/api/v1/events?limit=2")).json()) as any;
    expect(first.items.map((e: V1Event) => e.involvedObject.name)).toEqual(["node-a", "web"]);
    expect(first.metadata.remainingItemCount).toBe(1);
    const rest = (await (
      await app.request(`/api/v1/events?limit=2&continue=${first.metadata.continue}`)
    ).json()) as any;
    expect([rest.items.map((e: V1Event) => e.involvedObject.name), rest.metadata.continue]).toEqual([
      ["db"],
      undefined,
    ]);
  });
});
