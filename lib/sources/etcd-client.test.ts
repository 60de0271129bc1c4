// The etcd client against a real etcd (plain, and TLS with auth as a user limited to one node's keys),
// and the in-memory fake, through the FleetStore contract.
import { afterAll, beforeAll, describe } from "bun:test";
import {
  addNodeUser,
  enableAuth,
  startEtcdCluster,
  type EtcdCluster,
  type TlsEtcdCluster,
} from "../testing/etcd-cluster.ts";
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
});

describeWithServices("etcd client over TLS, as a user limited to one node's keys", () => {
  let cluster: TlsEtcdCluster;
  const clients: EtcdClient[] = [];
  let user: { certFile: string; keyFile: string };
  beforeAll(async () => {
    cluster = await startEtcdCluster(1, { tls: true });
    enableAuth(cluster);
    user = addNodeUser(cluster, "contract-node");
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await cluster.stop();
  });
  fleetStoreContract(
    "tls",
    async () => {
      const client = createEtcdClient({ endpoints: cluster.endpoints, tls: { caFile: cluster.ca.caFile, ...user } });
      clients.push(client);
      return client;
    },
    "/registry/hosts/contract-node/",
  );
});
