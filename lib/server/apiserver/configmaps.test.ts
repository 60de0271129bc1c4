import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { toConfigObject } from "../../api/config-objects.ts";
import { createConfigStore } from "../../sources/config-store.ts";
import { apiApp } from "../../testing/api-app.ts";
import { CONFIGMAP_PRINTER, createConfigRoutes, type ServedConfig } from "./configmaps.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const json = (body: unknown, method = "POST", type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});

function setUp() {
  const store = createConfigStore({ order: ["file", "http"] });
  store.merge("file", "SET", [
    toConfigObject(
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "site", namespace: "default" },
        data: { "index.html": "hi" },
      },
      { source: "file", origin: "/etc/kubelet/manifests/site.yaml", document: 1 },
    ),
  ]);
  const app = apiApp(
    createConfigRoutes(
      { kind: "ConfigMap", resource: "configmaps", printer: CONFIGMAP_PRINTER },
      { configs: () => store.all(), push: { merge: () => {}, mergeConfigs: store.merge } },
    ),
  );
  return { app, store };
}

const body = async (response: Response) =>
  (await response.json()) as ServedConfig & { message: string; reason: string };

describe("core/v1 ConfigMaps", () => {
  test("the sources' ConfigMaps are listed and got, with a uid, a resourceVersion and where they come from", async () => {
    const { app } = setUp();
    const list = (await (await app.request("/api/v1/namespaces/default/configmaps")).json()) as {
      kind: string;
      items: ServedConfig[];
    };
    expect(list.kind).toBe("ConfigMapList");
    expect(list.items.map((o) => o.metadata.name)).toEqual(["site"]);
    const got = await body(await app.request("/api/v1/namespaces/default/configmaps/site"));
    expect(got.data).toEqual({ "index.html": "hi" });
    expect(got.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(got.metadata.annotations["kubelet.io/config.origin"]).toBe("/etc/kubelet/manifests/site.yaml");
    expect((await app.request("/api/v1/namespaces/prod/configmaps/site")).status).toBe(404);
  });

  test("as a Table, ConfigMaps have NAME DATA AGE", async () => {
    const { app } = setUp();
    const table = (await (await app.request("/api/v1/configmaps", { headers: { accept: TABLE } })).json()) as {
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[] }>;
    };
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Data", "Age"]);
    expect(table.rows[0]!.cells.slice(0, 2)).toEqual(["site", 1]);
  });

  test("a created ConfigMap is pushed as source http and served; creating it again is AlreadyExists", async () => {
    const { app, store } = setUp();
    const created = await app.request(
      "/api/v1/namespaces/default/configmaps",
      json({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app" }, data: { mode: "fast" } }),
    );
    expect(created.status).toBe(201);
    expect((await body(created)).metadata.namespace).toBe("default");
    expect(store.get("ConfigMap", "default", "app")?.metadata.annotations["kubernetes.io/config.source"]).toBe("http");
    const again = await app.request("/api/v1/namespaces/default/configmaps", json({ metadata: { name: "app" } }));
    expect(again.status).toBe(409);
    expect(await body(again)).toMatchObject({ reason: "AlreadyExists", message: 'configmaps "app" already exists' });
  });

  test("kubectl create configmap's protobuf body creates the ConfigMap", async () => {
    const { app } = setUp();
    const pb = readFileSync(join(import.meta.dir, "../../../testdata/apiserver/kubectl-create-configmap.pb"));
    const created = await app.request("/api/v1/namespaces/prod/configmaps?fieldManager=kubectl-create", {
      method: "POST",
      headers: { "content-type": "application/vnd.kubernetes.protobuf" },
      body: pb,
    });
    expect(created.status).toBe(201);
    expect((await body(created)).data).toEqual({ a: "b", c: "d" });
  });

  test("an invalid ConfigMap is a 422 Invalid naming the field, worded as the API server's", async () => {
    const { app } = setUp();
    const response = await app.request(
      "/api/v1/namespaces/default/configmaps",
      json({ metadata: { name: "Bad_Name" } }),
    );
    expect(response.status).toBe(422);
    const status = await body(response);
    expect(status.reason).toBe("Invalid");
    expect(status.message).toStartWith(
      'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
    );
  });

  test("a pushed ConfigMap is replaced, patched (merge and strategic merge) and deleted", async () => {
    const { app, store } = setUp();
    await app.request("/api/v1/namespaces/default/configmaps", json({ metadata: { name: "app" }, data: { a: "1" } }));
    const replaced = await app.request(
      "/api/v1/namespaces/default/configmaps/app",
      json({ metadata: { name: "app" }, data: { a: "2", b: "3" } }, "PUT"),
    );
    expect((await body(replaced)).data).toEqual({ a: "2", b: "3" });
    const patched = await app.request(
      "/api/v1/namespaces/default/configmaps/app",
      json({ data: { a: null, c: "4" } }, "PATCH", "application/strategic-merge-patch+json"),
    );
    expect(patched.status).toBe(200);
    expect((await body(patched)).data).toEqual({ b: "3", c: "4" });
    const deleted = await app.request("/api/v1/namespaces/default/configmaps/app", { method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(store.get("ConfigMap", "default", "app")).toBeUndefined();
  });

  test("a file's ConfigMap cannot be changed here: the refusal names the file to edit", async () => {
    const { app } = setUp();
    for (const init of [json({ metadata: { name: "site" }, data: {} }, "PUT"), { method: "DELETE" }]) {
      const response = await app.request("/api/v1/namespaces/default/configmaps/site", init);
      expect(response.status).toBe(403);
      expect((await body(response)).message).toBe(
        'configmaps "site" is forbidden: ConfigMap default/site comes from the file source; the API changes only ConfigMaps pushed over HTTP: edit the file "/etc/kubelet/manifests/site.yaml" instead',
      );
    }
  });

  test("server-side apply is a 415 that says which patches are served", async () => {
    const { app } = setUp();
    await app.request("/api/v1/namespaces/default/configmaps", json({ metadata: { name: "app" } }));
    const response = await app.request(
      "/api/v1/namespaces/default/configmaps/app",
      json({ data: {} }, "PATCH", "application/apply-patch+yaml"),
    );
    expect(response.status).toBe(415);
    expect((await body(response)).message).toContain(
      "application/merge-patch+json, application/strategic-merge-patch+json",
    );
  });

  test("an immutable ConfigMap's data cannot be replaced", async () => {
    const { app } = setUp();
    await app.request(
      "/api/v1/namespaces/default/configmaps",
      json({ metadata: { name: "app" }, data: { a: "1" }, immutable: true }),
    );
    const response = await app.request(
      "/api/v1/namespaces/default/configmaps/app",
      json({ metadata: { name: "app" }, data: { a: "2" }, immutable: true }, "PUT"),
    );
    expect(response.status).toBe(422);
    expect((await body(response)).message).toBe(
      'ConfigMap "app" is invalid: data: Forbidden: field is immutable when `immutable` is set',
    );
  });

  test("a body naming another namespace than the URL is a 400", async () => {
    const { app } = setUp();
    const response = await app.request(
      "/api/v1/namespaces/default/configmaps",
      json({ metadata: { name: "x", namespace: "prod" } }),
    );
    expect(response.status).toBe(400);
    expect((await body(response)).message).toBe(
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  });
});
