import { expect, test } from "bun:test";
import { applyPatch, jsonPatch, mergePatch, strategicMergePatch } from "./patch.ts";

const pod = {
  metadata: { name: "web", labels: { app: "web", tier: "front" }, finalizers: ["a"] },
  spec: {
    containers: [
      { name: "app", image: "nginx:1", env: [{ name: "A", value: "1" }], ports: [{ containerPort: 80 }] },
      { name: "side", image: "busybox" },
    ],
    tolerations: [{ key: "x" }],
  },
};

test("a merge patch merges objects, replaces lists and deletes with null (RFC 7386)", () => {
  expect(mergePatch(pod, { metadata: { labels: { tier: null, new: "1" } }, spec: { tolerations: [] } })).toMatchObject({
    metadata: { labels: { app: "web", new: "1" } },
    spec: { tolerations: [] },
  });
  expect((mergePatch(pod, { metadata: { labels: { tier: null } } }) as typeof pod).metadata.labels).toEqual({
    app: "web",
  } as never);
});

test("a JSON patch applies add, replace, remove, move, copy and test in order (RFC 6902)", () => {
  const out = jsonPatch(pod, [
    { op: "replace", path: "/spec/containers/0/image", value: "nginx:2" },
    { op: "add", path: "/metadata/labels/x", value: "y" },
    { op: "remove", path: "/metadata/labels/tier" },
    { op: "copy", from: "/metadata/labels/x", path: "/metadata/labels/z" },
    { op: "move", from: "/metadata/labels/z", path: "/metadata/labels/w" },
    { op: "add", path: "/spec/tolerations/-", value: { key: "y" } },
    { op: "test", path: "/metadata/name", value: "web" },
  ]) as typeof pod;
  expect(out.spec.containers[0]!.image).toBe("nginx:2");
  expect(out.metadata.labels).toEqual({ app: "web", x: "y", w: "y" } as never);
  expect(out.spec.tolerations).toEqual([{ key: "x" }, { key: "y" }]);
  expect(pod.spec.containers[0]!.image).toBe("nginx:1");
});

test("a JSON patch whose test fails, or whose path is missing, changes nothing and says why", () => {
  expect(() => jsonPatch(pod, [{ op: "test", path: "/metadata/name", value: "db" }])).toThrow("testing value");
  expect(() => jsonPatch(pod, [{ op: "remove", path: "/metadata/nope" }])).toThrow("nonexistent key");
  expect(() => jsonPatch(pod, { op: "add" })).toThrow("list of operations");
});

test("a strategic merge patch merges containers by name and their env by name, keeping the others", () => {
  const out = strategicMergePatch(pod, {
    spec: { containers: [{ name: "app", image: "nginx:2", env: [{ name: "B", value: "2" }] }] },
  }) as typeof pod;
  expect(out.spec.containers.map((c) => `${c.name}=${c.image}`)).toEqual(["app=nginx:2", "side=busybox"]);
  expect(out.spec.containers[0]!.env).toEqual([
    { name: "A", value: "1" },
    { name: "B", value: "2" },
  ]);
  expect(out.spec.containers[0]!.ports).toEqual([{ containerPort: 80 }]);
});

test("$patch: delete removes a keyed item, $setElementOrder orders the list, lists without a key are replaced", () => {
  const out = strategicMergePatch(pod, {
    spec: {
      "$setElementOrder/containers": [{ name: "side" }, { name: "app" }],
      containers: [{ name: "app", env: [{ name: "A", $patch: "delete" }] }],
      tolerations: [{ key: "z" }],
    },
  }) as typeof pod;
  expect(out.spec.containers.map((c) => c.name)).toEqual(["side", "app"]);
  expect(out.spec.containers[1]!.env).toEqual([]);
  expect(out.spec.tolerations).toEqual([{ key: "z" }]);
});

test("finalizers merge as a set and $deleteFromPrimitiveList removes from it; $retainKeys drops unlisted keys", () => {
  const out = strategicMergePatch(pod, {
    metadata: { finalizers: ["b", "a"], "$deleteFromPrimitiveList/finalizers": ["a"] },
    spec: { $retainKeys: ["containers"], containers: [] },
  }) as typeof pod & { spec: Record<string, unknown> };
  expect(out.metadata.finalizers).toEqual(["b"]);
  expect(Object.keys(out.spec)).toEqual(["containers"]);
});

test("applyPatch refuses a merge patch that is not an object", () => {
  expect(() => applyPatch("merge", pod, [1])).toThrow("must be an object");
  expect(applyPatch("strategic", pod, { metadata: { labels: null } })).toMatchObject({ metadata: { name: "web" } });
});
