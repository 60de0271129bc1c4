import { describe, expect, test } from "bun:test";
import { createConfigStore } from "../../sources/config-store.ts";
import { apiApp } from "../../testing/api-app.ts";
import type { ServedConfig } from "./configmaps.ts";
import { createConfigObjectRoutes } from "./secrets.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

function setUp() {
  const store = createConfigStore({ order: ["http"] });
  const app = apiApp(
    ...createConfigObjectRoutes({ configs: () => store.all(), push: { merge: () => {}, mergeConfigs: store.merge } }),
  );
  return { app };
}

describe("core/v1 Secrets", () => {
  test("a Secret created with stringData is served with every key in data, base64, as the API server stores it", async () => {
    const { app } = setUp();
    const created = await app.request("/api/v1/namespaces/default/secrets", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        metadata: { name: "db" },
        data: { user: btoa("admin") },
        stringData: { password: "s3cret" },
      }),
    });
    expect(created.status).toBe(201);
    const secret = (await (await app.request("/api/v1/namespaces/default/secrets/db")).json()) as ServedConfig;
    expect(secret.data).toEqual({ user: btoa("admin"), password: btoa("s3cret") });
    expect(secret.stringData).toBeUndefined();
    expect(secret.type).toBe("Opaque");
  });

  test("as a Table, Secrets have NAME TYPE DATA AGE, and no data in the rows", async () => {
    const { app } = setUp();
    await app.request("/api/v1/namespaces/default/secrets", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ metadata: { name: "db" }, stringData: { a: "1", b: "2" } }),
    });
    const table = (await (await app.request("/api/v1/secrets", { headers: { accept: TABLE } })).json()) as {
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[]; object: object }>;
    };
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Type", "Data", "Age"]);
    expect(table.rows[0]!.cells.slice(0, 3)).toEqual(["db", "Opaque", 2]);
    expect(JSON.stringify(table.rows[0]!.object)).not.toContain(btoa("1"));
  });

  test("ConfigMaps and Secrets of the same name are different objects", async () => {
    const { app } = setUp();
    for (const resource of ["configmaps", "secrets"])
      expect(
        (
          await app.request(`/api/v1/namespaces/default/${resource}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ metadata: { name: "same" } }),
          })
        ).status,
      ).toBe(201);
    const cm = (await (await app.request("/api/v1/namespaces/default/configmaps/same")).json()) as ServedConfig;
    const secret = (await (await app.request("/api/v1/namespaces/default/secrets/same")).json()) as ServedConfig;
    expect([cm.kind, secret.kind]).toEqual(["ConfigMap", "Secret"]);
  });

  test("ConfigMaps and Secrets are listed in pages of limit, within a namespace, each resource its own", async () => {
    const { app } = setUp();
    for (const [namespace, name] of [
      ["b", "s1"],
      ["a", "s2"],
      ["a", "s1"],
    ])
      for (const [resource, kind] of [
        ["configmaps", "ConfigMap"],
        ["secrets", "Secret"],
      ])
        await app.request(`/api/v1/namespaces/${namespace}/${resource}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ apiVersion: "v1", kind, metadata: { name } }),
        });
    for (const resource of ["configmaps", "secrets"]) {
      const get = async (path: string) => (await (await app.request(path)).json()) as any;
      const keys = (list: { items: ServedConfig[] }) =>
        list.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
      const first = await get(`/api/v1/${resource}?limit=2`);
      expect([keys(first), first.metadata.remainingItemCount]).toEqual([["a/s1", "a/s2"], 1]);
      expect(keys(await get(`/api/v1/${resource}?limit=2&continue=${first.metadata.continue}`))).toEqual(["b/s1"]);
      const inA = await get(`/api/v1/namespaces/a/${resource}?limit=1`);
      const restOfA = await get(`/api/v1/namespaces/a/${resource}?limit=1&continue=${inA.metadata.continue}`);
      expect([keys(inA), keys(restOfA), restOfA.metadata.continue]).toEqual([["a/s1"], ["a/s2"], undefined]);
    }
  });
});
