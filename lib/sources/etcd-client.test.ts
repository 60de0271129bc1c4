// The etcd client against a real etcd (plain, and TLS with auth as a user limited to one node's keys),
// and the in-memory fake, through the FleetStore contract.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  addNodeUser,
  enableAuth,
  startEtcdCluster,
  type EtcdCluster,
  type TlsEtcdCluster,
} from "../testing/etcd-cluster.ts";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { fleetStoreContract } from "../testing/fleet-store-contract.ts";
import { freePortNumber } from "../testing/ports.ts";
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

describeWithServices("etcd client with one member gone", () => {
  let cluster: EtcdCluster;
  let client: EtcdClient;
  beforeAll(async () => {
    cluster = await startEtcdCluster(1);
    const gone = `http://127.0.0.1:${await freePortNumber()}`;
    client = createEtcdClient({ endpoints: [gone, ...cluster.endpoints] });
  });
  afterAll(async () => {
    client.close();
    await cluster.stop();
  });

  test("every lease renewal reaches the live member, although half the streams are opened to the gone one", async () => {
    const lease = await client.grantLease(30);
    for (let i = 0; i < 20; i++) expect(await client.keepAlive(lease)).toBe(30);
  });
});

describeWithServices("etcd client logged in with a password", () => {
  let cluster: TlsEtcdCluster;
  const clients: EtcdClient[] = [];
  beforeAll(async () => {
    cluster = await startEtcdCluster(1, { tls: true });
    enableAuth(cluster);
    addNodeUser(cluster, "token-node", { password: "secret" });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await cluster.stop();
  });
  const open = (tls: EtcdClientOptions["tls"], auth?: EtcdClientOptions["auth"]) => {
    const client = createEtcdClient({ endpoints: cluster.endpoints, tls, ...(auth ? { auth } : {}) });
    clients.push(client);
    return client;
  };

  test("a watch resumes where it was after etcd restarts and forgets its tokens", async () => {
    const user = open(
      { caFile: cluster.ca.caFile, ...cluster.ca.client("token-connection") },
      { username: "token-node", password: "secret" },
    );
    const root = open({ caFile: cluster.ca.caFile, ...cluster.root });
    const prefix = "/registry/hosts/token-node/";
    const { revision } = await user.list(prefix);
    const seen: Array<{ key: string; modRevision: number }> = [];
    const resumed: number[] = [];
    const watch = await user.watch({ prefix }, revision + 1, {
      put: ({ key, modRevision }) => seen.push({ key, modRevision }),
      delete: () => {},
      connected: (from) => resumed.push(from),
    });
    let failed: unknown;
    watch.done.catch((error) => (failed = error));
    await root.put(`${prefix}a`, "1");
    await waitUntil(() => seen.length === 1);
    // etcd restores a login it had not yet written to its backend (committed every 100 ms): wait past that,
    // so the restart forgets the token, as it does in production.
    await new Promise((r) => setTimeout(r, 1000));
    await cluster.kill(0);
    await cluster.restart(0);
    await root.put(`${prefix}b`, "2");
    await waitUntil(() => seen.length === 2 || failed !== undefined);
    expect(failed).toBeUndefined();
    expect(seen.map((s) => s.key)).toEqual([`${prefix}a`, `${prefix}b`]);
    expect(resumed.at(-1)).toBe(seen[0]!.modRevision + 1);
    await watch.cancel();
  });
});

/** Polls `check` every 20 ms for up to 20 s. */
async function waitUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
}

describeWithServices("etcd client on a large prefix", () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await startEtcdCluster(1);
  });
  afterAll(() => cluster.stop());

  test("lists a prefix larger than gRPC's 4 MB message limit, in key order, at one revision", async () => {
    const client = createEtcdClient({ endpoints: cluster.endpoints });
    try {
      const keys = Array.from({ length: 1200 }, (_, i) => `/big/${String(i).padStart(4, "0")}`);
      const value = "x".repeat(8000);
      for (let i = 0; i < keys.length; i += 100)
        await client.apply(keys.slice(i, i + 100).map((key) => ({ key, value })));
      await client.put("/big0", "outside the prefix");
      const { entries, revision } = await client.list("/big/");
      expect(entries.map((e) => e.key)).toEqual(keys);
      expect(revision).toBe((await client.get("/big0")).revision);
    } finally {
      client.close();
    }
  });

  test("lists many prefixes at one revision in few calls, each in key order, paging one over its page, an answer past gRPC's default 4 MB", async () => {
    const client = createEtcdClient({ endpoints: cluster.endpoints });
    try {
      const put = async (keys: string[], value: string) => {
        for (let i = 0; i < keys.length; i += 100)
          await client.apply(keys.slice(i, i + 100).map((key) => ({ key, value })));
      };
      const small = (n: number) => Array.from({ length: 40 }, (_, i) => `/each/${n}/${String(i).padStart(3, "0")}`);
      const prefixes = Array.from({ length: 70 }, (_, n) => `/each/${n}/`);
      for (const n of [0, 1, 2, 35, 69]) await put(small(n), `v${n}`);
      const many = Array.from({ length: 700 }, (_, i) => `/each/36/${String(i).padStart(4, "0")}`);
      await put(many, "m");
      // Six prefixes of 100 keys of 8 kB in one transaction (prefixes 30–59): its answer exceeds gRPC's default limit.
      const large = [40, 41, 42, 43, 44, 45].flatMap((n) =>
        Array.from({ length: 100 }, (_, i) => `/each/${n}/${String(i).padStart(3, "0")}`),
      );
      await put(large, "x".repeat(8000));
      await client.put("/each/1", "outside every prefix");
      const { entries, revision } = await client.listEach(prefixes);
      expect(entries.length).toBe(70);
      for (const n of [0, 1, 2, 35, 69]) expect(entries[n]!.map((e) => e.key)).toEqual(small(n));
      expect(entries[36]!.map((e) => e.key)).toEqual(many);
      expect(
        entries
          .slice(40, 46)
          .flat()
          .map((e) => e.key),
      ).toEqual(large);
      expect(entries[3]).toEqual([]);
      expect(entries[0]![0]!.value).toBe("v0");
      expect(revision).toBe((await client.get("/each/1")).revision);
    } finally {
      client.close();
    }
  });
});
