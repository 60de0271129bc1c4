import { describe, expect, test } from "bun:test";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../../sources/etcd-client.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { apiApp } from "../../testing/api-app.ts";
import { FakeEtcd } from "../../testing/fake-etcd.ts";
import { watchLines } from "../../testing/watch-lines.ts";
import { createFleetEventRoutes } from "./fleet-events.ts";

const TABLE = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" };

/** An event record as the fleet reporter writes it. */
const event = (host: string, pod: string, reason: string, at: string) => ({
  key: fleetKeys.event(host, "default", `${pod}.${reason}`),
  value: JSON.stringify({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${pod}.${reason}`, namespace: "default" },
    type: reason === "BackOff" ? "Warning" : "Normal",
    reason,
    message: `${reason} of ${pod}`,
    involvedObject: { kind: "Pod", namespace: "default", name: pod, uid: pod },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
    source: { component: "kubelet", host },
  }),
});

/** Nodes a and b, each with an event; a pod status beside them that is no event. */
async function setUp() {
  const etcd = new FakeEtcd();
  await etcd.apply([
    { key: fleetKeys.node("a"), value: "{}" },
    { key: fleetKeys.node("b"), value: "{}" },
  ]);
  await etcd.apply([
    event("a", "web", "Started", "2025-12-31T23:59:00Z"),
    event("b", "db", "BackOff", "2025-12-31T23:58:00Z"),
    { key: fleetKeys.status("a", "default", "web"), value: "{}" },
  ]);
  const clock = new FakeClock();
  return { etcd, clock, app: apiApp(createFleetEventRoutes({ client: etcd as unknown as EtcdClient, clock })) };
}

describe("fleet serve's events", () => {
  test("every node's events are listed, oldest first, at etcd's revision", async () => {
    const { app } = await setUp();
    const list = await (await app.request("/api/v1/events")).json();
    expect(list.kind).toBe("EventList");
    expect(list.metadata.resourceVersion).toBe("3");
    expect(list.items.map((e: { source: { host: string }; reason: string }) => `${e.source.host} ${e.reason}`)).toEqual(
      ["b BackOff", "a Started"],
    );
  });

  test("kubectl get events prints LAST SEEN TYPE REASON OBJECT MESSAGE", async () => {
    const { app } = await setUp();
    const table = await (await app.request("/api/v1/namespaces/default/events", { headers: TABLE })).json();
    expect(table.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      "Last Seen",
      "Type",
      "Reason",
      "Object",
      "Message",
    ]);
    expect(table.rows.map((r: { cells: unknown[] }) => r.cells)).toEqual([
      ["2m", "Warning", "BackOff", "pod/db", "BackOff of db"],
      ["60s", "Normal", "Started", "pod/web", "Started of web"],
    ]);
  });

  test("field selectors pick events by involvedObject name, namespace and kind; an unknown field is refused", async () => {
    const { app } = await setUp();
    const pick = async (selector: string) =>
      (await (await app.request(`/api/v1/events?fieldSelector=${encodeURIComponent(selector)}`)).json()).items.map(
        (e: { reason: string }) => e.reason,
      );
    expect(await pick("involvedObject.name=web")).toEqual(["Started"]);
    expect(await pick("involvedObject.namespace=default,involvedObject.kind=Pod")).toEqual(["BackOff", "Started"]);
    expect(await pick("involvedObject.kind=Node")).toEqual([]);
    expect(await pick("involvedObject.name!=web")).toEqual(["BackOff"]);
    expect((await app.request("/api/v1/events?fieldSelector=spec.x%3Dy")).status).toBe(400);
  });

  test("a watch sends the events ADDED, then a node's new event and its repeat as etcd writes them", async () => {
    const { etcd, app } = await setUp();
    const watch = await watchLines(
      await app.request("/api/v1/events?watch=true&fieldSelector=involvedObject.name%3Dweb"),
    );
    expect(watch.lines.map((l) => `${l.type} ${l.object.reason}@${l.object.metadata.resourceVersion}`)).toEqual([
      "ADDED Started@3",
    ]);
    await etcd.apply([
      event("b", "web", "Pulled", "2026-01-01T00:00:00Z"),
      event("b", "db", "Pulled", "2026-01-01T00:00:00Z"),
    ]);
    await etcd.apply([{ key: fleetKeys.status("b", "default", "web"), value: "{}" }]);
    await etcd.apply([event("a", "web", "Started", "2026-01-01T00:00:00Z")]);
    await watch.settle();
    expect(
      watch.lines.slice(1).map((l) => `${l.type} ${l.object.reason}@${l.object.metadata.resourceVersion}`),
    ).toEqual(["ADDED Pulled@4", "MODIFIED Started@6"]);
    await watch.stop();
  });

  test("a watch from a revision etcd has compacted is 410 Expired", async () => {
    const { etcd, app } = await setUp();
    etcd.compact(3);
    const watch = await watchLines(await app.request("/api/v1/events?watch=1&resourceVersion=2"));
    expect(watch.lines).toEqual([{ type: "ERROR", object: expect.objectContaining({ code: 410, reason: "Expired" }) }]);
  });

  test("limit and continue page every node's events in namespace/name order, as kube-apiserver's etcd list", async () => {
    const { app } = await setUp();
    const first = await (await app.request("/api/v1/namespaces/default/events?limit=1")).json();
    expect([first.items.map((e: { reason: string }) => e.reason), first.metadata.remainingItemCount]).toEqual([
      ["BackOff"],
      1,
    ]);
    const rest = await (
      await app.request(`/api/v1/namespaces/default/events?limit=1&continue=${first.metadata.continue}`)
    ).json();
    expect([rest.items.map((e: { reason: string }) => e.reason), rest.metadata.continue]).toEqual([
      ["Started"],
      undefined,
    ]);
  });
});
