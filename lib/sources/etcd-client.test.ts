// The etcd client against a real etcd (plain, and TLS with auth as a user limited to one node's keys),
// and the in-memory fake, through the FleetStore contract.
import { afterAll, beforeAll, describe } from "bun:test";
import { addNodeUser, enableAuth, startEtcdCluster, type EtcdCluster } from "../testing/etcd-cluster.ts";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { fleetStoreContract } from "../testing/fleet-store-contract.ts";
import { describeWithServices } from "../testing/services.ts";
import { createEtcdClient, type EtcdClient, type EtcdClientOptions } from "./etcd-client.ts";

describe("fake etcd", () => {
  fleetStoreContract("fake", async () => new FakeEtcd(), "/contract/");
});

/** The contract against a real etcd: `start` brings a cluster up and says how clients connect to it. */
function realContract(
  name: string,
  start: () => Promise<{ cluster: EtcdCluster; options: EtcdClientOptions }>,
  prefix: string,
) {
  describeWithServices(`etcd client (${name})`, () => {
    let started: { cluster: EtcdCluster; options: EtcdClientOptions };
    const clients: EtcdClient[] = [];
    beforeAll(async () => {
      started = await start();
    });
    afterAll(async () => {
      for (const c of clients) c.close();
      await started.cluster.stop();
    });
    fleetStoreContract(
      name,
      async () => {
        const client = createEtcdClient(started.options);
        clients.push(client);
        return client;
      },
      prefix,
    );
  });
}

realContract(
  "real",
  async () => {
    const cluster = await startEtcdCluster(1);
    return { cluster, options: { endpoints: cluster.endpoints } };
  },
  "/contract/",
);

realContract(
  "TLS, as a user limited to one node's keys",
  async () => {
    const cluster = await startEtcdCluster(1, { tls: true });
    enableAuth(cluster);
    const user = addNodeUser(cluster, "contract-node");
    return { cluster, options: { endpoints: cluster.endpoints, tls: { caFile: cluster.ca.caFile, ...user } } };
  },
  "/registry/hosts/contract-node/",
);
