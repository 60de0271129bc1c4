// The etcd client against a real etcd, and the in-memory fake, through the FleetStore contract.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startEtcdCluster, type EtcdCluster } from "../testing/etcd-cluster.ts";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { fleetStoreContract } from "../testing/fleet-store-contract.ts";
import { describeWithServices } from "../testing/services.ts";
import { createEtcdClient, type EtcdClient } from "./etcd-client.ts";

describe("fake etcd", () => {
  fleetStoreContract("fake", async () => new FakeEtcd(), "/contract/");
});

describeWithServices("etcd client", () => {
  let cluster: EtcdCluster;
  const clients: EtcdClient[] = [];
  beforeAll(async () => {
    cluster = await startEtcdCluster(1);
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await cluster.stop();
  });
  fleetStoreContract(
    "real",
    async () => {
      const client = createEtcdClient({ endpoints: cluster.endpoints });
      clients.push(client);
      return client;
    },
    "/contract/",
  );

  test("lists a prefix larger than gRPC's 4 MB message limit, in key order, at one revision", async () => {
    const client = createEtcdClient({ endpoints: cluster.endpoints });
    clients.push(client);
    const keys = Array.from({ length: 1200 }, (_, i) => `/big/${String(i).padStart(4, "0")}`);
    const value = "x".repeat(8000);
    for (let i = 0; i < keys.length; i += 100)
      await client.apply(keys.slice(i, i + 100).map((key) => ({ key, value })));
    await client.put("/big0", "outside the prefix");
    const { entries, revision } = await client.list("/big/");
    expect(entries.map((e) => e.key)).toEqual(keys);
    expect(revision).toBe((await client.get("/big0")).revision);
  });
});
