import { expect, test } from "bun:test";
import type { Pod } from "../../api/types.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { fakeApiServer, fakePodFeed } from "../../testing/fake-pod-feed.ts";
import { testPod } from "../../testing/pods.ts";
import { createApiServer } from "./apiserver.ts";
import { BOOKMARK_INTERVAL_MS } from "./watch-stream.ts";

const labelled = (name: string, app: string): Pod => {
  const pod = testPod(name);
  return { ...pod, metadata: { ...pod.metadata, labels: { app } } };
};

/** A watch request's lines as they arrive. */
async function open(path: string, pods: Pod[] = [], headers: Record<string, string> = {}) {
  const fake = fakeApiServer(pods);
  const { api } = fake;
  const abort = new AbortController();
  const response = await api.app.request(path, { headers, signal: abort.signal });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const lines: any[] = [];
  let ended = false;
  let blank = 0;
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return void (ended = true);
      buffer += decoder.decode(value);
      let at: number;
      while ((at = buffer.indexOf("\n")) >= 0) {
        if (at > 0) lines.push(JSON.parse(buffer.slice(0, at)));
        else blank++;
        buffer = buffer.slice(at + 1);
      }
    }
  })();
  const settle = async () => {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  };
  await settle();
  return { ...fake, lines, settle, abort, pump, ended: () => ended, response, blank: () => blank };
}

const said = (lines: Array<{ type: string; object: Pod }>) =>
  lines.map((l) => `${l.type} ${l.object.metadata?.name ?? l.object.metadata?.resourceVersion}`);

test("a watch from no version sends each pod ADDED, then changes as the kubelet reports them, until its client goes", async () => {
  // watch=True: the Python client's spelling, which Go's ParseBool accepts.
  const w = await open("/api/v1/pods?watch=True", [testPod("a")]);
  expect(said(w.lines)).toEqual(["ADDED a"]);
  w.set([testPod("a"), testPod("b")]);
  await w.settle();
  w.set([testPod("b")]);
  await w.settle();
  expect(said(w.lines)).toEqual(["ADDED a", "ADDED b", "DELETED a"]);
  expect(w.response.headers.get("content-type")).toBe("application/json");
  expect(w.api.cache.watchers()).toBe(1);
  w.abort.abort();
  await w.settle();
  expect(w.api.cache.watchers()).toBe(0);
});

test("a pod leaving a label selection is DELETED for that watch, and entering it ADDED", async () => {
  const w = await open("/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dweb", [labelled("a", "web")]);
  w.set([labelled("a", "db")]);
  await w.settle();
  w.set([labelled("a", "web")]);
  await w.settle();
  expect(said(w.lines)).toEqual(["ADDED a", "DELETED a", "ADDED a"]);
  w.abort.abort();
});

test("a watch from a version older than the history gets a 410 Expired ERROR event and ends", async () => {
  const w = await open("/api/v1/pods?watch=true&resourceVersion=5");
  await w.pump;
  expect(w.lines).toEqual([
    {
      type: "ERROR",
      object: expect.objectContaining({
        code: 410,
        reason: "Expired",
        message: expect.stringContaining("too old resource version: 5"),
      }),
    },
  ]);
});

test("allowWatchBookmarks brings a BOOKMARK with the newest version every interval; sendInitialEvents ends its adds with one", async () => {
  const w = await open(
    "/api/v1/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    [testPod("a")],
  );
  expect(w.lines.map((l) => l.type)).toEqual(["ADDED", "BOOKMARK"]);
  expect(w.lines[1].object.metadata.annotations).toEqual({ "k8s.io/initial-events-end": "true" });
  await w.clock.advance(BOOKMARK_INTERVAL_MS);
  await w.settle();
  expect(w.lines.map((l) => l.type)).toEqual(["ADDED", "BOOKMARK", "BOOKMARK"]);
  expect(w.lines[2].object).toEqual({
    kind: "Pod",
    apiVersion: "v1",
    metadata: { resourceVersion: w.lines[0].object.metadata.resourceVersion },
  });
  w.abort.abort();
});

test("timeoutSeconds ends the watch and lets go of its watcher", async () => {
  const w = await open("/api/v1/pods?watch=true&timeoutSeconds=10");
  expect(w.api.cache.watchers()).toBe(1);
  await w.clock.advance(10_000);
  await w.pump;
  expect(w.ended()).toBe(true);
  expect(w.api.cache.watchers()).toBe(0);
});

test("a Table watch (kubectl get -w) sends one-row Tables, the columns with the first event only", async () => {
  const w = await open("/api/v1/pods?watch=true", [testPod("a")], {
    accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
  });
  w.set([testPod("a"), testPod("b")]);
  await w.settle();
  expect(w.lines.map((l) => [l.object.kind, l.object.columnDefinitions.length, l.object.rows[0].cells[0]])).toEqual([
    ["Table", 9, "a"],
    ["Table", 0, "b"],
  ]);
  w.abort.abort();
});

test("sendInitialEvents without allowWatchBookmarks is a 400", async () => {
  const fake = fakePodFeed();
  const api = createApiServer({
    pods: fake.feed,
    push: fake.push,
    clock: new FakeClock(),
    validation: { allowPrivileged: false },
    maxBytes: 1,
  });
  expect((await api.app.request("/api/v1/pods?watch=true&sendInitialEvents=true")).status).toBe(400);
});

test("a watch with nothing to send yet sends a newline at once, so the client gets the response headers", async () => {
  const quiet = await open("/api/v1/pods?watch=true&resourceVersion=" + String(new FakeClock().now()));
  expect([quiet.lines, quiet.blank()]).toEqual([[], 1]);
  quiet.abort.abort();
  const busy = await open("/api/v1/pods?watch=true", [testPod("a")]);
  expect(busy.blank()).toBe(0);
  busy.abort.abort();
});

test("the legacy /watch/ paths stream the same watch, a named one only that pod", async () => {
  const all = await open("/api/v1/watch/pods", [testPod("a"), testPod("b", {}, { namespace: "x" })]);
  expect(said(all.lines)).toEqual(["ADDED a", "ADDED b"]);
  all.abort.abort();
  const inOne = await open("/api/v1/watch/namespaces/x/pods", [testPod("a"), testPod("b", {}, { namespace: "x" })]);
  expect(said(inOne.lines)).toEqual(["ADDED b"]);
  inOne.abort.abort();
  const named = await open("/api/v1/watch/namespaces/default/pods/a", [testPod("a"), testPod("c")]);
  named.set([testPod("a"), testPod("c"), testPod("d")]);
  named.set([testPod("c"), testPod("d")]);
  await named.settle();
  expect(said(named.lines)).toEqual(["ADDED a", "DELETED a"]);
  named.abort.abort();
});
