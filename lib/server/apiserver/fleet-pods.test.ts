import { describe, expect, test } from "bun:test";
import { fleetKeys } from "../../node/status/fleet-reporter.ts";
import { ETCD_DAEMONS, etcdPodKey } from "../../sources/etcd.ts";
import type { EtcdClient } from "../../sources/etcd-client.ts";
import { FakeEtcd } from "../../testing/fake-etcd.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createFleetPodFeed, FLEET_PLACED } from "./fleet-pods.ts";
import { createPodCache } from "./watch.ts";

const manifest = (name: string) =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: { containers: [{ name: "app", image: "busybox" }] },
  });
const running = JSON.stringify({
  phase: "Running",
  containerStatuses: [{ name: "app", image: "busybox", ready: true }],
});

/** A fake etcd with nodes a and b registered. */
async function fleet() {
  const etcd = new FakeEtcd();
  await etcd.apply([
    { key: fleetKeys.node("a"), value: JSON.stringify({ metadata: { name: "a" } }) },
    { key: fleetKeys.node("b"), value: JSON.stringify({ metadata: { name: "b" } }) },
  ]);
  const feed = createFleetPodFeed(etcd as unknown as EtcdClient);
  return { etcd, feed };
}

describe("the fleet's pod feed", () => {
  test("lists every node's pods with spec.nodeName, the placed manifest and the status the node reports", async () => {
    const { etcd, feed } = await fleet();
    await etcd.apply([
      { key: etcdPodKey("a", "default", "web"), value: manifest("web") },
      { key: fleetKeys.status("a", "default", "web"), value: running },
      { key: fleetKeys.status("b", "kube-system", "static"), value: running },
    ]);
    await feed.start();
    const pods = feed.pods().map((p) => [p.metadata.namespace, p.metadata.name, p.spec.nodeName, p.status?.phase]);
    expect(pods.sort()).toEqual([
      ["default", "web", "a", "Running"],
      ["kube-system", "static", "b", "Running"],
    ]);
    const web = feed.pods().find((p) => p.metadata.name === "web")!;
    expect(web.metadata.annotations[FLEET_PLACED]).toBe("default/web");
    expect(web.spec.containers[0]!.image).toBe("busybox");
    // A pod the node runs from its own files is served, but not as a placement the API may change.
    const stat = feed.pods().find((p) => p.metadata.name === "static")!;
    expect(stat.metadata.annotations[FLEET_PLACED]).toBeUndefined();
    expect(stat.spec.containers.map((c) => c.name)).toEqual(["app"]);
  });

  test("a placed pod carries the annotations its manifest has and kubelet.fleet/placed, and no other the feed adds", async () => {
    const { etcd, feed } = await fleet();
    const written = JSON.parse(manifest("web"));
    written.metadata.annotations = { "kubelet.io/manifest-hash": "0123456789abcdef", "kubelet.fleet/selector": "" };
    await etcd.apply([
      { key: etcdPodKey("a", "default", "web"), value: JSON.stringify(written) },
      { key: `${ETCD_DAEMONS}default/agent`, value: manifest("agent") },
      { key: fleetKeys.status("b", "default", "agent"), value: running },
    ]);
    await feed.start();
    const annotations = Object.fromEntries(feed.pods().map((p) => [p.metadata.name, p.metadata.annotations]));
    expect(annotations).toEqual({
      web: { ...written.metadata.annotations, [FLEET_PLACED]: "default/web" },
      agent: { [FLEET_PLACED]: "default/agent" },
    });
  });

  test("a pod placed on every node is served once per node as <name>-<node>; one placed nowhere yet is Pending", async () => {
    const { etcd, feed } = await fleet();
    await etcd.apply([
      { key: `${ETCD_DAEMONS}default/agent`, value: manifest("agent") },
      { key: fleetKeys.status("a", "default", "agent"), value: running },
      { key: fleetKeys.status("b", "default", "agent"), value: running },
      { key: etcdPodKey("b", "default", "new"), value: manifest("new") },
    ]);
    await feed.start();
    const names = feed.pods().map((p) => `${p.metadata.name}@${p.spec.nodeName}:${p.status?.phase}`);
    expect(names.sort()).toEqual(["agent-a@a:Running", "agent-b@b:Running", "new@b:Pending"]);
    expect(feed.pods().find((p) => p.metadata.name === "agent-a")!.metadata.annotations[FLEET_PLACED]).toBe(
      "default/agent",
    );
  });

  test("after a change only the pods it touches are new objects; a second copy renames the first, a new object too", async () => {
    const { etcd, feed } = await fleet();
    // web placed on a and not started yet, db a's own, agent placed on every node and reported by a only.
    const placed = [etcdPodKey("a", "default", "web"), `${ETCD_DAEMONS}default/agent`];
    const reported = [fleetKeys.status("a", "default", "db"), fleetKeys.status("a", "default", "agent")];
    await etcd.apply([
      ...placed.map((key) => ({ key, value: manifest(key.slice(key.lastIndexOf("/") + 1)) })),
      ...reported.map((key) => ({ key, value: running })),
    ]);
    await feed.start();
    const byName = () => new Map(feed.pods().map((p) => [p.metadata.name, p]));
    const before = byName();
    await etcd.apply([{ key: fleetKeys.status("a", "default", "web"), value: running }]);
    const after = byName();
    expect(after.get("db")).toBe(before.get("db")!);
    expect(after.get("agent")).toBe(before.get("agent")!);
    expect(after.get("web")).not.toBe(before.get("web")!);
    expect(after.get("web")!.status?.phase).toBe("Running");
    // The agent's second copy (on b) makes both `agent-<node>`: the one on a is rebuilt with its new name.
    await etcd.apply([{ key: fleetKeys.status("b", "default", "agent"), value: running }]);
    expect([...byName().keys()].sort()).toEqual(["agent-a", "agent-b", "db", "web"]);
    expect(byName().get("db")).toBe(before.get("db")!);
  });

  test("changes in etcd reach the feed through its watch, with etcd's revision as the version", async () => {
    const { etcd, feed } = await fleet();
    await feed.start();
    let told = 0;
    feed.onChange(() => told++);
    expect(feed.pods()).toEqual([]);
    await etcd.apply([{ key: fleetKeys.status("b", "default", "late"), value: running }]);
    expect(told).toBe(1);
    expect(feed.version()).toBe(etcd.revision);
    expect(feed.pods().map((p) => p.metadata.name)).toEqual(["late"]);
    await etcd.apply([{ key: fleetKeys.status("b", "default", "late") }]);
    expect(feed.pods()).toEqual([]);
    // Events, revisions and other records change nothing served.
    await etcd.apply([{ key: fleetKeys.event("b", "default", "late.1"), value: "{}" }]);
    expect(told).toBe(2);
  });

  test("the pod cache stamps the feed's pods with etcd revisions, so two servers agree on a resourceVersion", async () => {
    const { etcd, feed } = await fleet();
    await feed.start();
    const other = createFleetPodFeed(etcd as unknown as EtcdClient);
    await other.start();
    const clocks = [new FakeClock(1_000), new FakeClock(9_000_000)];
    const caches = [createPodCache(feed, { clock: clocks[0]! }), createPodCache(other, { clock: clocks[1]! })];
    await etcd.apply([{ key: fleetKeys.status("a", "default", "web"), value: running }]);
    const versions = caches.map((cache) => cache.get("default", "web")!.metadata.resourceVersion);
    expect(versions).toEqual([String(etcd.revision), String(etcd.revision)]);
    expect(caches[0]!.list().revision).toBe(etcd.revision);
  });

  test("a watch that ends (etcd compacted the revision it resumes from) relists: what changed meanwhile is served", async () => {
    const { etcd } = await fleet();
    await etcd.apply([
      { key: fleetKeys.status("a", "default", "web"), value: running },
      { key: fleetKeys.status("b", "default", "db"), value: running },
    ]);
    const first: { cancel?: () => Promise<void>; fail?: (error: Error) => void } = {};
    const client = {
      list: (prefix: string) => etcd.list(prefix),
      watch: async (...args: Parameters<FakeEtcd["watch"]>) => {
        const watch = await etcd.watch(...args);
        if (first.cancel) return watch;
        first.cancel = watch.cancel;
        const done = new Promise<void>((_, reject) => (first.fail = reject));
        return { done, cancel: watch.cancel };
      },
    } as unknown as EtcdClient;
    const feed = createFleetPodFeed(client);
    await feed.start();
    const before = feed.version();
    const names = () =>
      feed
        .pods()
        .map((p) => p.metadata.name)
        .sort();
    expect(names()).toEqual(["db", "web"]);
    // Lost: these changes reach no watch, and are seen only by the relist.
    await first.cancel!();
    await etcd.apply([{ key: fleetKeys.status("a", "default", "web") }]);
    await etcd.apply([{ key: fleetKeys.status("b", "default", "cache"), value: running }]);
    const relisted = new Promise<void>((resolve) => feed.onChange(resolve));
    first.fail!(new Error("watching /registry/…: mvcc: required revision has been compacted"));
    await relisted;
    expect(feed.relists()).toBe(1);
    expect(names()).toEqual(["cache", "db"]);
    expect(feed.version()).toBeGreaterThan(before);
    // The new watch goes on from the relist's revision.
    await etcd.apply([{ key: fleetKeys.status("a", "default", "api"), value: running }]);
    expect(names()).toEqual(["api", "cache", "db"]);
    await feed.stop();
  });

  test("a relist etcd refuses is tried again a second later on the clock, until one succeeds", async () => {
    const { etcd } = await fleet();
    await etcd.apply([{ key: fleetKeys.status("a", "default", "web"), value: running }]);
    const clock = new FakeClock();
    const state: { down: boolean; refused?: () => void; fail?: (error: Error) => void } = { down: false };
    const client = {
      list: async (prefix: string) => {
        if (!state.down) return etcd.list(prefix);
        state.refused?.();
        throw new Error("etcd unreachable");
      },
      watch: async (...args: Parameters<FakeEtcd["watch"]>) => {
        const watch = await etcd.watch(...args);
        if (state.fail) return watch;
        return { done: new Promise<void>((_, reject) => (state.fail = reject)), cancel: watch.cancel };
      },
    } as unknown as EtcdClient;
    const feed = createFleetPodFeed(client, { clock });
    await feed.start();
    state.down = true;
    const refused = new Promise<void>((resolve) => (state.refused = resolve));
    state.fail!(new Error("watch lost"));
    await refused;
    await etcd.apply([{ key: fleetKeys.status("a", "default", "api"), value: running }]);
    state.down = false;
    const relisted = new Promise<void>((resolve) => feed.onChange(resolve));
    await clock.advance(1000);
    await relisted;
    expect(
      feed
        .pods()
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(["api", "web"]);
    await feed.stop();
  });
});
