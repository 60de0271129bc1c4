import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { apiApp } from "../../testing/api-app.ts";
import { Hono } from "hono";
import { INCONSISTENT_CONTINUE } from "./continue-token.ts";
import { allOf, createListPages } from "./list-page.ts";
import { SNAPSHOT_TTL_MS } from "./list-snapshots.ts";
import { NAME_COLUMN, type Printer } from "./table-print.ts";

interface Thing {
  metadata: { namespace: string; name: string; labels?: Record<string, string> };
}
const thing = (namespace: string, name: string, labels?: Record<string, string>): Thing => ({
  metadata: { namespace, name, ...(labels ? { labels } : {}) },
});
const PRINTER: Printer<Thing> = { columns: [NAME_COLUMN], cells: (t) => [t.metadata.name] };
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/** Things in recorded (not key) order, at a revision the test changes. */
function setUp() {
  const clock = new FakeClock();
  const state = {
    revision: 4,
    objects: [thing("b", "2"), thing("a", "9", { x: "y" }), thing("a", "1"), thing("c", "5")],
  };
  const pages = createListPages<Thing>(
    { printer: PRINTER, listKind: "ThingList", keyOf: (t) => `${t.metadata.namespace}/${t.metadata.name}` },
    { clock },
  );
  const app = new Hono();
  const serve = (namespace?: string) => (c: import("hono").Context) =>
    pages(c, {
      read: () => ({ revision: state.revision, objects: state.objects }),
      namespace,
      matches: allOf<Thing>(c.req.query("x") ? (t) => t.metadata.labels?.x === c.req.query("x") : undefined),
    });
  app.get("/things", serve());
  app.get("/ns/:ns/things", (c) => serve(c.req.param("ns"))(c));
  const wrapped = apiApp(app);
  const get = async (path: string, accept?: string) => {
    const response = await wrapped.request(path, accept ? { headers: { accept } } : {});
    return { code: response.status, body: (await response.json()) as any };
  };
  return { clock, state, get };
}
const keys = (body: { items: Thing[] }) => body.items.map((t) => `${t.metadata.namespace}/${t.metadata.name}`);

test("a list asking no page is every object in the order read, at the read's revision, with no token", async () => {
  const { get } = setUp();
  const { body } = await get("/things");
  expect([body.kind, keys(body), body.metadata]).toEqual([
    "ThingList",
    ["b/2", "a/9", "a/1", "c/5"],
    { resourceVersion: "4" },
  ]);
  expect(keys((await get("/ns/a/things")).body)).toEqual(["a/9", "a/1"]);
});

test("limit and continue walk the objects in key order from the first page's snapshot, counting what remains", async () => {
  const { state, get } = setUp();
  const first = await get("/things?limit=3");
  expect([keys(first.body), first.body.metadata.remainingItemCount]).toEqual([["a/1", "a/9", "b/2"], 1]);
  state.revision = 5;
  state.objects = [thing("a", "0")];
  const rest = await get(`/things?limit=3&continue=${first.body.metadata.continue}`);
  expect([keys(rest.body), rest.body.metadata]).toEqual([["c/5"], { resourceVersion: "4" }]);
});

test("a namespace's pages and a selected list's pages hold only theirs, the selected one without a count", async () => {
  const { get } = setUp();
  const inA = await get("/ns/a/things?limit=1");
  expect([keys(inA.body), inA.body.metadata.remainingItemCount]).toEqual([["a/1"], 1]);
  expect(keys((await get(`/ns/a/things?limit=1&continue=${inA.body.metadata.continue}`)).body)).toEqual(["a/9"]);
  const selected = await get("/things?limit=5&x=y");
  expect([keys(selected.body), selected.body.metadata]).toEqual([["a/9"], { resourceVersion: "4" }]);
});

test("kubectl's Table page carries the continue token and remainingItemCount in its metadata", async () => {
  const { get } = setUp();
  const page = await get("/things?limit=2", TABLE);
  expect(page.body.kind).toBe("Table");
  expect(page.body.rows.map((r: { cells: string[] }) => r.cells[0])).toEqual(["1", "9"]);
  expect(page.body.metadata.remainingItemCount).toBe(2);
  const last = await get(`/things?limit=2&continue=${page.body.metadata.continue}`, TABLE);
  expect(last.body.rows.map((r: { cells: string[] }) => r.cells[0])).toEqual(["2", "5"]);
  expect(last.body.metadata).toEqual({ resourceVersion: "4" });
});

test("a token whose snapshot is gone is 410 Expired in upstream's words, and a bad token a 400", async () => {
  const { clock, get } = setUp();
  const token = (await get("/things?limit=1")).body.metadata.continue;
  await clock.advance(SNAPSHOT_TTL_MS + 1);
  const gone = await get(`/things?limit=1&continue=${token}`);
  expect([gone.code, gone.body.reason, gone.body.message]).toEqual([410, "Expired", INCONSISTENT_CONTINUE]);
  expect(keys((await get(`/things?continue=${gone.body.metadata.continue}`)).body)).toEqual(["a/9", "b/2", "c/5"]);
  const bad = await get("/things?limit=1&continue=nope!");
  expect([bad.code, bad.body.message]).toEqual([
    400,
    "invalid continue token: continue key is not valid: illegal base64 data at input byte 4",
  ]);
});
