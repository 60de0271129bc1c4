import { expect, test } from "bun:test";
import { Hono } from "hono";
import { FakeClock } from "../../testing/fake-clock.ts";
import { fakePodFeed } from "../../testing/fake-pod-feed.ts";
import { createApiServer, KUBERNETES_MINOR, versionInfo } from "./apiserver.ts";
import { notFound } from "./api-status.ts";

function server(fake = fakePodFeed()) {
  const extra = new Hono().get("/api/v1/nodes/:name", (c) => {
    throw notFound("nodes", c.req.param("name"));
  });
  return createApiServer(
    {
      pods: fake.feed,
      push: fake.push,
      clock: new FakeClock(),
      validation: { allowPrivileged: false },
      maxBytes: 1 << 20,
    },
    [
      {
        groupVersion: "v1",
        resources: [{ name: "nodes", singularName: "node", namespaced: false, kind: "Node", verbs: ["get"] }],
      },
    ],
    [extra],
  );
}

test("discovery lists the pods and every ServedGroupVersion handed in, and the other modules' routes answer", async () => {
  const api = server();
  const list = (await (await api.app.request("/api/v1")).json()) as { resources: Array<{ name: string }> };
  expect(list.resources.map((r) => r.name)).toEqual(["pods", "pods/status", "nodes"]);
  const missing = await api.app.request("/api/v1/nodes/n1");
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({ kind: "Status", reason: "NotFound", message: 'nodes "n1" not found' });
});

test("/version reports the Kubernetes minor this slice follows and this build after a plus", () => {
  const info = versionInfo("linux/amd64");
  expect([info.major, info.minor]).toEqual(["1", String(KUBERNETES_MINOR)]);
  expect(info.gitVersion).toMatch(new RegExp(`^v1\\.${KUBERNETES_MINOR}\\.0\\+kubelet-`));
});

test("close stops the cache listening to the pods' changes", () => {
  const fake = fakePodFeed();
  const api = server(fake);
  expect(fake.listeners()).toBe(1);
  api.close();
  expect(fake.listeners()).toBe(0);
});
