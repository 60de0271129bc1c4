// The etcd source against real etcd: one member for the basics, three for failover.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { silentLogger } from "../log.ts";
import { put, putSomewhere, remove, startEtcdCluster, type EtcdCluster } from "../testing/etcd-cluster.ts";
import { describeWithServices } from "../testing/services.ts";
import { names, recordSnapshots } from "../testing/snapshots.ts";
import { createEtcdSource, ETCD_DAEMONS, etcdKeyFor, etcdPodKey } from "./etcd.ts";

const pod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "busybox:1.35" }] },
});

describeWithServices("etcd source", () => {
  let single: EtcdCluster;
  beforeAll(async () => {
    single = await startEtcdCluster(1);
  });
  afterAll(() => single.stop());

  test("reads the host's key, then follows puts, an empty list, a broken value and a delete", async () => {
    const key = etcdKeyFor("node-a");
    await put(single.endpoints[0]!, key, JSON.stringify([pod("a")]));
    const r = recordSnapshots(createEtcdSource({ endpoints: single.endpoints, hostname: "node-a" }));
    expect(names(await r.next((s) => s.pods.length === 1))).toEqual(["a"]);
    await put(single.endpoints[0]!, key, `- ${JSON.stringify(pod("a"))}\n- ${JSON.stringify(pod("b"))}\n`);
    expect(names(await r.next((s) => s.pods.length === 2))).toEqual(["a", "b"]);
    await put(single.endpoints[0]!, key, "[{");
    const broken = await r.next((s) => s.rejected.length > 0);
    expect(names(broken)).toEqual(["a", "b"]);
    await put(single.endpoints[0]!, key, "[]");
    expect((await r.next((s) => s.pods.length === 0 && s.rejected.length === 0)).pods).toEqual([]);
    await put(single.endpoints[0]!, key, JSON.stringify([pod("c")]));
    await r.next((s) => s.pods.length === 1);
    await remove(single.endpoints[0]!, key);
    expect((await r.next((s) => s.pods.length === 0)).pods).toEqual([]);
    await r.stop();
  });

  test("one key per pod under the host's pods/ comes with the host's key; every-node pods come where their nodeSelector matches the node's labels", async () => {
    const endpoint = single.endpoints[0]!;
    await put(endpoint, etcdKeyFor("node-p"), JSON.stringify([pod("old-layout")]));
    await put(endpoint, etcdPodKey("node-p", "default", "web"), JSON.stringify(pod("web")));
    await put(endpoint, `${ETCD_DAEMONS}default/agent`, JSON.stringify(pod("agent")));
    const gpuOnly = { ...pod("gpu-agent"), spec: { ...pod("gpu-agent").spec, nodeSelector: { gpu: "yes" } } };
    await put(endpoint, `${ETCD_DAEMONS}default/gpu-agent`, JSON.stringify(gpuOnly));
    const plain = recordSnapshots(createEtcdSource({ endpoints: single.endpoints, hostname: "node-p" }));
    const gpu = recordSnapshots(
      createEtcdSource({ endpoints: single.endpoints, hostname: "node-g", labels: { gpu: "yes" } }),
    );
    expect(names(await plain.next((s) => s.pods.length === 3)).sort()).toEqual(["agent", "old-layout", "web"]);
    expect(names(await gpu.next((s) => s.pods.length === 2)).sort()).toEqual(["agent", "gpu-agent"]);
    await remove(endpoint, `${ETCD_DAEMONS}default/agent`);
    expect(names(await gpu.next((s) => s.pods.length === 1))).toEqual(["gpu-agent"]);
    expect(names(await plain.next((s) => s.pods.length === 2)).sort()).toEqual(["old-layout", "web"]);
    await remove(endpoint, `${ETCD_DAEMONS}default/gpu-agent`);
    await Promise.all([plain.stop(), gpu.stop()]);
  });

  test("a pod under the host's own pods/ wins over the every-node pod of the same name, and the every-node one returns when it goes", async () => {
    const endpoint = single.endpoints[0]!;
    const image = (name: string, tag: string) => ({
      ...pod(name),
      spec: { containers: [{ name: "c", image: `busybox:${tag}` }] },
    });
    await put(endpoint, `${ETCD_DAEMONS}default/pinned`, JSON.stringify(image("pinned", "old")));
    const node = recordSnapshots(createEtcdSource({ endpoints: single.endpoints, hostname: "node-o" }));
    const imageOf = (s: { pods: Array<{ spec: { containers: Array<{ image?: string }> } }> }) =>
      s.pods.map((p) => p.spec.containers[0]!.image);
    expect(imageOf(await node.next((s) => s.pods.length === 1))).toEqual(["busybox:old"]);
    await put(endpoint, etcdPodKey("node-o", "default", "pinned"), JSON.stringify(image("pinned", "new")));
    const pinned = await node.next((s) => imageOf(s)[0] === "busybox:new");
    expect({ images: imageOf(pinned), rejected: pinned.rejected }).toEqual({ images: ["busybox:new"], rejected: [] });
    await remove(endpoint, etcdPodKey("node-o", "default", "pinned"));
    expect(imageOf(await node.next((s) => imageOf(s)[0] === "busybox:old"))).toEqual(["busybox:old"]);
    await remove(endpoint, `${ETCD_DAEMONS}default/pinned`);
    await node.stop();
  });

  test("ConfigMaps and Secrets under the host's configmaps/ and secrets/ keys come with its pods and follow edits", async () => {
    const host = "node-cfg";
    const endpoint = single.endpoints[0]!;
    await put(endpoint, etcdKeyFor(host), JSON.stringify([pod("web")]));
    await put(
      endpoint,
      `/registry/hosts/${host}/configmaps/settings`,
      "{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {mode: fast}}",
    );
    const r = recordSnapshots(createEtcdSource({ endpoints: single.endpoints, hostname: host }));
    const first = await r.next((s) => s.pods.length === 1 && (s.configs ?? []).length === 1);
    expect(first.configs![0]!.data).toEqual({ mode: "fast" });
    await put(
      endpoint,
      `/registry/hosts/${host}/secrets/token`,
      "{apiVersion: v1, kind: Secret, metadata: {name: token}, stringData: {t: x}}",
    );
    const both = await r.next((s) => (s.configs ?? []).length === 2);
    expect(both.configs!.map((c) => `${c.kind}/${c.metadata.name}`).sort()).toEqual([
      "ConfigMap/settings",
      "Secret/token",
    ]);
    await put(endpoint, `/registry/hosts/${host}/configmaps/settings`, JSON.stringify(pod("misplaced")));
    const misplaced = await r.next((s) => s.rejected.length > 0);
    expect(misplaced.pods.map((p) => p.metadata.name)).toEqual(["web"]);
    expect(misplaced.rejected[0]!.issues[0]!.detail).toContain("only ConfigMap documents are read from");
    await remove(endpoint, `/registry/hosts/${host}/secrets/token`);
    await remove(endpoint, `/registry/hosts/${host}/configmaps/settings`);
    expect((await r.next((s) => (s.configs ?? []).length === 0 && s.rejected.length === 0)).pods).toHaveLength(1);
    await r.stop();
  });

  test("an absent key is an empty source, and other hosts' keys are ignored", async () => {
    await put(single.endpoints[0]!, etcdKeyFor("node-b"), JSON.stringify([pod("not-mine")]));
    const r = recordSnapshots(createEtcdSource({ endpoints: single.endpoints, hostname: "node-c" }));
    expect((await r.next(() => true)).pods).toEqual([]);
    await r.stop();
  });
});

describeWithServices("etcd source on a three-member cluster", () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await startEtcdCluster(3);
  }, 30_000);
  afterAll(() => cluster.stop());

  test("keeps watching through the other members when one is killed, keeps pods when all are gone, resumes after", async () => {
    const key = etcdKeyFor("fleet-node");
    await putSomewhere(cluster.endpoints, key, JSON.stringify([pod("v1")]));
    // The source's warnings are the events to wait on: it reports each failed session as it happens.
    const warnings: string[] = [];
    const noticed: Array<() => void> = [];
    const log = {
      ...silentLogger,
      warn: (message: string) => {
        warnings.push(message);
        for (const resolve of noticed.splice(0)) resolve();
      },
    };
    const lostWatches = () => warnings.filter((w) => w.includes("lost the etcd watch")).length;
    const moreLostWatches = async (count: number) => {
      const start = lostWatches();
      while (lostWatches() < start + count) await new Promise<void>((resolve) => noticed.push(resolve));
    };
    const r = recordSnapshots(createEtcdSource({ endpoints: cluster.endpoints, hostname: "fleet-node", log }));
    await r.next((s) => names(s).includes("v1"));

    await cluster.kill(0);
    await putSomewhere(cluster.endpoints.slice(1), key, JSON.stringify([pod("v2")]));
    expect(names(await r.next((s) => names(s).includes("v2"), 20_000))).toEqual(["v2"]);

    const before = r.snapshots.length; // killing the second member already loses the quorum
    await cluster.kill(1);
    await cluster.kill(2);
    // Reconnects failed three times against a cluster with no member left: the source has lived through the
    // outage, not merely not looked yet.
    await moreLostWatches(3);
    expect(r.snapshots.slice(before).filter((s) => s.pods.length === 0)).toEqual([]);

    await Promise.all([cluster.restart(0), cluster.restart(1), cluster.restart(2)]);
    await putSomewhere(cluster.endpoints, key, JSON.stringify([pod("v3")]));
    expect(names(await r.next((s) => names(s).includes("v3"), 40_000))).toEqual(["v3"]);
    await r.stop();
  }, 90_000);
});
