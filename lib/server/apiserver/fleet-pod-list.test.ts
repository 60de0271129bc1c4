import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { podKey, type Pod } from "../../api/types.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { statusFor } from "./api-status.ts";
import { INCONSISTENT_CONTINUE } from "./continue-token.ts";
import { createFleetPodList, SNAPSHOT_TTL_MS } from "./fleet-pod-list.ts";
import { podTable, type IncludeObject } from "./table.ts";

const pod = (namespace: string, name: string, labels: Record<string, string> = {}): Pod =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace, name, labels, resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { nodeName: "n1", containers: [{ name: "app", image: "busybox" }] },
    status: { phase: "Running" },
  }) as unknown as Pod;

/** The routes over a cache whose pods and revision the test changes. */
function setUp(pods: Pod[], maxUnpaged = 0) {
  const state = { revision: 10, pods };
  const clock = new FakeClock();
  const list = createFleetPodList({
    cache: { list: () => ({ revision: state.revision, pods: state.pods }) },
    clock,
    maxUnpaged,
  });
  const app = new Hono();
  app.onError((error, c) => {
    const status = statusFor(error);
    return c.json(status, status.code as ContentfulStatusCode);
  });
  app.route("/", list.app);
  const get = async (path: string, accept?: string) => {
    const response = await app.request(path, accept ? { headers: { accept } } : {});
    return { code: response.status, body: await response.json() };
  };
  return { state, clock, list, get };
}

const names = (body: { items: Pod[] }) => body.items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
const FIVE = [pod("b", "x"), pod("a", "z"), pod("a", "y"), pod("c", "w"), pod("a-b", "v")];

/** Every page of `path` (which ends in `limit=N`), following continue. */
async function walk(get: ReturnType<typeof setUp>["get"], path: string) {
  const pages = [];
  let token = "";
  do {
    const page = await get(`${path}${token ? `&continue=${encodeURIComponent(token)}` : ""}`);
    expect(page.code).toBe(200);
    pages.push(page.body);
    token = page.body.metadata.continue ?? "";
  } while (token);
  return pages;
}

describe("fleet serve's pods list in pages", () => {
  test("pages of 2 walk every pod once in etcd key order, counting what remains, at one resourceVersion", async () => {
    const { get } = setUp(FIVE);
    const pages = await walk(get, "/api/v1/pods?limit=2");
    expect(pages.map(names)).toEqual([["a-b/v", "a/y"], ["a/z", "b/x"], ["c/w"]]);
    expect(pages.map((p) => p.metadata.remainingItemCount)).toEqual([3, 1, undefined]);
    expect(pages.map((p) => p.metadata.resourceVersion)).toEqual(["10", "10", "10"]);
    expect(Buffer.from(pages[0].metadata.continue, "base64url").toString()).toBe(
      '{"v":"meta.k8s.io/v1","rv":10,"start":"a/y\\u0000"}',
    );
  });

  test("the pages after the first come from the first page's snapshot, whatever changed since", async () => {
    const { state, get } = setUp(FIVE);
    const first = await get("/api/v1/pods?limit=2");
    state.revision = 11;
    state.pods = [pod("a", "new"), pod("c", "w")];
    const rest = await get(`/api/v1/pods?limit=10&continue=${first.body.metadata.continue}`);
    expect(names(rest.body)).toEqual(["a/z", "b/x", "c/w"]);
    expect(rest.body.metadata.resourceVersion).toBe("10");
    expect(names((await get("/api/v1/pods")).body)).toEqual(["a/new", "c/w"]);
  });

  test("a namespace's list pages within the namespace only", async () => {
    const { get } = setUp(FIVE);
    const pages = await walk(get, "/api/v1/namespaces/a/pods?limit=1");
    expect(pages.map(names)).toEqual([["a/y"], ["a/z"]]);
    expect(Buffer.from(pages[0].metadata.continue, "base64url").toString()).toContain('"start":"y\\u0000"');
  });

  test("with a selector a page is filled from the matching pods and no remaining count is guessed", async () => {
    const { get } = setUp([
      pod("a", "1", { app: "web" }),
      pod("a", "2"),
      pod("a", "3", { app: "web" }),
      pod("a", "4", { app: "web" }),
    ]);
    const pages = await walk(get, "/api/v1/pods?labelSelector=app%3Dweb&limit=2");
    expect(pages.map(names)).toEqual([["a/1", "a/3"], ["a/4"]]);
    expect(pages[0].metadata.remainingItemCount).toBeUndefined();
  });

  test("kubectl's Table pages carry the continue token and the rows of the page", async () => {
    const { get } = setUp(FIVE);
    const accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    const page = await get("/api/v1/pods?limit=3", accept);
    expect(page.body.kind).toBe("Table");
    expect(page.body.rows.map((r: { cells: string[] }) => r.cells[0])).toEqual(["v", "y", "z"]);
    expect(page.body.metadata.remainingItemCount).toBe(2);
    const last = await get(`/api/v1/pods?limit=3&continue=${page.body.metadata.continue}`, accept);
    expect(last.body.rows.map((r: { cells: string[] }) => r.cells[0])).toEqual(["x", "w"]);
    expect(last.body.metadata.continue).toBeUndefined();
  });

  test("a selected Table page is podTable's JSON of its pods byte for byte, and a changed pod gets its new row", async () => {
    const labelled = FIVE.map((p, i) => ({
      ...p,
      metadata: { ...p.metadata, labels: { tier: i % 2 ? "db" : "web" } },
    }));
    const { state, clock, list } = setUp(labelled);
    const accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    const text = async (path: string) => (await list.app.request(path, { headers: { accept } })).text();
    const expected = (pods: Pod[], metadata: object, include: IncludeObject = "Metadata") =>
      JSON.stringify({ ...podTable(pods, { now: clock.now(), include, resourceVersion: "x" }), metadata });
    const web = labelled.filter((p) => p.metadata.labels?.tier === "web");
    web.sort((a, b) => (podKey(a) < podKey(b) ? -1 : 1));
    const page = await text("/api/v1/pods?labelSelector=tier%3Dweb&limit=2");
    const { continue: token } = JSON.parse(page).metadata;
    expect(page).toBe(expected(web.slice(0, 2), { resourceVersion: "10", continue: token }));
    await clock.advance(4 * 60_000);
    const rest = await text(`/api/v1/pods?labelSelector=tier%3Dweb&limit=2&continue=${token}&includeObject=Object`);
    expect(rest).toBe(expected(web.slice(2), { resourceVersion: "10" }, "Object"));
    const failed = { ...web[0]!, status: { phase: "Failed" } } as Pod;
    state.pods = [failed, ...labelled.filter((p) => p !== web[0])];
    state.revision = 11;
    const after = JSON.parse(await text("/api/v1/pods?labelSelector=tier%3Dweb"));
    expect(after.rows[0].cells[2]).toBe("Failed");
  });

  test("warm builds the newest snapshot and kubectl's rows before any list, and the first Table is served from them", async () => {
    const { state, list } = setUp(FIVE.map((p) => ({ ...p, metadata: { ...p.metadata } })));
    list.warm();
    expect(list.snapshots()).toBe(1);
    // Edited in place after warm (the pod cache never does): the first Table shows the rows warm rendered.
    for (const p of state.pods) p.metadata.labels = { edited: "after-warm" };
    const accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    const table = await (await list.app.request("/api/v1/pods", { headers: { accept } })).text();
    expect(table).not.toContain("after-warm");
    expect(JSON.parse(table).rows).toHaveLength(5);
  });

  test("a malformed token, or a resourceVersion beside one, is a 400 in upstream's words", async () => {
    const { get } = setUp(FIVE);
    const bad = await get("/api/v1/pods?limit=2&continue=%25%25");
    expect(bad).toMatchObject({ code: 400, body: { reason: "BadRequest" } });
    expect(bad.body.message).toStartWith("invalid continue token: continue key is not valid: illegal base64 data");
    const token = (await get("/api/v1/pods?limit=2")).body.metadata.continue;
    expect(await get(`/api/v1/pods?limit=2&continue=${token}&resourceVersion=10`)).toMatchObject({
      code: 400,
      body: { message: "specifying resource version is not allowed when using continue" },
    });
    expect((await get("/api/v1/pods?limit=two")).code).toBe(400);
  });

  test("a token whose snapshot is no longer kept is 410 Expired with a token that reads on from the newest pods", async () => {
    const { state, clock, list, get } = setUp(FIVE);
    const token = (await get("/api/v1/pods?limit=2")).body.metadata.continue;
    await clock.advance(SNAPSHOT_TTL_MS + 1);
    state.revision = 12;
    state.pods = [...FIVE, pod("b", "new")];
    const gone = await get(`/api/v1/pods?limit=2&continue=${token}`);
    expect(gone).toMatchObject({ code: 410, body: { reason: "Expired", message: INCONSISTENT_CONTINUE } });
    expect(list.snapshots()).toBe(0);
    const rest = await get(`/api/v1/pods?limit=10&continue=${gone.body.metadata.continue}`);
    expect(names(rest.body)).toEqual(["a/z", "b/new", "b/x", "c/w"]);
    expect(rest.body.metadata.resourceVersion).toBe("12");
  });

  test("a list of at most maxUnpaged pods in scope is answered whole whatever its limit; a larger one is paged", async () => {
    const { get } = setUp(FIVE, 3);
    const whole = await get("/api/v1/namespaces/a/pods?limit=1");
    expect(names(whole.body)).toEqual(["a/y", "a/z"]);
    expect(whole.body.metadata.continue).toBeUndefined();
    expect(names((await get("/api/v1/pods?limit=2")).body)).toEqual(["a-b/v", "a/y"]);
  });

  test("resourceVersion=0 is answered whole, as kube-apiserver's watch cache answers it", async () => {
    const { get } = setUp(FIVE);
    const whole = await get("/api/v1/pods?limit=2&resourceVersion=0");
    expect(whole.body.items).toHaveLength(5);
    expect(whole.body.metadata.continue).toBeUndefined();
  });

  test("a watch is left to the API's own pod routes", async () => {
    const { list } = setUp(FIVE);
    const app = new Hono();
    app.route("/", list.app);
    app.get("/api/v1/pods", (c) => c.text("watched"));
    expect(await (await app.request("/api/v1/pods?watch=true")).text()).toBe("watched");
  });
});
