import { describe, expect, test } from "bun:test";
import type { ApiClient } from "./api-client.ts";
import { getCommand, getPath, printTable, resourceKind, type GetOptions } from "./get.ts";

const TABLE = {
  columnDefinitions: [
    { name: "Name", priority: 0 },
    { name: "Data", priority: 0 },
    { name: "Age", priority: 0 },
    { name: "Extra", priority: 1 },
  ],
  rows: [
    { cells: ["site", 1, "5m", "x"], object: { metadata: { namespace: "default" } } },
    { cells: ["db-config", 12, "3d", null], object: { metadata: { namespace: "prod" } } },
  ],
};

/** A client answering each path with what `answers` holds for it, recording the paths asked. */
function client(answers: Record<string, unknown>) {
  const asked: Array<{ path: string; table: boolean }> = [];
  const api: ApiClient = {
    async get<T>(path: string, options: { table?: boolean } = {}) {
      asked.push({ path, table: options.table === true });
      return answers[path] as T;
    },
  };
  return { api, asked };
}

const options = (over: Partial<GetOptions>): GetOptions => ({
  kind: resourceKind("cm"),
  namespace: "default",
  allNamespaces: false,
  format: "table",
  ...over,
});

describe("kubelet get", () => {
  test("takes kubectl's names for resources, and names the ones it reads when given another", () => {
    expect(["po", "pod", "pods"].map((n) => resourceKind(n).resource)).toEqual(["pods", "pods", "pods"]);
    expect(resourceKind("NS").resource).toBe("namespaces");
    expect(() => resourceKind("deployments")).toThrow(
      'the server doesn\'t have a resource type "deployments" that kubelet get reads: use pods, nodes, events, namespaces, configmaps, secrets',
    );
  });

  test("reads the namespace's collection, all namespaces with -A, cluster resources without one, selectors in the query", () => {
    expect(getPath(options({}))).toBe("/api/v1/namespaces/default/configmaps");
    expect(getPath(options({ allNamespaces: true }))).toBe("/api/v1/configmaps");
    expect(getPath(options({ name: "site", namespace: "prod" }))).toBe("/api/v1/namespaces/prod/configmaps/site");
    expect(getPath(options({ kind: resourceKind("nodes"), namespace: "prod" }))).toBe("/api/v1/nodes");
    expect(getPath(options({ labelSelector: "app=web", fieldSelector: "metadata.name=x" }))).toBe(
      "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx",
    );
  });

  test("prints the Table's priority-0 columns, upper-cased and aligned as kubectl does; -o wide adds the others", () => {
    expect(printTable(TABLE, { wide: false, withNamespace: false })).toBe(
      "NAME        DATA   AGE\nsite        1      5m\ndb-config   12     3d\n",
    );
    expect(printTable(TABLE, { wide: true, withNamespace: true })).toBe(
      "NAMESPACE   NAME        DATA   AGE   EXTRA\ndefault     site        1      5m    x\nprod        db-config   12     3d    <none>\n",
    );
  });

  test("asks for a Table, and says No resources found in the namespace when there are none", async () => {
    const { api, asked } = client({ "/api/v1/namespaces/default/configmaps": { columnDefinitions: [], rows: [] } });
    expect(await getCommand(api, options({}))).toEqual({ out: "", note: "No resources found in default namespace." });
    expect(asked).toEqual([{ path: "/api/v1/namespaces/default/configmaps", table: true }]);
  });

  test("-A prints the NAMESPACE column from each row's object", async () => {
    const { api } = client({ "/api/v1/configmaps": TABLE });
    expect((await getCommand(api, options({ allNamespaces: true }))).out).toStartWith("NAMESPACE   NAME ");
  });

  test("-o json prints a list as kubectl's List, -o name as kind/name, one object as itself", async () => {
    const list = { kind: "ConfigMapList", items: [{ kind: "ConfigMap", metadata: { name: "site" } }], metadata: {} };
    const { api } = client({
      "/api/v1/namespaces/default/configmaps": list,
      "/api/v1/namespaces/default/configmaps/site": list.items[0],
    });
    const json = JSON.parse((await getCommand(api, options({ format: "json" }))).out);
    expect(json).toEqual({ apiVersion: "v1", items: list.items, kind: "List", metadata: { resourceVersion: "" } });
    expect((await getCommand(api, options({ format: "name" }))).out).toBe("configmap/site\n");
    expect((await getCommand(api, options({ format: "yaml", name: "site" }))).out).toBe(
      "kind: ConfigMap\nmetadata:\n  name: site\n",
    );
  });
});
