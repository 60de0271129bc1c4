import { expect, test } from "bun:test";
import { ANNOTATION, type Pod } from "../../api/types.ts";
import { fakeApiServer } from "../../testing/fake-pod-feed.ts";
import { testPod } from "../../testing/pods.ts";

const running = (pod: Pod, labels: Record<string, string> = {}): Pod => ({
  ...pod,
  metadata: { ...pod.metadata, labels },
  status: { phase: "Running", podIP: "10.0.0.1" },
});

function setup(pods: Pod[] = []) {
  const fake = fakeApiServer(pods);
  const { api } = fake;
  const request = (path: string, init: RequestInit = {}) => api.app.request(path, init);
  const json = async (path: string, init: RequestInit = {}) => {
    const response = await request(path, init);
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  return { ...fake, request, json };
}

const manifest = (name: string, image = "busybox", extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: name } },
    spec: { containers: [{ name: "c", image }] },
    ...extra,
  });

test("pods are listed across namespaces and in one, as a PodList with the list's resourceVersion", async () => {
  const { json } = setup([running(testPod("a")), running(testPod("b", {}, { namespace: "kube-system" }))]);
  const all = await json("/api/v1/pods");
  expect(all.body.kind).toBe("PodList");
  expect(all.body.items.map((p: Pod) => p.metadata.name)).toEqual(["a", "b"]);
  expect(Number(all.body.metadata.resourceVersion)).toBeGreaterThan(0);
  const one = await json("/api/v1/namespaces/kube-system/pods");
  expect(one.body.items.map((p: Pod) => p.metadata.name)).toEqual(["b"]);
});

test("label and field selectors narrow the list; an unknown field is a 400", async () => {
  const { json } = setup([running(testPod("a"), { app: "web" }), testPod("b")]);
  const names = async (query: string) =>
    (await json(`/api/v1/pods?${query}`)).body.items?.map((p: Pod) => p.metadata.name);
  expect(await names("labelSelector=app%3Dweb")).toEqual(["a"]);
  expect(await names("labelSelector=!app")).toEqual(["b"]);
  expect(await names("fieldSelector=status.phase%3DRunning")).toEqual(["a"]);
  expect(await names("fieldSelector=metadata.name%3Db,metadata.namespace%3Ddefault")).toEqual(["b"]);
  const bad = await json("/api/v1/pods?fieldSelector=spec.foo%3Dx");
  expect([bad.status, bad.body.reason, bad.body.message]).toEqual([
    400,
    "BadRequest",
    "field label not supported: spec.foo",
  ]);
});

test("kubectl get's Accept header gets a Table with printPod's cells", async () => {
  const { json } = setup([running(testPod("a"))]);
  const { body } = await json("/api/v1/namespaces/default/pods", {
    headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" },
  });
  expect(body.kind).toBe("Table");
  expect(body.rows[0].cells.slice(0, 3)).toEqual(["a", "0/1", "Running"]);
});

test("get answers the pod, its status subresource the same, and a missing pod is NotFound in upstream's words", async () => {
  const { json } = setup([running(testPod("a"))]);
  expect((await json("/api/v1/namespaces/default/pods/a")).body.metadata.name).toBe("a");
  expect((await json("/api/v1/namespaces/default/pods/a/status")).body.status.phase).toBe("Running");
  const missing = await json("/api/v1/namespaces/default/pods/nope");
  expect(missing.status).toBe(404);
  expect(missing.body).toMatchObject({
    reason: "NotFound",
    message: 'pods "nope" not found',
    details: { name: "nope", kind: "pods" },
  });
  const write = await json("/api/v1/namespaces/default/pods/a/status", { method: "PUT", body: "{}" });
  expect([write.status, write.body.reason]).toEqual([405, "MethodNotAllowed"]);
});

test("create pushes the pod to the http source and answers 201; a second create is AlreadyExists", async () => {
  const { json, pushes } = setup();
  const created = await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  expect(created.status).toBe(201);
  expect(created.body.metadata.annotations[ANNOTATION.source]).toBe("http");
  expect(pushes.map((p) => `${p.op} ${p.pods[0]!.metadata.name}`)).toEqual(["ADD web"]);
  const again = await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  expect([again.status, again.body.reason, again.body.message]).toEqual([
    409,
    "AlreadyExists",
    'pods "web" already exists',
  ]);
});

test("an invalid pod is 422 Invalid with the validator's field causes", async () => {
  const { json, pushes } = setup();
  const refused = await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web", "") });
  expect(refused.status).toBe(422);
  expect(refused.body.reason).toBe("Invalid");
  expect(refused.body.message).toStartWith('Pod "web" is invalid: spec.containers[0].image: Required value');
  expect(refused.body.details.causes[0]).toMatchObject({
    reason: "FieldValueRequired",
    field: "spec.containers[0].image",
  });
  expect(pushes).toEqual([]);
});

test("fieldValidation=Strict refuses an unknown field; without it the field is ignored", async () => {
  const { json } = setup();
  const body = manifest("web", "busybox", { bogus: 1 });
  const strict = await json("/api/v1/namespaces/default/pods?fieldValidation=Strict", { method: "POST", body });
  expect(strict.status).toBe(422);
  expect(strict.body.message).toContain("bogus");
  expect((await json("/api/v1/namespaces/default/pods", { method: "POST", body })).status).toBe(201);
});

test("replace updates a pushed pod; a stale resourceVersion is a Conflict, a missing pod NotFound", async () => {
  const { json, pushes } = setup();
  await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  const current = (await json("/api/v1/namespaces/default/pods/web")).body;
  const replaced = await json("/api/v1/namespaces/default/pods/web", {
    method: "PUT",
    body: JSON.stringify({ ...current, spec: { containers: [{ name: "c", image: "nginx" }] } }),
  });
  expect(replaced.status).toBe(200);
  expect(pushes.at(-1)!.pods[0]!.spec.containers[0]!.image).toBe("nginx");
  const stale = await json("/api/v1/namespaces/default/pods/web", { method: "PUT", body: JSON.stringify(current) });
  expect([stale.status, stale.body.reason]).toEqual([409, "Conflict"]);
  expect(stale.body.message).toContain('Operation cannot be fulfilled on pods "web"');
  const missing = await json("/api/v1/namespaces/default/pods/nope", { method: "PUT", body: manifest("nope") });
  expect(missing.status).toBe(404);
});

test("strategic, merge and JSON patches change a pushed pod; an unknown patch type is 415", async () => {
  const { json, pods } = setup();
  await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  const patch = (type: string, body: unknown) =>
    json("/api/v1/namespaces/default/pods/web", {
      method: "PATCH",
      headers: { "content-type": type },
      body: JSON.stringify(body),
    });
  expect(
    (await patch("application/strategic-merge-patch+json", { spec: { containers: [{ name: "c", image: "a" }] } }))
      .status,
  ).toBe(200);
  expect(pods()[0]!.spec.containers[0]!.image).toBe("a");
  await patch("application/merge-patch+json", { metadata: { labels: { x: "1" } } });
  expect(pods()[0]!.metadata.labels).toEqual({ app: "web", x: "1" });
  await patch("application/json-patch+json", [{ op: "replace", path: "/spec/containers/0/image", value: "b" }]);
  expect(pods()[0]!.spec.containers[0]!.image).toBe("b");
  expect((await patch("text/plain", {})).status).toBe(415);
});

test("server-side apply creates the pod, then replaces it with the applied configuration; it needs a fieldManager", async () => {
  const { request, pods } = setup();
  const apply = (image: string, query = "?fieldManager=kubectl") =>
    request(`/api/v1/namespaces/default/pods/web${query}`, {
      method: "PATCH",
      headers: { "content-type": "application/apply-patch+yaml" },
      body: `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: ${image}}]\n`,
    });
  expect((await apply("one")).status).toBe(201);
  expect((await apply("two")).status).toBe(200);
  expect(pods().map((p) => p.spec.containers[0]!.image)).toEqual(["two"]);
  expect((await apply("three", "")).status).toBe(422);
});

test("delete removes a pushed pod and answers it with a deletionTimestamp", async () => {
  const { json, pods } = setup();
  await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  const deleted = await json("/api/v1/namespaces/default/pods/web", { method: "DELETE" });
  expect(deleted.status).toBe(200);
  expect(deleted.body.metadata.deletionTimestamp).toBeString();
  expect(pods()).toEqual([]);
  expect((await json("/api/v1/namespaces/default/pods/web", { method: "DELETE" })).status).toBe(404);
});

test("a second delete of a pod still terminating answers the deletion it got first", async () => {
  const { json, set, clock } = setup();
  await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  const first = await json("/api/v1/namespaces/default/pods/web", { method: "DELETE" });
  // What the kubelet serves while the containers stop: the pod with its deletion fields (sync loop terminatingPods).
  set([{ ...first.body, metadata: { ...first.body.metadata } } as Pod]);
  await clock.advance(3000);
  const again = await json("/api/v1/namespaces/default/pods/web", { method: "DELETE" });
  expect(again.status).toBe(200);
  expect(again.body.metadata.deletionTimestamp).toBe(first.body.metadata.deletionTimestamp);
  expect(again.body.metadata.deletionGracePeriodSeconds).toBe(30);
});

test("a file-sourced pod cannot be changed here: the 403 names the file to edit", async () => {
  const { json, pushes } = setup([testPod("web", {}, { origin: "/etc/kubelet/manifests/web.yaml" })]);
  for (const init of [
    { method: "DELETE" },
    { method: "PUT", body: manifest("web") },
    { method: "PATCH", headers: { "content-type": "application/merge-patch+json" }, body: "{}" },
  ]) {
    const refused = await json("/api/v1/namespaces/default/pods/web", init);
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe("Forbidden");
    expect(refused.body.message).toContain('pods "web" is forbidden: pod default/web comes from the file source');
    expect(refused.body.message).toContain('edit the file "/etc/kubelet/manifests/web.yaml"');
  }
  const create = await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  expect([create.status, create.body.reason]).toEqual([409, "AlreadyExists"]);
  expect(create.body.message).toContain("/etc/kubelet/manifests/web.yaml");
  expect(pushes).toEqual([]);
});

test("a body whose namespace differs from the URL's is a 400", async () => {
  const { json } = setup();
  const body = JSON.stringify({ ...JSON.parse(manifest("web")), metadata: { name: "web", namespace: "other" } });
  const refused = await json("/api/v1/namespaces/default/pods", { method: "POST", body });
  expect(refused.status).toBe(400);
  expect(refused.body.message).toBe(
    "the namespace of the provided object does not match the namespace sent on the request",
  );
});

test("the whole list, served from one serialisation per version, shows each change at once", async () => {
  const { json, set } = setup([testPod("a")]);
  const first = await json("/api/v1/pods");
  expect((await json("/api/v1/pods")).body).toEqual(first.body);
  set([testPod("a"), testPod("b")]);
  const second = await json("/api/v1/pods");
  expect(second.body.items.map((p: Pod) => p.metadata.name)).toEqual(["a", "b"]);
  expect(Number(second.body.metadata.resourceVersion)).toBeGreaterThan(Number(first.body.metadata.resourceVersion));
});

test("a dry run, in the query or in DeleteOptions' body, answers as the write would and pushes nothing", async () => {
  const { json, pushes, pods } = setup();
  const created = await json("/api/v1/namespaces/default/pods?dryRun=All", { method: "POST", body: manifest("web") });
  expect(created.status).toBe(201);
  expect(pushes).toEqual([]);
  await json("/api/v1/namespaces/default/pods", { method: "POST", body: manifest("web") });
  const deleted = await json("/api/v1/namespaces/default/pods/web", {
    method: "DELETE",
    body: JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", dryRun: ["All"] }),
  });
  expect(deleted.status).toBe(200);
  expect(pods().map((p) => p.metadata.name)).toEqual(["web"]);
});

test("a limited list pages through the pods in namespace/name order with continue and remainingItemCount", async () => {
  const names = ["e", "b", "d", "a", "c"];
  const { json } = setup(names.map((n) => testPod(n, {}, { namespace: n === "e" ? "alpha" : "default" })));
  const first = await json("/api/v1/pods?limit=2");
  expect(first.body.items.map((p: Pod) => p.metadata.name)).toEqual(["e", "a"]);
  expect(first.body.metadata.remainingItemCount).toBe(3);
  const token = JSON.parse(Buffer.from(first.body.metadata.continue, "base64url").toString());
  expect(token).toEqual({
    v: "meta.k8s.io/v1",
    rv: Number(first.body.metadata.resourceVersion),
    start: "default/a\u0000",
  });
  const seen: string[] = first.body.items.map((p: Pod) => p.metadata.name);
  let next = first.body.metadata.continue as string | undefined;
  for (let pages = 0; next && pages < 5; pages++) {
    const page = await json(`/api/v1/pods?limit=2&continue=${encodeURIComponent(next)}`);
    seen.push(...page.body.items.map((p: Pod) => p.metadata.name));
    next = page.body.metadata.continue;
  }
  expect(seen).toEqual(["e", "a", "b", "c", "d"]);
  const inOne = await json("/api/v1/namespaces/default/pods?limit=3");
  const start = JSON.parse(Buffer.from(inOne.body.metadata.continue, "base64url").toString()).start;
  expect([inOne.body.items.length, start, inOne.body.metadata.remainingItemCount]).toEqual([3, "c\u0000", 1]);
});

test("a limited list at resourceVersion=0 is the whole list from the cache, as 1.32's watch cache answers it", async () => {
  const { json } = setup([testPod("a"), testPod("b"), testPod("c")]);
  const { body } = await json("/api/v1/pods?limit=1&resourceVersion=0");
  expect(body.items.map((p: Pod) => p.metadata.name)).toEqual(["a", "b", "c"]);
  expect(body.metadata.continue).toBeUndefined();
});

test("a continued list serves the first page's snapshot even after the pods changed", async () => {
  const { json, set } = setup([testPod("a"), testPod("b"), testPod("c")]);
  const first = await json("/api/v1/namespaces/default/pods?limit=1");
  set([testPod("b"), testPod("c"), testPod("d")]);
  const rest = await json(`/api/v1/namespaces/default/pods?continue=${first.body.metadata.continue}`);
  expect(rest.body.items.map((p: Pod) => p.metadata.name)).toEqual(["b", "c"]);
  expect(rest.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
});

test("a malformed continue token is a 400 and kubectl's chunked Table carries the token", async () => {
  const { json } = setup([testPod("a"), testPod("b")]);
  const bad = await json("/api/v1/pods?continue=xyz!");
  expect([bad.status, bad.body.reason, bad.body.message]).toEqual([
    400,
    "BadRequest",
    "invalid continue token: continue key is not valid: illegal base64 data at input byte 3",
  ]);
  const table = await json("/api/v1/pods?limit=1", {
    headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" },
  });
  expect([table.body.kind, table.body.rows.length, typeof table.body.metadata.continue]).toEqual([
    "Table",
    1,
    "string",
  ]);
});
