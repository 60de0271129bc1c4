// The etcd client against a real etcd, and the in-memory fake, through the FleetStore contract.
import { afterAll, beforeAll, describe } from "bun:test";
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
      const client = createEtcdClient({ hosts: cluster.endpoints, dialTimeout: 5000 });
      clients.push(client);
      return client;
    },
    "/contract/",
  );
});
