// core/v1 namespaces: every namespace a pod or a ConfigMap/Secret of the sources is in, and default, kube-system
// and kube-public as every cluster has them; all Active. Listed and got as kube-apiserver serves them, printed
// with its columns (NAME STATUS AGE).
import { Hono } from "hono";
import { httpError } from "../server-support.ts";
import type { ServedGroupVersion } from "./api-resource.ts";
import { allOf, createListPages } from "./list-page.ts";
import { fieldSelector, labelSelector } from "./selectors.ts";
import { age, respond, rfc3339, type Printer, AGE_COLUMN, NAME_COLUMN } from "./table-print.ts";

/** What discovery lists for the namespaces this module serves. */
export const NAMESPACE_RESOURCES: ServedGroupVersion = {
  groupVersion: "v1",
  resources: [
    {
      name: "namespaces",
      singularName: "namespace",
      namespaced: false,
      kind: "Namespace",
      verbs: ["get", "list"],
      shortNames: ["ns"],
    },
  ],
};

/** The namespaces a cluster always has. */
const BUILT_IN = ["default", "kube-system", "kube-public"];

export interface V1Namespace {
  apiVersion: "v1";
  kind: "Namespace";
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    labels: Record<string, string>;
  };
  spec: { finalizers: string[] };
  status: { phase: "Active" };
}

export interface NamespaceRoutesDeps {
  /** The namespaces objects are in now (pods, ConfigMaps, Secrets), repeats allowed. */
  inUse(): Iterable<string>;
  now?(): number;
}

const PRINTER: Printer<V1Namespace> = {
  columns: [NAME_COLUMN, { name: "Status", type: "string", description: "The status of the namespace" }, AGE_COLUMN],
  cells: (ns, now) => [ns.metadata.name, ns.status.phase, age(ns.metadata.creationTimestamp, now)],
};

/** The routes of core/v1 namespaces: /api/v1/namespaces and /api/v1/namespaces/{name}. */
export function createNamespaceRoutes(deps: NamespaceRoutesDeps): Hono {
  const now = deps.now ?? Date.now;
  /** When each namespace was first seen (the built-in ones: when the server started). */
  const firstSeen = new Map<string, string>(BUILT_IN.map((name) => [name, rfc3339(now())]));
  const namespaces = (): V1Namespace[] => {
    const names = new Set([...BUILT_IN, ...deps.inUse()]);
    return [...names].sort().map((name) => {
      if (!firstSeen.has(name)) firstSeen.set(name, rfc3339(now()));
      return {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: {
          name,
          uid: `namespace-${name}`,
          resourceVersion: "1",
          creationTimestamp: firstSeen.get(name)!,
          labels: { "kubernetes.io/metadata.name": name },
        },
        spec: { finalizers: ["kubernetes"] },
        status: { phase: "Active" },
      };
    });
  };
  // The list's revision: one more whenever the set of namespaces changes, so a continued list reads its own snapshot.
  let revision = 1;
  let names = "";
  const pages = createListPages(
    { printer: PRINTER, listKind: "NamespaceList", keyOf: (ns) => ns.metadata.name },
    { clock: { now } },
  );
  const app = new Hono();
  app.get("/api/v1/namespaces", (c) => {
    const byField = fieldSelector(c.req.query("fieldSelector"), {
      "metadata.name": (ns: V1Namespace) => ns.metadata.name,
      "status.phase": (ns: V1Namespace) => ns.status.phase,
    });
    const objects = namespaces();
    const listed = objects.map((ns) => ns.metadata.name).join(",");
    if (names && listed !== names) revision++;
    names = listed;
    return pages(c, {
      read: () => ({ revision, objects }),
      matches: allOf(byField, labelSelector<V1Namespace>(c.req.query("labelSelector"))),
    });
  });
  app.get("/api/v1/namespaces/:name", (c) => {
    const name = c.req.param("name");
    const namespace = namespaces().find((ns) => ns.metadata.name === name);
    if (!namespace) throw httpError(404, `namespaces "${name}" not found`);
    return respond(c, PRINTER, namespace, { listKind: "NamespaceList", now: now() });
  });
  return app;
}
