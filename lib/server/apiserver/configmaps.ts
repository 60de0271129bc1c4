// core/v1 ConfigMaps (and, through secrets.ts, Secrets) the sources provide: list and get across namespaces or in
// one; create, replace, patch (merge and strategic merge, which are the same for these kinds) and delete of the
// ones pushed over HTTP, merged as the push routes do (source "http"). An object another source provides is
// changed where it comes from: the refusal (403, as the pods API's) names the file, URL or etcd key.
import { Hono, type Context } from "hono";
import {
  configBytes,
  toConfigObject,
  validateConfigObject,
  type ConfigKind,
  type ConfigObject,
} from "../../api/config-objects.ts";
import { ANNOTATION, formatIssue } from "../../api/types.ts";
import type { PushTarget } from "../push-routes.ts";
import { status } from "../server-support.ts";
import type { APIResource } from "./api-resource.ts";
import { mergePatch } from "./configmaps-patch.ts";
import { decodeConfigProtobuf, PROTOBUF } from "./configmaps-protobuf.ts";
import { allOf, createListPages } from "./list-page.ts";
import { fieldSelector, labelSelector } from "./selectors.ts";
import {
  age,
  respond,
  rfc3339,
  type ApiObject,
  type Printer,
  AGE_COLUMN,
  NAME_COLUMN,
  type ServedMeta,
} from "./table-print.ts";

/** A ConfigMap or Secret as the API serves it. */
export interface ServedConfig extends ApiObject {
  [field: string]: unknown;
  apiVersion: "v1";
  kind: ConfigKind;
  metadata: ServedMeta & { annotations: Record<string, string> };
}

export const CONFIGMAP_RESOURCE: APIResource = {
  name: "configmaps",
  singularName: "configmap",
  namespaced: true,
  kind: "ConfigMap",
  verbs: ["create", "delete", "get", "list", "patch", "update"],
  shortNames: ["cm"],
};

export const CONFIGMAP_PRINTER: Printer<ServedConfig> = {
  columns: [
    NAME_COLUMN,
    { name: "Data", type: "string", description: "Data contains the configuration data." },
    AGE_COLUMN,
  ],
  cells: (cm, now) => [
    cm.metadata.name,
    Object.keys((cm.data as object | undefined) ?? {}).length +
      Object.keys((cm.binaryData as object | undefined) ?? {}).length,
    age(cm.metadata.creationTimestamp, now),
  ],
};

export interface ConfigRoutesDeps {
  /** Every ConfigMap and Secret the sources provide now. */
  configs(): ConfigObject[];
  push: PushTarget;
  now?(): number;
}

/** How one kind is served: its resource name, List kind and printer. */
export interface ConfigKindSpec {
  kind: ConfigKind;
  resource: string;
  printer: Printer<ServedConfig>;
}

/** The served form: Secrets carry every key in `data` (stringData merged, as the API server stores them). */
function served(object: ConfigObject, meta: { uid: string; version: number; created: string }): ServedConfig {
  const { apiVersion, kind, metadata, stringData: _, data, ...rest } = object;
  const secretData =
    kind === "Secret"
      ? Object.fromEntries([...configBytes(object)].map(([key, bytes]) => [key, bytes.toString("base64")]))
      : data;
  return {
    apiVersion,
    kind,
    metadata: {
      ...metadata,
      uid: meta.uid,
      resourceVersion: String(meta.version),
      creationTimestamp: meta.created,
    },
    ...(secretData && Object.keys(secretData).length ? { data: secretData } : {}),
    ...rest,
  };
}

/** A write refused: the Status body and its code. */
function refuse(
  c: Context,
  code: number,
  reason: string,
  message: string,
  causes?: Array<{ field: string; message: string }>,
) {
  return c.json(status(code, reason, message, causes), code as 400);
}

/** The routes of one kind: /api/v1/{resource} and /api/v1/namespaces/{namespace}/{resource}[/{name}]. */
export function createConfigRoutes(spec: ConfigKindSpec, deps: ConfigRoutesDeps): Hono {
  const now = deps.now ?? Date.now;
  const { kind, resource, printer } = spec;
  let counter = 0;
  /** Per key: uid, first seen, and the version of the object last seen there (a new object: a new version). */
  const known = new Map<string, { uid: string; created: string; object: ConfigObject; version: number }>();
  const key = (namespace: string, name: string) => `${namespace}/${name}`;
  const objects = (): ServedConfig[] => {
    const present = deps.configs().filter((o) => o.kind === kind);
    const keys = new Set<string>();
    const result = present.map((object) => {
      const k = key(object.metadata.namespace, object.metadata.name);
      keys.add(k);
      let meta = known.get(k);
      if (!meta) {
        meta = { uid: crypto.randomUUID(), created: rfc3339(now()), object, version: ++counter };
        known.set(k, meta);
      } else if (meta.object !== object) {
        meta.object = object;
        meta.version = ++counter;
      }
      return served(object, meta);
    });
    for (const k of known.keys()) if (!keys.has(k)) known.delete(k);
    return result;
  };
  const find = (namespace: string, name: string) =>
    objects().find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  const notFound = (c: Context, name: string) => refuse(c, 404, "NotFound", `${resource} "${name}" not found`);

  const pages = createListPages(
    { printer, listKind: `${kind}List`, keyOf: (o) => `${o.metadata.namespace}/${o.metadata.name}` },
    { clock: { now } },
  );
  const list = (c: Context, namespace?: string) => {
    const byField = fieldSelector(c.req.query("fieldSelector"), {
      "metadata.name": (o: ServedConfig) => o.metadata.name,
      "metadata.namespace": (o: ServedConfig) => o.metadata.namespace,
      ...(kind === "Secret" ? { type: (o: ServedConfig) => o.type as string } : {}),
    });
    const all = objects();
    return pages(c, {
      read: () => ({ revision: counter, objects: all }),
      namespace,
      matches: allOf(byField, labelSelector<ServedConfig>(c.req.query("labelSelector"))),
    });
  };

  /** Validates `body` as this kind in `namespace` and pushes it; `existing` is what a replace or patch changes. */
  const write = (c: Context, body: unknown, namespace: string, name: string | undefined, existing?: ServedConfig) => {
    if (typeof body !== "object" || body === null || Array.isArray(body))
      return refuse(c, 400, "BadRequest", `the body of a ${kind} must be a JSON object`);
    const raw = body as Record<string, unknown>;
    const metadata = (typeof raw.metadata === "object" && raw.metadata ? raw.metadata : {}) as Record<string, unknown>;
    if (raw.kind !== undefined && raw.kind !== kind)
      return refuse(
        c,
        400,
        "BadRequest",
        `the kind of the object is "${String(raw.kind)}": ${resource} takes kind ${kind}`,
      );
    if (metadata.namespace !== undefined && metadata.namespace !== namespace)
      return refuse(
        c,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    if (name !== undefined && metadata.name !== undefined && metadata.name !== name)
      return refuse(c, 400, "BadRequest", "the name of the object does not match the name on the URL");
    const objectName = String(metadata.name ?? name ?? "");
    const origin = `${c.req.method} ${c.req.path}`;
    const object = toConfigObject(
      { ...raw, kind, metadata: { ...metadata, name: objectName, namespace } },
      { source: "http", origin, document: 0 },
    );
    const issues = validateConfigObject(object).filter((i) => i.severity === "error");
    if (
      existing?.immutable === true &&
      JSON.stringify(served(object, meta0).data ?? {}) !== JSON.stringify(existing.data ?? {})
    )
      issues.push({
        path: "data",
        type: "Forbidden",
        detail: "field is immutable when `immutable` is set",
        severity: "error",
      });
    if (issues.length) {
      const text = issues.map(formatIssue);
      return refuse(
        c,
        422,
        "Invalid",
        `${kind} "${objectName}" is invalid: ${text.length === 1 ? text[0] : `[${text.join(", ")}]`}`,
        issues.map((i) => ({ field: i.path, message: formatIssue(i).slice(i.path.length + 2) })),
      );
    }
    deps.push.mergeConfigs("http", "ADD", [object]);
    const stored = find(namespace, objectName);
    if (!stored)
      return refuse(
        c,
        500,
        "InternalError",
        `${kind} ${namespace}/${objectName} was pushed but is not served: see the kubelet's log`,
      );
    return c.json(stored, existing ? 200 : 201);
  };

  /** The refusal for changing an object another source provides, naming where to change it. */
  const ownedElsewhere = (c: Context, object: ServedConfig) => {
    const source = object.metadata.annotations[ANNOTATION.source];
    if (source === "http") return undefined;
    const origin = object.metadata.annotations[ANNOTATION.origin] ?? source;
    // Worded as the pods API refuses a file's pod: Forbidden, naming where the object is changed instead.
    const where = source === "file" ? `edit the file "${origin}" instead` : `change it at ${origin} instead`;
    return refuse(
      c,
      403,
      "Forbidden",
      `${resource} "${object.metadata.name}" is forbidden: ${kind} ${object.metadata.namespace}/${object.metadata.name} comes from the ${source} source; the API changes only ${kind}s pushed over HTTP: ${where}`,
    );
  };

  /** The body as JSON, or as Kubernetes protobuf when kubectl's typed client sends it so. */
  const readJson = async (c: Context) => {
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
    try {
      if (type === PROTOBUF)
        return { body: decodeConfigProtobuf(new Uint8Array(await c.req.arrayBuffer())) as unknown };
      return { body: (await c.req.json()) as unknown };
    } catch (error) {
      return {
        error: refuse(
          c,
          400,
          "BadRequest",
          `the request body is not a ${type === PROTOBUF ? "readable protobuf " + kind : "JSON object"}: ${(error as Error).message}`,
        ),
      };
    }
  };

  const app = new Hono();
  app.get(`/api/v1/${resource}`, (c) => list(c));
  app.get(`/api/v1/namespaces/:namespace/${resource}`, (c) => list(c, c.req.param("namespace")));
  app.get(`/api/v1/namespaces/:namespace/${resource}/:name`, (c) => {
    const { namespace, name } = c.req.param();
    const object = find(namespace, name);
    return object ? respond(c, printer, object, { listKind: `${kind}List`, now: now() }) : notFound(c, name);
  });
  app.post(`/api/v1/namespaces/:namespace/${resource}`, async (c) => {
    const namespace = c.req.param("namespace");
    const { body, error } = await readJson(c);
    if (error) return error;
    const name = (body as { metadata?: { name?: unknown } })?.metadata?.name;
    if (typeof name === "string" && find(namespace, name))
      return refuse(c, 409, "AlreadyExists", `${resource} "${name}" already exists`);
    return write(c, body, namespace, undefined);
  });
  app.put(`/api/v1/namespaces/:namespace/${resource}/:name`, async (c) => {
    const { namespace, name } = c.req.param();
    const existing = find(namespace, name);
    if (!existing) return notFound(c, name);
    const refused = ownedElsewhere(c, existing);
    if (refused) return refused;
    const { body, error } = await readJson(c);
    return error ?? write(c, body, namespace, name, existing);
  });
  app.patch(`/api/v1/namespaces/:namespace/${resource}/:name`, async (c) => {
    const { namespace, name } = c.req.param();
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
    if (type !== "application/merge-patch+json" && type !== "application/strategic-merge-patch+json")
      return refuse(
        c,
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json (server-side apply and JSON patch are not served by a kubelet; use kubectl apply without --server-side)`,
      );
    const existing = find(namespace, name);
    if (!existing) return notFound(c, name);
    const refused = ownedElsewhere(c, existing);
    if (refused) return refused;
    const { body, error } = await readJson(c);
    if (error) return error;
    const { metadata: _, ...patchable } = existing;
    const current = { ...patchable, metadata: stripBookkeeping(existing.metadata) };
    let patched: unknown;
    try {
      patched = mergePatch(current, body);
    } catch (e) {
      return refuse(c, 400, "BadRequest", (e as Error).message);
    }
    return write(c, patched, namespace, name, existing);
  });
  app.delete(`/api/v1/namespaces/:namespace/${resource}/:name`, (c) => {
    const { namespace, name } = c.req.param();
    const existing = find(namespace, name);
    if (!existing) return notFound(c, name);
    const refused = ownedElsewhere(c, existing);
    if (refused) return refused;
    deps.push.mergeConfigs("http", "REMOVE", [
      { apiVersion: "v1", kind, metadata: { namespace, name, annotations: {} } },
    ]);
    return c.json(existing);
  });
  return app;
}

const meta0 = { uid: "", version: 0, created: "" };

/** Metadata a client may send back, without what the server sets (the bookkeeping annotations are set again). */
function stripBookkeeping(metadata: ServedConfig["metadata"]) {
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, annotations, ...rest } = metadata;
  const kept = Object.fromEntries(
    Object.entries(annotations).filter(([key]) => !(Object.values(ANNOTATION) as string[]).includes(key)),
  );
  return { ...rest, ...(Object.keys(kept).length ? { annotations: kept } : {}) };
}
