import { describe, expect, test } from "bun:test";
import { apiApp } from "../../testing/api-app.ts";
import { createNamespaceRoutes, type V1Namespace } from "./namespaces.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

function setUp(inUse: string[]) {
  let now = Date.parse("2026-01-01T00:00:00Z");
  const app = apiApp(createNamespaceRoutes({ inUse: () => inUse, now: () => now }));
  return { app, later: (ms: number) => (now += ms) };
}

describe("core/v1 namespaces", () => {
  test("the list holds default, kube-system, kube-public and every namespace in use, once each, sorted, all Active", async () => {
    const { app } = setUp(["prod", "default", "prod", "edge"]);
    const list = (await (await app.request("/api/v1/namespaces")).json()) as { kind: string; items: V1Namespace[] };
    expect(list.kind).toBe("NamespaceList");
    expect(list.items.map((ns) => ns.metadata.name)).toEqual(["default", "edge", "kube-public", "kube-system", "prod"]);
    expect(new Set(list.items.map((ns) => ns.status.phase))).toEqual(new Set(["Active"]));
    expect(list.items[0]!.metadata.labels).toEqual({ "kubernetes.io/metadata.name": "default" });
  });

  test("as a Table, namespaces have NAME STATUS AGE, the age counted from when the namespace was first seen", async () => {
    const { app, later } = setUp(["prod"]);
    await app.request("/api/v1/namespaces");
    later(3 * 60 * 60 * 1000);
    const table = (await (await app.request("/api/v1/namespaces", { headers: { accept: TABLE } })).json()) as {
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[] }>;
    };
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Status", "Age"]);
    expect(table.rows.find((r) => r.cells[0] === "prod")!.cells).toEqual(["prod", "Active", "3h"]);
  });

  test("one namespace is got by name; one nothing is in is a NotFound", async () => {
    const { app } = setUp(["prod"]);
    expect(((await (await app.request("/api/v1/namespaces/prod")).json()) as V1Namespace).metadata.name).toBe("prod");
    const missing = await app.request("/api/v1/namespaces/staging");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { message: string }).message).toBe('namespaces "staging" not found');
  });

  test("limit and continue page the namespaces by name, counting what remains, as kubectl --chunk-size asks", async () => {
    const { app } = setUp(["prod", "edge"]);
    const first = (await (await app.request("/api/v1/namespaces?limit=2")).json()) as any;
    expect([first.items.map((ns: V1Namespace) => ns.metadata.name), first.metadata.remainingItemCount]).toEqual([
      ["default", "edge"],
      3,
    ]);
    const rest = (await (
      await app.request(`/api/v1/namespaces?limit=5&continue=${first.metadata.continue}`)
    ).json()) as any;
    expect([rest.items.map((ns: V1Namespace) => ns.metadata.name), rest.metadata.continue]).toEqual([
      ["kube-public", "kube-system", "prod"],
      undefined,
    ]);
  });
});
