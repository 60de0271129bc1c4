import { describe, expect, test } from "bun:test";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../../sources/etcd-client.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeEtcd } from "../../testing/fake-etcd.ts";
import { watchLines } from "../../testing/watch-lines.ts";
import { createFleetNodeRoutes } from "./fleet-nodes.ts";
import { BOOKMARK_INTERVAL_MS } from "./watch-stream.ts";

const record = (name: string) =>
  JSON.stringify({
    metadata: { name, labels: { "kubernetes.io/hostname": name } },
    status: {
      conditions: [
        { type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" },
      ],
      nodeInfo: { kubeletVersion: "v1.32.0", containerRuntimeVersion: "docker://27" },
    },
  });

/** Two nodes on their leases; node b's lease was renewed `staleSeconds` ago. */
async function setUp(staleSeconds: number) {
  const etcd = new FakeEtcd();
  const [a, b] = [await etcd.grantLease(40), await etcd.grantLease(40)];
  await etcd.apply([{ key: fleetKeys.node("a"), value: record("a") }], a);
  await etcd.apply([{ key: fleetKeys.node("b"), value: record("b") }], b);
  const client = {
    list: (prefix: string) => etcd.list(prefix),
    get: (key: string) => etcd.get(key),
    leaseTimeToLive: async (lease: string) => ({ granted: 40, ttl: lease === b ? 40 - staleSeconds : 38 }),
    watch: (...args: Parameters<FakeEtcd["watch"]>) => etcd.watch(...args),
  } as unknown as EtcdClient;
  const clock = new FakeClock();
  return { etcd, clock, leases: { a, b }, app: createFleetNodeRoutes({ client, clock, graceMs: 20_000 }) };
}

const ready = (node: {
  status: { conditions: Array<{ type: string; status: string; reason?: string; message?: string }> };
}) => node.status.conditions.find((c) => c.type === "Ready");

describe("fleet serve's nodes", () => {
  test("every node record is listed; a node whose lease went unrenewed past the grace period is Ready=Unknown", async () => {
    const { app } = await setUp(25);
    const list = await (await app.request("/api/v1/nodes")).json();
    expect(list.kind).toBe("NodeList");
    expect(list.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual(["a", "b"]);
    expect(ready(list.items[0])!.status).toBe("True");
    expect(ready(list.items[1])).toMatchObject({
      status: "Unknown",
      reason: "NodeStatusUnknown",
      message: "Kubelet stopped posting node status.",
    });
  });

  test("a node heartbeating within the grace period keeps what its record says", async () => {
    const { app } = await setUp(5);
    const node = await (await app.request("/api/v1/nodes/b")).json();
    expect(ready(node)!.status).toBe("True");
  });

  test("the Table prints an Unknown node's STATUS as NotReady, as kube-apiserver's printer does; an unknown node is 404", async () => {
    const { app } = await setUp(25);
    const table = await (
      await app.request("/api/v1/nodes", { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } })
    ).json();
    expect(table.rows.map((r: { cells: unknown[] }) => r.cells.slice(0, 2))).toEqual([
      ["a", "Ready"],
      ["b", "NotReady"],
    ]);
    expect((await app.request("/api/v1/nodes/c")).status).toBe(404);
  });
});

describe("fleet serve's node watch", () => {
  const said = (lines: Array<{ type: string; object: { metadata: { name?: string; resourceVersion: string } } }>) =>
    lines.map((l) => `${l.type} ${l.object.metadata.name ?? ""}@${l.object.metadata.resourceVersion}`);

  test("a watch sends every node ADDED, then a new node ADDED, a status MODIFIED and an expired lease DELETED at etcd's revisions", async () => {
    const { etcd, app, leases } = await setUp(5);
    const watch = await watchLines(await app.request("/api/v1/nodes?watch=1"));
    expect(said(watch.lines)).toEqual(["ADDED a@2", "ADDED b@3"]);
    const c = await etcd.grantLease(40);
    await etcd.apply([{ key: fleetKeys.node("c"), value: record("c") }], c);
    await etcd.apply([{ key: fleetKeys.node("a"), value: record("a") }], leases.a);
    etcd.expire(leases.b);
    await watch.settle();
    expect(said(watch.lines.slice(2))).toEqual(["ADDED c@4", "MODIFIED a@5", "DELETED b@6"]);
    await watch.stop();
  });

  test("a watch from a resourceVersion gets what changed after it, and a bookmark with etcd's revision each interval", async () => {
    const { etcd, app, clock } = await setUp(5);
    const c = await etcd.grantLease(40);
    await etcd.apply([{ key: fleetKeys.node("c"), value: record("c") }], c);
    const watch = await watchLines(
      await app.request("/api/v1/nodes?watch=1&resourceVersion=3&allowWatchBookmarks=true"),
    );
    expect(said(watch.lines)).toEqual(["ADDED c@4"]);
    await clock.advance(BOOKMARK_INTERVAL_MS);
    await watch.settle();
    expect(watch.lines[1]).toEqual({
      type: "BOOKMARK",
      object: { kind: "Node", apiVersion: "v1", metadata: { resourceVersion: "4" } },
    });
    await watch.stop();
  });

  test("a watch from a revision etcd has compacted ends with a 410 Expired ERROR event, so the client lists again", async () => {
    const { etcd, app } = await setUp(5);
    etcd.compact(3);
    const watch = await watchLines(await app.request("/api/v1/nodes?watch=1&resourceVersion=2"));
    expect(watch.lines).toEqual([
      { type: "ERROR", object: expect.objectContaining({ code: 410, reason: "Expired", status: "Failure" }) },
    ]);
    expect(watch.ended()).toBe(true);
  });

  test("kubectl get nodes -w gets Table rows, the column headers once", async () => {
    const { app } = await setUp(5);
    const headers = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" };
    const watch = await watchLines(await app.request("/api/v1/nodes?watch=1", { headers }));
    expect(watch.lines.map((l) => l.object.columnDefinitions.length > 0)).toEqual([true, false]);
    expect(watch.lines.map((l) => l.object.rows[0].cells.slice(0, 2))).toEqual([
      ["a", "Ready"],
      ["b", "Ready"],
    ]);
    await watch.stop();
  });

  test("limit and continue page the nodes by name at etcd's revision", async () => {
    const { app } = await setUp(5);
    const first = await (await app.request("/api/v1/nodes?limit=1")).json();
    expect([
      first.items.map((n: { metadata: { name: string } }) => n.metadata.name),
      first.metadata.remainingItemCount,
    ]).toEqual([["a"], 1]);
    const rest = await (await app.request(`/api/v1/nodes?limit=1&continue=${first.metadata.continue}`)).json();
    expect([rest.items.map((n: { metadata: { name: string } }) => n.metadata.name), rest.metadata.continue]).toEqual([
      ["b"],
      undefined,
    ]);
    expect(rest.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
  });
});
