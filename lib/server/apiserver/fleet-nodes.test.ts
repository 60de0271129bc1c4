import { describe, expect, test } from "bun:test";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../../sources/etcd-client.ts";
import { FakeEtcd } from "../../testing/fake-etcd.ts";
import { createFleetNodeRoutes } from "./fleet-nodes.ts";

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
  } as unknown as EtcdClient;
  return { etcd, app: createFleetNodeRoutes({ client, now: () => Date.UTC(2026, 0, 1), graceMs: 20_000 }) };
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
