// Discovery as kube-apiserver serves it: /version, /api (APIVersions), /apis (APIGroupList), each group-version's
// APIResourceList, and aggregated discovery (apidiscovery.k8s.io/v2) when the client's Accept asks for it, all built
// from the ServedGroupVersion lists the resource modules export, so discovery never names a resource nobody serves.
// /openapi/v3 lists only what kubectl needs to know the server validates fields itself (fieldValidation).
import { Hono, type Context } from "hono";
import type { APIResource, ServedGroupVersion } from "./api-resource.ts";

/** The version.Info /version answers. */
export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

const AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** Whether the Accept header asks for aggregated discovery v2 (kubectl 1.30+ asks first, then plain JSON). */
function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? "")
    .split(",")
    .some(
      (part) =>
        /as=APIGroupDiscoveryList/.test(part) && /g=apidiscovery\.k8s\.io/.test(part) && /v=v2(;|$|\s)/.test(part),
    );
}

/** "v1" → group "", version "v1"; "metrics.k8s.io/v1beta1" → its group and version. */
function split(groupVersion: string): { group: string; version: string } {
  const at = groupVersion.lastIndexOf("/");
  return at < 0
    ? { group: "", version: groupVersion }
    : { group: groupVersion.slice(0, at), version: groupVersion.slice(at + 1) };
}

/** Every served group-version with its resources merged (several modules may serve one group-version). */
function byGroupVersion(served: ServedGroupVersion[]): Map<string, APIResource[]> {
  const merged = new Map<string, APIResource[]>();
  for (const gv of served) merged.set(gv.groupVersion, [...(merged.get(gv.groupVersion) ?? []), ...gv.resources]);
  return merged;
}

/** metav1.APIResourceList for one group-version. */
export function resourceList(groupVersion: string, resources: APIResource[]) {
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion, resources };
}

/** apidiscovery/v2 APIGroupDiscovery for one group: resources with their subresources nested. */
function groupDiscovery(group: string, versions: Array<[string, APIResource[]]>) {
  return {
    metadata: group ? { name: group } : {},
    versions: versions.map(([version, resources]) => ({
      version,
      resources: resources
        .filter((r) => !r.name.includes("/"))
        .map((r) => {
          const subresources = resources
            .filter((s) => s.name.startsWith(`${r.name}/`))
            .map((s) => ({
              subresource: s.name.slice(r.name.length + 1),
              responseKind: { group, version, kind: s.kind },
              verbs: s.verbs,
            }));
          return {
            resource: r.name,
            responseKind: { group, version, kind: r.kind },
            scope: r.namespaced ? "Namespaced" : "Cluster",
            singularResource: r.singularName,
            verbs: r.verbs,
            ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
            ...(r.categories?.length ? { categories: r.categories } : {}),
            ...(subresources.length ? { subresources } : {}),
          };
        }),
      freshness: "Current",
    })),
  };
}

/** The discovery routes for `served`, with /version answering `version`. */
export function createDiscoveryRoutes(served: ServedGroupVersion[], version: VersionInfo): Hono {
  const app = new Hono();
  const merged = byGroupVersion(served);
  const core = [...merged].filter(([gv]) => split(gv).group === "");
  const groups = new Map<string, Array<[string, APIResource[]]>>();
  for (const [gv, resources] of merged) {
    const { group, version: v } = split(gv);
    if (group) groups.set(group, [...(groups.get(group) ?? []), [v, resources]]);
  }
  const apiGroup = (name: string, versions: Array<[string, APIResource[]]>) => {
    const list = versions.map(([v]) => ({ groupVersion: `${name}/${v}`, version: v }));
    return { name, versions: list, preferredVersion: list[0]! };
  };
  const aggregated = (c: Context, items: unknown[]) =>
    c.body(
      JSON.stringify({ kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2", metadata: {}, items }),
      200,
      {
        "content-type": AGGREGATED,
      },
    );

  app.get("/version", (c) => c.json(version));
  app.get("/api", (c) => {
    if (wantsAggregated(c.req.header("accept")))
      return aggregated(
        c,
        core.length
          ? [
              groupDiscovery(
                "",
                core.map(([gv, r]) => [split(gv).version, r]),
              ),
            ]
          : [],
      );
    return c.json({
      kind: "APIVersions",
      versions: core.map(([gv]) => gv),
      serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(c.req.url).host }],
    });
  });
  app.get("/apis", (c) => {
    if (wantsAggregated(c.req.header("accept")))
      return aggregated(
        c,
        [...groups].map(([name, versions]) => groupDiscovery(name, versions)),
      );
    return c.json({
      kind: "APIGroupList",
      apiVersion: "v1",
      groups: [...groups].map(([name, versions]) => apiGroup(name, versions)),
    });
  });
  for (const [gv, resources] of merged) {
    const { group } = split(gv);
    const path = group ? `/apis/${gv}` : `/api/${gv}`;
    app.get(path, (c) => c.json(resourceList(gv, resources)));
  }
  for (const [name, versions] of groups)
    app.get(`/apis/${name}`, (c) => c.json({ kind: "APIGroup", apiVersion: "v1", ...apiGroup(name, versions) }));

  // OpenAPI v3: the paths kubectl's field-validation check reads (a PATCH per kind with the fieldValidation
  // parameter), so create/apply/replace send fieldValidation=Strict and skip the client-side schema (which would
  // need the whole OpenAPI v2 document). No schemas: `kubectl explain` says it cannot find the resource.
  const openapiPath = (gv: string) => (split(gv).group ? `apis/${gv}` : `api/${gv}`);
  app.get("/openapi/v3", (c) =>
    c.json({
      paths: Object.fromEntries(
        [...merged.keys()].map((gv) => [
          openapiPath(gv),
          { serverRelativeURL: `/openapi/v3/${openapiPath(gv)}?hash=${version.gitVersion}` },
        ]),
      ),
    }),
  );
  for (const [gv, resources] of merged) {
    const { group, version: v } = split(gv);
    app.get(`/openapi/v3/${openapiPath(gv)}`, (c) =>
      c.json({
        openapi: "3.0.0",
        info: { title: "Kubernetes", version: version.gitVersion },
        paths: Object.fromEntries(
          resources
            .filter((r) => !r.name.includes("/") && r.verbs.includes("patch"))
            .map((r) => [
              `/${openapiPath(gv)}/${r.namespaced ? "namespaces/{namespace}/" : ""}${r.name}/{name}`,
              {
                patch: {
                  "x-kubernetes-group-version-kind": { group, version: v, kind: r.kind },
                  parameters: [{ name: "fieldValidation", in: "query", schema: { type: "string", uniqueItems: true } }],
                },
              },
            ]),
        ),
        components: {},
      }),
    );
  }
  return app;
}
