import { describe, expect, test } from "bun:test";
import { createPodStore, type NotificationMode } from "./store.ts";
import { testPod } from "../testing/pods.ts";
import type { Pod, PodUpdate } from "../api/types.ts";

// Go's table used a pod without containers; Kubernetes requires one, so "more containers" stands in.
const foo = () => testPod("foo");
const fooWithContainers = () =>
  testPod("foo", {
    containers: [
      { name: "a", image: "busybox:1.35" },
      { name: "b", image: "busybox:1.35" },
    ],
  });
const invalidFoo = () => testPod("foo", { containers: [{ name: "c", image: "" }] });

function recorder(mode: NotificationMode, sources = ["file" as const]) {
  const store = createPodStore({ mode, sources: [...sources] });
  const updates: PodUpdate[] = [];
  store.subscribe((u) => updates.push(u));
  const seen = () =>
    updates.map(
      (u) => `${u.op} ${u.pods.map((p) => `${p.metadata.name}${p.spec.containers.length > 1 ? "+c" : ""}`).join(",")}`,
    );
  return { store, updates, seen };
}

describe("the Go v0.4 config test table", () => {
  test("Incremental: ADD foo emits ADD foo; an invalid UPDATE emits nothing and keeps foo", () => {
    const { store, seen } = recorder("Incremental");
    store.merge("file", "ADD", [fooWithContainers()]);
    store.merge("file", "UPDATE", [invalidFoo()]);
    expect(seen()).toEqual(["ADD foo+c"]);
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["foo"]);
    expect(store.rejected()[0]?.issues[0]?.path).toBe("spec.containers[0].image");
  });

  test("SnapshotAndUpdates: ADD foo emits SET [foo]; ADD foo with containers emits one UPDATE and no SET", () => {
    const { store, seen } = recorder("SnapshotAndUpdates");
    store.merge("file", "ADD", [foo()]);
    store.merge("file", "ADD", [fooWithContainers()]);
    expect(seen()).toEqual(["SET foo", "UPDATE foo+c"]);
  });

  test("Snapshot: the same ends with SET [foo+containers]", () => {
    const { store, seen } = recorder("Snapshot");
    store.merge("file", "ADD", [foo()]);
    store.merge("file", "ADD", [fooWithContainers()]);
    expect(seen()).toEqual(["SET foo", "SET foo+c"]);
  });

  test("Incremental: ADD, UPDATE, REMOVE echo the stored pod", () => {
    const { store, seen, updates } = recorder("Incremental");
    store.merge("file", "ADD", [foo()]);
    store.merge("file", "ADD", [fooWithContainers()]);
    store.merge("file", "REMOVE", [foo()]);
    expect(seen()).toEqual(["ADD foo", "UPDATE foo+c", "REMOVE foo+c"]);
    expect(updates[2]!.pods[0]!.spec.containers).toHaveLength(2);
  });

  test("Incremental: ADD [foo, foo2, foo3] then SET [foo2 changed, foo3, foo4] emits REMOVE foo, ADD foo4, UPDATE foo2", () => {
    const { store, seen } = recorder("Incremental");
    store.merge("file", "ADD", [testPod("foo"), testPod("foo2"), testPod("foo3")]);
    store.merge("file", "SET", [testPod("foo2", { restartPolicy: "Never" }), testPod("foo3"), testPod("foo4")]);
    expect(seen()).toEqual(["ADD foo,foo2,foo3", "REMOVE foo", "ADD foo4", "UPDATE foo2"]);
  });

  for (const mode of ["Snapshot", "SnapshotAndUpdates", "Incremental"] as const) {
    test(`${mode}: a SET with nothing changed emits nothing`, () => {
      const { store, updates } = recorder(mode);
      store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
      const count = updates.length;
      expect(count).toBeGreaterThan(0); // the first SET did emit: silence below is the store's choice
      store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
      expect(updates.length).toBe(count);
    });
  }
});

describe("merge store", () => {
  test("SET from a source removes the pods it no longer lists and emits the merged SET", () => {
    const { store, updates } = recorder("SnapshotAndUpdates");
    store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
    store.apply("file", { pods: [testPod("b")], rejected: [] });
    expect(updates.at(-1)).toMatchObject({ op: "SET", source: "*" });
    expect(updates.at(-1)!.pods.map((p) => p.metadata.name)).toEqual(["b"]);
  });

  test("the first of two pods with the same name in one source wins and the second is reported", () => {
    const { store } = recorder("Snapshot");
    store.apply("file", {
      pods: [
        testPod("a", {}, { origin: "one.yaml" }),
        testPod("a", { restartPolicy: "Never" }, { origin: "two.yaml" }),
      ],
      rejected: [],
    });
    expect(store.mergedState()).toHaveLength(1);
    expect(store.mergedState()[0]!.spec.restartPolicy).toBe("Always");
    expect(store.rejected()).toMatchObject([
      { origin: "two.yaml", pod: "default/a", issues: [{ type: "Duplicate value" }] },
    ]);
  });

  test("a name claimed by two sources stays with the source that claimed it first", () => {
    const { store } = recorder("Snapshot", ["file", "url"] as never);
    store.apply("url", { pods: [testPod("a", {}, { source: "url" })], rejected: [] });
    store.apply("file", { pods: [testPod("a")], rejected: [] });
    expect(store.mergedState().map((p) => p.metadata.annotations["kubernetes.io/config.source"])).toEqual(["url"]);
    expect(store.rejected()[0]).toMatchObject({ source: "file", pod: "default/a" });
    // Once the first source lets go, the other may have it.
    store.apply("url", { pods: [], rejected: [] });
    store.apply("file", { pods: [testPod("a")], rejected: [] });
    expect(store.mergedState().map((p) => p.metadata.annotations["kubernetes.io/config.source"])).toEqual(["file"]);
  });

  test("an invalid edit in a SET keeps the last good version of that pod", () => {
    const { store } = recorder("SnapshotAndUpdates");
    store.apply("file", { pods: [testPod("foo")], rejected: [] });
    store.apply("file", { pods: [invalidFoo()], rejected: [] });
    expect(store.mergedState()[0]!.spec.containers[0]!.image).toBe("local/busybox:latest");
    expect(store.rejected()).toHaveLength(1);
    store.apply("file", { pods: [testPod("foo")], rejected: [] });
    expect(store.rejected()).toHaveLength(0);
  });

  test("parse rejections are reported until the source's next SET no longer has them", () => {
    const { store } = recorder("Snapshot");
    const parseError = {
      source: "file" as const,
      origin: "bad.yaml",
      document: 0,
      issues: [{ path: "<document>", type: "Invalid value", severity: "error" as const }],
    };
    store.apply("file", { pods: [], rejected: [parseError] });
    expect(store.rejected()).toEqual([parseError]);
    store.apply("file", { pods: [], rejected: [] });
    expect(store.rejected()).toEqual([]);
  });

  test("updates emitted by a listener that merges re-entrantly are delivered in order", () => {
    const store = createPodStore({ mode: "Incremental", sources: ["file"] });
    const seen: string[] = [];
    store.subscribe((u) => {
      seen.push(`${u.op} ${u.pods[0]!.metadata.name}`);
      if (u.pods[0]!.metadata.name === "a") store.merge("http", "ADD", [testPod("b", {}, { source: "http" })]);
    });
    store.subscribe((u) => seen.push(`second ${u.op} ${u.pods[0]!.metadata.name}`));
    store.merge("file", "ADD", [testPod("a")]);
    expect(seen).toEqual(["ADD a", "second ADD a", "ADD b", "second ADD b"]);
  });

  test("sync re-sends the merged state as a SET, even when it is empty", () => {
    const { store, updates } = recorder("SnapshotAndUpdates");
    store.sync();
    expect(updates).toEqual([{ op: "SET", pods: [], source: "*" }]);
  });

  test("is ready only after every configured source has merged once", async () => {
    const store = createPodStore({ sources: ["file", "etcd"] });
    let ready = false;
    void store.whenAllSourcesReady().then(() => (ready = true));
    store.apply("file", { pods: [], rejected: [] });
    store.merge("http", "ADD", [testPod("pushed", {}, { source: "http" })]);
    await Promise.resolve();
    expect(store.allSourcesReady()).toBe(false);
    expect(ready).toBe(false);
    store.apply("etcd", { pods: [], rejected: [] });
    await Promise.resolve();
    expect(store.allSourcesReady()).toBe(true);
    expect(ready).toBe(true);
  });

  test("warnings are logged once per version of a pod, and the pod still runs", () => {
    const lines: string[] = [];
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => lines.push(m), child: () => log };
    const store = createPodStore({ sources: ["file"], log });
    const pod: Pod = testPod("w", { nodeSelector: { disk: "ssd" } });
    store.apply("file", { pods: [pod], rejected: [] });
    store.apply("file", { pods: [pod], rejected: [] });
    expect(lines.filter((l) => l.includes("spec.nodeSelector"))).toHaveLength(1);
    expect(store.mergedState()).toHaveLength(1);
  });

  test("privileged pods are dropped unless allowed", () => {
    const privileged = testPod("p", {
      containers: [{ name: "c", image: "busybox:1.35", securityContext: { privileged: true } }],
    });
    expect(createPodStoreWith(false, privileged)).toHaveLength(0);
    expect(createPodStoreWith(true, privileged)).toHaveLength(1);
  });
});

function createPodStoreWith(allowPrivileged: boolean, pod: Pod): Pod[] {
  const store = createPodStore({ sources: ["file"], allowPrivileged });
  store.apply("file", { pods: [pod], rejected: [] });
  return store.mergedState();
}
