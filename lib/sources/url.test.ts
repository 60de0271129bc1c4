// The URL source against a real HTTP server on loopback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { names, recordSnapshots } from "../testing/snapshots.ts";
import { freePortNumber } from "../testing/ports.ts";
import { createUrlSource } from "./url.ts";
import { createPodStore } from "./store.ts";

const pod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "busybox:1.35" }] },
});

describe("URL source", () => {
  let body = JSON.stringify([pod("a")]);
  let status = 200;
  let delayMs = 0;
  let requests: Request[] = [];
  let onRequest = () => {};
  let server: ReturnType<typeof Bun.serve>;
  const etag = () => `"${Bun.hash(body).toString(16)}"`;
  beforeAll(() => {
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        requests.push(req);
        onRequest();
        if (delayMs) await Bun.sleep(delayMs);
        if (status !== 200) return new Response("boom", { status });
        if (req.headers.get("if-none-match") === etag()) return new Response(null, { status: 304 });
        return new Response(body, { headers: { etag: etag() } });
      },
    });
  });
  afterAll(() => server.stop(true));
  const url = () => `http://127.0.0.1:${server.port}/pods`;
  const reset = () => {
    body = JSON.stringify([pod("a")]);
    status = 200;
    delayMs = 0;
    requests = [];
    onRequest = () => {};
  };

  test("reads a list of manifests and sends the configured headers", async () => {
    reset();
    const source = createUrlSource({
      url: url(),
      headers: { Authorization: ["Bearer t0k3n"] },
      checkFrequency: 60_000,
    });
    expect(names(await source.readOnce())).toEqual(["a"]);
    expect(requests[0]!.headers.get("authorization")).toBe("Bearer t0k3n");
  });

  test("a body whose pod turns invalid (apiVersion v2) keeps that pod's last good version in the store", async () => {
    reset();
    const store = createPodStore({ sources: ["url"] });
    const source = createUrlSource({ url: url(), checkFrequency: 60_000 });
    body = JSON.stringify([pod("a"), pod("b")]);
    store.apply("url", await source.readOnce());
    body = JSON.stringify([pod("a"), { ...pod("b"), apiVersion: "v2" }]);
    store.apply("url", await source.readOnce());
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["b", "a"]);
    expect(store.rejected()[0]!.issues[0]!.detail).toEndWith("keeping the last good version of pod default/b running");
  });

  test("uses conditional GETs and answers 304 with the same snapshot", async () => {
    reset();
    const source = createUrlSource({ url: url(), checkFrequency: 60_000 });
    const first = await source.readOnce();
    const second = await source.readOnce();
    expect(requests[1]!.headers.get("if-none-match")).toBe(etag());
    expect(second).toBe(first);
  });

  test("emits changes while polling and stays silent when nothing changed", async () => {
    reset();
    const r = recordSnapshots(createUrlSource({ url: url(), checkFrequency: 50 }));
    await r.next((s) => s.pods.length === 1);
    // Polls are sequential: the 4th request arrives only after the 3rd answer (a 304) was handled.
    await new Promise<void>((resolve) => (onRequest = () => requests.length >= 4 && resolve()));
    expect(requests.slice(1, 3).map((q) => q.headers.get("if-none-match"))).toEqual([etag(), etag()]);
    expect(r.snapshots).toHaveLength(1);
    body = JSON.stringify({ apiVersion: "v1", kind: "List", items: [pod("a"), pod("b")] });
    expect(names(await r.next((s) => s.pods.length === 2))).toEqual(["a", "b"]);
    await r.stop();
  });

  test("a read fails on 404, 500 and timeouts, and keeps the last good pods on an unparsable body", async () => {
    reset();
    const source = createUrlSource({ url: url(), checkFrequency: 60_000, timeoutMs: 200 });
    await source.readOnce();
    for (const code of [404, 500]) {
      status = code;
      await expect(source.readOnce()).rejects.toThrow(`HTTP ${code}`);
    }
    status = 200;
    delayMs = 500;
    await expect(source.readOnce()).rejects.toThrow("no answer within 0.2s");
    delayMs = 0;
    body = "[{";
    const kept = await source.readOnce();
    expect(names(kept)).toEqual(["a"]);
    expect(kept.rejected).toHaveLength(1);
  });

  test("a polling source emits nothing on 404, 500 or a timeout: the pods it served stay", async () => {
    reset();
    const r = recordSnapshots(createUrlSource({ url: url(), checkFrequency: 20, timeoutMs: 200 }));
    await r.next((s) => s.pods.length === 1);
    // Polls are sequential: once the second request after a change arrives, the first one's failure was handled.
    const handled = () => {
      const target = requests.length + 2;
      return new Promise<void>((resolve) => (onRequest = () => requests.length >= target && resolve()));
    };
    for (const failure of [() => (status = 404), () => (status = 500), () => ((status = 200), (delayMs = 500))]) {
      const answered = handled();
      failure();
      await answered;
    }
    delayMs = 0;
    body = "[{";
    expect(names(await r.next((s) => s.rejected.length === 1))).toEqual(["a"]);
    expect(r.snapshots.map(names)).toEqual([["a"], ["a"]]);
    await r.stop();
  });

  test("a refused connection is an error, never an empty source", async () => {
    const source = createUrlSource({ url: `http://127.0.0.1:${await freePortNumber()}/`, checkFrequency: 60_000 });
    await expect(source.readOnce()).rejects.toMatchObject({ code: "SourceUnavailable" });
  });

  test("an empty list empties the source", async () => {
    reset();
    const source = createUrlSource({ url: url(), checkFrequency: 60_000 });
    await source.readOnce();
    body = "[]";
    expect((await source.readOnce()).pods).toEqual([]);
  });

  test("refuses bodies over the size limit", async () => {
    reset();
    body = JSON.stringify([pod("a"), pod("b")]);
    const source = createUrlSource({ url: url(), checkFrequency: 60_000, maxBytes: 64 });
    await expect(source.readOnce()).rejects.toThrow(/over the 64-byte limit/);
  });
});
