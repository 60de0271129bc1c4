// The pods resource of /api/v1 as kube-apiserver serves it, for the pods this node runs: list, get and watch
// (all namespaces or one; label and field selectors; Table output), the read-only status subresource, and
// create/replace/patch/apply/delete going to the HTTP push source. A pod another source owns (file, URL, etcd)
// is refused with a 403 naming the file, URL or key to edit instead.
import { Hono, type Context } from "hono";
import type { Clock } from "../../clock.ts";
import { readManifests, parseYaml } from "../../api/manifest.ts";
import { applyManifestStrictness } from "../../api/manifest-strict.ts";
import { ANNOTATION, fieldError, podKey, type FieldIssue, type Pod } from "../../api/types.ts";
import { validatePod, type ValidationOptions } from "../../api/validation.ts";
import type { PushTarget } from "../push-routes.ts";
import type { APIResource } from "./api-resource.ts";
import {
  alreadyExists,
  badRequest,
  conflict,
  forbidden,
  invalid,
  methodNotSupported,
  notFound,
  unsupportedMediaType,
} from "./api-status.ts";
import { applyPatch, PATCH_TYPES } from "./patch.ts";
import { listChunk } from "./list-chunk.ts";
import { createListSnapshots } from "./list-snapshots.ts";
import { isTrue } from "./request-info.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { podTable, wantsTable, type IncludeObject } from "./table.ts";
import { createPodRows } from "./table-rows.ts";
import type { PodCache } from "./watch.ts";
import { streamWatch } from "./watch-stream.ts";

/** What discovery lists for pods: the verbs served here and the status subresource (the other helpers add theirs). */
export const POD_RESOURCES: APIResource[] = [
  {
    name: "pods",
    singularName: "pod",
    namespaced: true,
    kind: "Pod",
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    shortNames: ["po"],
    categories: ["all"],
  },
  { name: "pods/status", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] },
];

/** The fields a pod field selector may name (pkg/registry/core/pod: ToSelectableFields and the label conversions). */
export const POD_SELECTABLE_FIELDS = [
  "metadata.name",
  "metadata.namespace",
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "spec.hostNetwork",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
] as const;

/** A pod's selectable field values. */
export function podFields(pod: Pod): Record<string, string> {
  return {
    "metadata.name": pod.metadata.name,
    "metadata.namespace": pod.metadata.namespace,
    "spec.nodeName": pod.spec.nodeName ?? "",
    "spec.restartPolicy": pod.spec.restartPolicy ?? "",
    "spec.schedulerName": pod.spec.schedulerName ?? "",
    "spec.serviceAccountName": pod.spec.serviceAccountName ?? "",
    "spec.hostNetwork": String(pod.spec.hostNetwork ?? false),
    "status.phase": pod.status?.phase ?? "",
    "status.podIP": pod.status?.podIP ?? "",
    "status.nominatedNodeName": pod.status?.nominatedNodeName ?? "",
  };
}

export interface PodRoutesDeps {
  cache: PodCache;
  push: PushTarget;
  clock: Clock;
  /** The push routes' validation: privileged, host paths, trusted sources. */
  validation: ValidationOptions & { strictManifests?: boolean };
  /** Largest body, bytes (--max_manifest_bytes). */
  maxBytes: number;
  /** Why the API may not change this pod, or undefined when it may (default: it may change pods pushed over HTTP). */
  refuseEdit?: (pod: Pod) => string | undefined;
}

/** The bookkeeping annotations the kubelet stamps; a client's copy of them is dropped before a write. */
const STAMPED: string[] = [
  ANNOTATION.source,
  ANNOTATION.origin,
  ANNOTATION.document,
  ANNOTATION.hash,
  ANNOTATION.refusedEdit,
];

/** The source that owns a pod and where it reads it from, for refusals. */
function owner(pod: Pod): { source: string; origin: string } {
  const a = pod.metadata.annotations ?? {};
  return { source: a[ANNOTATION.source] ?? "unknown", origin: a[ANNOTATION.origin] ?? "" };
}

/** The edit a pod of another source needs, as the refusal says it. */
function editElsewhere(pod: Pod): string {
  const { source, origin } = owner(pod);
  const where =
    source === "file"
      ? `edit the file "${origin}"`
      : source === "url"
        ? `change what the URL "${origin}" serves`
        : source === "etcd"
          ? `write the etcd key "${origin}"`
          : `change it where it comes from (${origin || "unknown origin"})`;
  return `pod ${podKey(pod)} comes from the ${source} source; the API changes only pods pushed over HTTP: ${where} instead`;
}

export function createPodRoutes(deps: PodRoutesDeps): Hono {
  const app = new Hono();
  const { cache } = deps;
  const refuseEdit = deps.refuseEdit ?? ((pod: Pod) => (owner(pod).source === "http" ? undefined : editElsewhere(pod)));

  const list = (c: Context, namespace: string | undefined) => {
    const q = (name: string) => c.req.query(name) ?? "";
    const labels = parseLabelSelector(q("labelSelector"));
    const fields = parseFieldSelector(q("fieldSelector"), POD_SELECTABLE_FIELDS);
    const matches = (pod: Pod) =>
      (namespace === undefined || pod.metadata.namespace === namespace) &&
      labels.matches(pod.metadata.labels) &&
      fields.matches(podFields(pod));
    const table = wantsTable(c.req.header("accept"));
    const include = (c.req.query("includeObject") as IncludeObject | undefined) ?? "Metadata";
    const watching = isTrue(q("watch"));
    if (watching) return streamWatch(c, { cache, clock: deps.clock, matches, table, include });
    // resourceVersion=0 (client-go's informers) is served whole from the watch cache, limit ignored, as 1.32's is.
    if ((q("limit") && q("resourceVersion") !== "0") || q("continue"))
      return chunk(c, namespace, matches, labels.requirements.length + fields.requirements.length > 0);
    const { revision, pods } = cache.list();
    const items = pods.filter(matches);
    if (table) {
      const body = rows.table(items, {
        now: deps.clock.now(),
        include,
        metadata: { resourceVersion: String(revision) },
      });
      return c.body(body, 200, { "content-type": "application/json" });
    }
    // The whole list (what informers and -o json ask for) is serialised once per version, as /pods is.
    const whole = items.length === pods.length;
    const key = `${namespace ?? ""}@${revision}`;
    if (!whole || listCache?.key !== key) {
      const body = JSON.stringify({
        kind: "PodList",
        apiVersion: "v1",
        metadata: { resourceVersion: String(revision) },
        items,
      });
      if (!whole) return c.body(body, 200, { "content-type": "application/json" });
      listCache = { key, body };
    }
    return c.body(listCache.body, 200, { "content-type": "application/json" });
  };
  let listCache: { key: string; body: string } | undefined;
  // The pods' Table rows, rendered once per pod version (table-rows.ts), as fleet serve's list keeps them.
  const rows = createPodRows();

  /** A list page (kubectl asks `limit=500` and follows `continue`), from the snapshot the first page was read at. */
  const snapshots = createListSnapshots<Pod>({ keyOf: podKey, revisioned: true }, deps);
  const pages = snapshots.source(
    () => {
      const { revision, pods } = cache.list();
      return { revision, objects: pods };
    },
    (revision) => cache.listAt(revision),
  );
  const chunk = (c: Context, namespace: string | undefined, matches: (pod: Pod) => boolean, narrowed: boolean) => {
    const page = listChunk(
      pages,
      {
        limit: c.req.query("limit"),
        continue: c.req.query("continue"),
        resourceVersion: c.req.query("resourceVersion"),
      },
      { scope: namespace === undefined ? "" : `${namespace}/`, matches: narrowed ? matches : undefined },
    );
    const metadata = {
      resourceVersion: String(page.revision),
      ...(page.continue ? { continue: page.continue } : {}),
      ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    };
    if (wantsTable(c.req.header("accept"))) {
      const include = (c.req.query("includeObject") as IncludeObject | undefined) ?? "Metadata";
      const body = rows.table(page.items, { now: deps.clock.now(), include, metadata });
      return c.body(body, 200, { "content-type": "application/json" });
    }
    return c.json({ kind: "PodList", apiVersion: "v1", metadata, items: page.items });
  };

  const found = (namespace: string, name: string): Pod => {
    const pod = cache.get(namespace, name);
    if (!pod) throw notFound("pods", name);
    return pod;
  };

  app.get("/api/v1/pods", (c) => list(c, undefined));
  app.get("/api/v1/namespaces/:namespace/pods", (c) => list(c, c.req.param("namespace")));
  app.get("/api/v1/namespaces/:namespace/pods/:name", (c) => {
    const pod = found(c.req.param("namespace"), c.req.param("name"));
    if (wantsTable(c.req.header("accept")))
      return c.json(
        podTable([pod], {
          now: deps.clock.now(),
          include: (c.req.query("includeObject") as IncludeObject | undefined) ?? "Metadata",
          resourceVersion: pod.metadata.resourceVersion,
        }),
      );
    return c.json(pod);
  });
  app.get("/api/v1/namespaces/:namespace/pods/:name/status", (c) =>
    c.json(found(c.req.param("namespace"), c.req.param("name"))),
  );
  for (const method of ["put", "patch"] as const)
    app[method]("/api/v1/namespaces/:namespace/pods/:name/status", () => {
      throw methodNotSupported("pods/status", method === "put" ? "update" : "patch");
    });

  // --- writes: to the HTTP push source

  /** The request's body, bounded; 413 past the limit. */
  const body = async (c: Context): Promise<string> => {
    const text = await c.req.text();
    if (Buffer.byteLength(text) > deps.maxBytes)
      throw badRequest(`request body is larger than ${deps.maxBytes} bytes (--max_manifest_bytes)`);
    return text;
  };

  const parseAny = (text: string, yaml: boolean): unknown => {
    try {
      return yaml ? parseYaml(text) : JSON.parse(text);
    } catch (error) {
      throw badRequest(`the body of the request was in an unknown format: ${(error as Error).message}`);
    }
  };
  const parse = (text: string, yaml: boolean): Record<string, unknown> => {
    const value = parseAny(text, yaml);
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw badRequest("the body of the request was in an unknown format: expected a Pod object");
    return value as Record<string, unknown>;
  };

  /**
   * A client's object → the pod the push source gets: checked against the URL, stripped of what the kubelet
   * stamps and serves (status, resourceVersion, uid), read and validated as every pushed pod is.
   */
  const toPod = (c: Context, object: Record<string, unknown>, namespace: string, name?: string): Pod => {
    if (object.kind !== undefined && object.kind !== "Pod")
      throw badRequest(`the API at ${c.req.path} takes a Pod, got kind "${String(object.kind)}"`);
    if (object.apiVersion !== undefined && object.apiVersion !== "v1")
      throw badRequest(`the API at ${c.req.path} takes apiVersion "v1", got "${String(object.apiVersion)}"`);
    const metadata = { ...((object.metadata as Record<string, unknown> | undefined) ?? {}) };
    if (metadata.namespace !== undefined && metadata.namespace !== "" && metadata.namespace !== namespace)
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    if (name !== undefined && metadata.name !== undefined && metadata.name !== name)
      throw badRequest(
        `the name of the object (${String(metadata.name)}) does not match the name on the URL (${name})`,
      );
    const annotations = { ...((metadata.annotations as Record<string, string> | undefined) ?? {}) };
    for (const key of STAMPED) delete annotations[key];
    const { status: _, ...rest } = object;
    const {
      resourceVersion: _rv,
      uid: _uid,
      managedFields: _mf,
      creationTimestamp: _ct,
      generation: _g,
      ...kept
    } = metadata;
    const clean = {
      ...rest,
      apiVersion: "v1",
      kind: "Pod",
      metadata: { ...kept, name: name ?? kept.name, namespace, annotations },
    };
    const podName = String(clean.metadata.name ?? "");
    const origin = `${c.req.method} ${c.req.path}`;
    const { pods, rejected } = readManifests(
      JSON.stringify(clean),
      { source: "http", origin },
      { maxBytes: deps.maxBytes },
    );
    if (rejected.length || pods.length !== 1)
      throw invalid(
        "Pod",
        podName,
        rejected
          .flatMap((r) => r.issues)
          .concat(pods.length ? [] : [fieldError("", "Invalid value", undefined, "not a pod")]),
      );
    const pod = pods[0]!;
    const strict = c.req.query("fieldValidation") === "Strict" || (deps.validation.strictManifests ?? false);
    const issues: FieldIssue[] = applyManifestStrictness(validatePod(pod, deps.validation), strict).filter(
      (i) => i.severity === "error",
    );
    if (issues.length) throw invalid("Pod", podName, issues);
    return pod;
  };

  /** The existing pod if this API may change it; 403 naming its source when another source owns it. */
  const ownedHere = (namespace: string, name: string): Pod | undefined => {
    const existing = cache.get(namespace, name);
    const why = existing && refuseEdit(existing);
    if (why) throw forbidden("pods", name, why);
    return existing;
  };

  /** dryRun=All in the query, or (DELETE) in the DeleteOptions body client-go sends. */
  const dryRun = (c: Context, options?: { dryRun?: unknown }) =>
    c.req.query("dryRun") === "All" || (Array.isArray(options?.dryRun) && options.dryRun.includes("All"));

  /** Hands the pod to the push source; answers the pod as the API serves it now. */
  const store = async (c: Context, pod: Pod, existing: Pod | undefined): Promise<Pod> => {
    // Awaited: fleet serve's target (a promise) writes etcd, and a refused write is this request's error.
    if (!dryRun(c)) await deps.push.merge("http", "ADD", [pod]);
    const now = cache.get(pod.metadata.namespace, pod.metadata.name);
    if (!dryRun(c) && now && now.metadata.annotations[ANNOTATION.hash] === pod.metadata.annotations[ANNOTATION.hash])
      return now;
    return {
      ...pod,
      metadata: { ...pod.metadata, resourceVersion: String(cache.revision()) },
      ...(existing?.status ? { status: existing.status } : {}),
    };
  };

  app.post("/api/v1/namespaces/:namespace/pods", async (c) => {
    const namespace = c.req.param("namespace");
    const object = parse(await body(c), false);
    const name = String((object.metadata as { name?: unknown } | undefined)?.name ?? "");
    const existing = cache.get(namespace, name);
    if (existing) throw alreadyExists("pods", name, refuseEdit(existing) ?? "");
    const pod = toPod(c, object, namespace);
    return c.json(await store(c, pod, undefined), 201);
  });

  app.put("/api/v1/namespaces/:namespace/pods/:name", async (c) => {
    const { namespace, name } = c.req.param();
    const object = parse(await body(c), false);
    const existing = ownedHere(namespace, name);
    if (!existing) throw notFound("pods", name);
    const given = (object.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;
    if (given !== undefined && given !== "" && given !== existing.metadata.resourceVersion)
      throw conflict("pods", name);
    return c.json(await store(c, toPod(c, object, namespace, name), existing));
  });

  app.patch("/api/v1/namespaces/:namespace/pods/:name", async (c) => {
    const { namespace, name } = c.req.param();
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const kind = PATCH_TYPES[type as keyof typeof PATCH_TYPES];
    if (!kind)
      throw unsupportedMediaType(
        `the body of the request was in an unknown format - accepted media types include: ${Object.keys(PATCH_TYPES).join(", ")}`,
      );
    const text = await body(c);
    const existing = ownedHere(namespace, name);
    if (kind === "apply") {
      // Server-side apply with one field manager: the applied configuration is the whole pod this source holds.
      if (!c.req.query("fieldManager"))
        throw invalid("PatchOptions", "", [
          fieldError("fieldManager", "Required value", undefined, "is required for apply patch"),
        ]);
      const pod = toPod(c, parse(text, true), namespace, name);
      return c.json(await store(c, pod, existing), existing ? 200 : 201);
    }
    if (!existing) throw notFound("pods", name);
    const patched = applyPatch(kind, existing, parseAny(text, false)) as Record<string, unknown>;
    return c.json(await store(c, toPod(c, patched, namespace, name), existing));
  });

  app.delete("/api/v1/namespaces/:namespace/pods/:name", async (c) => {
    const { namespace, name } = c.req.param();
    const text = await body(c);
    const options = text.trim() ? (parse(text, false) as { dryRun?: unknown }) : {};
    const existing = ownedHere(namespace, name);
    if (!existing) throw notFound("pods", name);
    if (!dryRun(c, options)) await deps.push.merge("http", "REMOVE", [existing]);
    // A pod already terminating keeps the deletion it got first, as the API server answers a second delete.
    const grace = existing.metadata.deletionGracePeriodSeconds ?? existing.spec.terminationGracePeriodSeconds ?? 30;
    return c.json({
      ...existing,
      metadata: {
        ...existing.metadata,
        deletionTimestamp:
          existing.metadata.deletionTimestamp ??
          new Date(deps.clock.now() + grace * 1000).toISOString().replace(/\.\d+Z$/, "Z"),
        deletionGracePeriodSeconds: grace,
      },
    });
  });
  return app;
}
