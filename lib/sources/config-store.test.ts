import { describe, expect, test } from "bun:test";
import { createPodStore } from "./store.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import { formatIssue } from "../api/types.ts";

function recorder() {
  const store = createPodStore({ sources: ["file", "etcd"] });
  const changes: string[][] = [];
  store.subscribeConfigs((changed) => changes.push([...changed].sort()));
  return { store, changes };
}

describe("ConfigMaps and Secrets in the merge store", () => {
  test("a snapshot's objects are looked up by kind, namespace and name; a later SET without them removes them", () => {
    const { store, changes } = recorder();
    store.apply("file", {
      pods: [testPod("web")],
      rejected: [],
      configs: [
        testConfig("ConfigMap", "settings", { data: { mode: "fast" } }),
        testConfig("Secret", "token", { stringData: { token: "t" } }, { namespace: "ops" }),
      ],
    });
    expect(store.configs.get("ConfigMap", "default", "settings")?.data).toEqual({ mode: "fast" });
    expect(store.configs.get("Secret", "ops", "token")).toBeDefined();
    expect(store.configs.get("Secret", "default", "token")).toBeUndefined();
    store.apply("file", { pods: [testPod("web")], rejected: [], configs: [] });
    expect(store.configs.get("ConfigMap", "default", "settings")).toBeUndefined();
    expect(changes).toEqual([
      ["ConfigMap/default/settings", "Secret/ops/token"],
      ["ConfigMap/default/settings", "Secret/ops/token"],
    ]);
  });

  test("an unchanged object notifies nothing; a changed one names only itself", () => {
    const { store, changes } = recorder();
    const a = testConfig("ConfigMap", "a", { data: { k: "1" } });
    const b = testConfig("ConfigMap", "b", { data: { k: "1" } });
    store.mergeConfigs("file", "SET", [a, b]);
    store.mergeConfigs("file", "SET", [testConfig("ConfigMap", "a", { data: { k: "1" } }), b]);
    store.mergeConfigs("file", "SET", [testConfig("ConfigMap", "a", { data: { k: "2" } }), b]);
    expect(changes).toEqual([["ConfigMap/default/a", "ConfigMap/default/b"], ["ConfigMap/default/a"]]);
  });

  test("an invalid edit is reported with its field path and the last good version stays", () => {
    const { store } = recorder();
    store.mergeConfigs("file", "SET", [testConfig("ConfigMap", "a", { data: { k: "1" } })]);
    store.mergeConfigs("file", "SET", [testConfig("ConfigMap", "a", { data: { "bad/key": "1" } })]);
    expect(store.configs.get("ConfigMap", "default", "a")?.data).toEqual({ k: "1" });
    const [problem] = store.rejected();
    expect(problem?.kind).toBe("ConfigMap");
    expect(problem?.pod).toBe("default/a");
    expect(formatIssue(problem!.issues[0]!)).toStartWith('data[bad/key]: Invalid value: "bad/key"');
  });

  test("an immutable object is never changed: the edit is refused with Kubernetes' wording", () => {
    const { store, changes } = recorder();
    store.mergeConfigs("file", "SET", [testConfig("Secret", "s", { stringData: { k: "1" }, immutable: true })]);
    store.mergeConfigs("file", "SET", [testConfig("Secret", "s", { stringData: { k: "2" }, immutable: true })]);
    expect(store.configs.get("Secret", "default", "s")?.stringData).toEqual({ k: "1" });
    expect(formatIssue(store.rejected()[0]!.issues[0]!)).toStartWith(
      "data: Forbidden: field is immutable when `immutable` is set",
    );
    expect(changes).toHaveLength(1);
    store.mergeConfigs("file", "SET", []);
    store.mergeConfigs("file", "SET", [testConfig("Secret", "s", { stringData: { k: "2" }, immutable: true })]);
    expect(store.configs.get("Secret", "default", "s")?.stringData).toEqual({ k: "2" });
  });

  test("the first source to list a name keeps it; the other is reported as a duplicate", () => {
    const { store } = recorder();
    store.mergeConfigs("file", "SET", [testConfig("ConfigMap", "a", { data: { from: "file" } })]);
    store.mergeConfigs("etcd", "SET", [testConfig("ConfigMap", "a", { data: { from: "etcd" } }, { source: "etcd" })]);
    expect(store.configs.get("ConfigMap", "default", "a")?.data).toEqual({ from: "file" });
    expect(store.rejected()[0]?.issues[0]?.detail).toContain("already comes from the file source");
  });
});
