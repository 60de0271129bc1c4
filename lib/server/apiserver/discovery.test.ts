import { expect, test } from "bun:test";
import type { ServedGroupVersion } from "./api-resource.ts";
import { createDiscoveryRoutes, type VersionInfo } from "./discovery.ts";

const served: ServedGroupVersion[] = [
  {
    groupVersion: "v1",
    resources: [
      {
        name: "pods",
        singularName: "pod",
        namespaced: true,
        kind: "Pod",
        verbs: ["get", "list", "patch"],
        shortNames: ["po"],
      },
      { name: "pods/status", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] },
    ],
  },
  {
    groupVersion: "v1",
    resources: [{ name: "nodes", singularName: "node", namespaced: false, kind: "Node", verbs: ["get"] }],
  },
  {
    groupVersion: "metrics.k8s.io/v1beta1",
    resources: [{ name: "pods", singularName: "", namespaced: true, kind: "PodMetrics", verbs: ["get", "list"] }],
  },
];
const version: VersionInfo = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.0+kubelet-0.1.0",
  gitCommit: "abc",
  gitTreeState: "clean",
  buildDate: "",
  goVersion: "",
  compiler: "bun",
  platform: "linux/amd64",
};
const app = createDiscoveryRoutes(served, version);
const get = async (path: string, accept?: string) => {
  const response = await app.request(path, accept ? { headers: { accept } } : {});
  return { type: response.headers.get("content-type"), body: (await response.json()) as any };
};
const AGGREGATED =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

test("/version answers the version info", async () => {
  expect((await get("/version")).body).toEqual(version);
});

test("/api lists v1, and /api/v1 every core resource the modules serve, merged", async () => {
  expect((await get("/api")).body).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
  const list = (await get("/api/v1")).body;
  expect(list.kind).toBe("APIResourceList");
  expect(list.resources.map((r: { name: string }) => r.name)).toEqual(["pods", "pods/status", "nodes"]);
});

test("/apis lists the named groups with their preferred version, and each group-version its resources", async () => {
  const groups = (await get("/apis")).body;
  expect(groups.groups).toEqual([
    {
      name: "metrics.k8s.io",
      versions: [{ groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" }],
      preferredVersion: { groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" },
    },
  ]);
  expect((await get("/apis/metrics.k8s.io/v1beta1")).body.resources[0].kind).toBe("PodMetrics");
  expect((await get("/apis/metrics.k8s.io")).body.kind).toBe("APIGroup");
});

test("kubectl's Accept for aggregated discovery gets apidiscovery.k8s.io/v2 with subresources nested", async () => {
  const core = await get("/api", AGGREGATED);
  expect(core.type).toBe("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  expect(core.body.kind).toBe("APIGroupDiscoveryList");
  const pods = core.body.items[0].versions[0].resources[0];
  expect(pods).toMatchObject({
    resource: "pods",
    scope: "Namespaced",
    singularResource: "pod",
    shortNames: ["po"],
    responseKind: { group: "", version: "v1", kind: "Pod" },
    subresources: [{ subresource: "status", verbs: ["get"] }],
  });
  expect(core.body.items[0].versions[0].resources[1]).toMatchObject({ resource: "nodes", scope: "Cluster" });
  const named = await get("/apis", AGGREGATED);
  expect(named.body.items[0].metadata).toEqual({ name: "metrics.k8s.io" });
});

test("/openapi/v3 lists each group-version, whose document has a PATCH with fieldValidation per patchable kind", async () => {
  const index = (await get("/openapi/v3")).body;
  expect(Object.keys(index.paths)).toEqual(["api/v1", "apis/metrics.k8s.io/v1beta1"]);
  const doc = (await get(index.paths["api/v1"].serverRelativeURL)).body;
  const patch = doc.paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch;
  expect(patch["x-kubernetes-group-version-kind"]).toEqual({ group: "", version: "v1", kind: "Pod" });
  expect(patch.parameters[0]).toMatchObject({ name: "fieldValidation", in: "query" });
  expect(Object.keys(doc.paths)).toHaveLength(1);
});
