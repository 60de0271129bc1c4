// Server-side printing as kube-apiserver does it (metav1.Table): column definitions, one row per object with every
// column (kubectl hides priority > 0 without -o wide), the row's object as PartialObjectMetadata by default, and the
// ages in apimachinery's HumanDuration; plus the List or Table answer a GET of a collection gets.
import type { Context } from "hono";
import { humanDuration, wantsTable } from "./table.ts";

/** metav1.TableColumnDefinition. */
export interface TableColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  format?: string;
  description?: string;
  priority?: number;
}

/** A string column; priority 1 for the ones kubectl shows with -o wide only. */
export function column(name: string, description: string, priority = 0): TableColumn {
  return { name, type: "string", description, ...(priority ? { priority } : {}) };
}

/** The NAME column every resource's Table starts with. */
export const NAME_COLUMN: TableColumn = {
  name: "Name",
  type: "string",
  format: "name",
  description: "Name must be unique within a namespace.",
};

/** The AGE column, from metadata.creationTimestamp. */
export const AGE_COLUMN: TableColumn = {
  name: "Age",
  type: "string",
  description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
};

/** The metadata of a namespaced object as served here. */
export interface ServedMeta {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  labels?: Record<string, string>;
}

/** An object as the API serves it: what a Table row needs of it. */
export interface ApiObject {
  metadata?: object;
}

/** metav1.Time's form, RFC 3339 to the second: `2026-01-01T00:00:00Z`. */
export function rfc3339(time: string | number): string {
  return new Date(time).toISOString().replace(/\.\d+Z$/, "Z");
}

/** translateTimestampSince: the age of an RFC 3339 time, `<unknown>` without one. */
export function age(timestamp: string | undefined, now: number): string {
  const at = timestamp ? Date.parse(timestamp) : NaN;
  return Number.isNaN(at) ? "<unknown>" : humanDuration(now - at);
}

/** The row's `object` as `includeObject` asks: None, Metadata (the default) or Object. */
function rowObject(object: ApiObject, include: string | undefined): object | undefined {
  if (include === "None") return undefined;
  if (include === "Object") return object;
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata ?? {} };
}

/** A metav1.Table of `objects`, one row each. */
export function toTable<T extends ApiObject>(
  columns: TableColumn[],
  objects: T[],
  cells: (object: T) => unknown[],
  options: { resourceVersion?: string; includeObject?: string; noHeaders?: boolean } = {},
) {
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion: options.resourceVersion ?? "" },
    columnDefinitions: options.noHeaders
      ? []
      : columns.map((column) => ({ format: "", description: "", priority: 0, ...column })),
    rows: objects.map((object) => {
      const row = rowObject(object, options.includeObject);
      return { cells: cells(object), ...(row ? { object: row } : {}) };
    }),
  };
}

/** How a collection is printed: its columns and each object's cells. */
export interface Printer<T extends ApiObject> {
  columns: TableColumn[];
  cells(object: T, now: number): unknown[];
}

/** Answers a GET of one object or a collection: a Table when asked, else the object or the `<Kind>List`. */
export function respond<T extends ApiObject>(
  c: Context,
  printer: Printer<T>,
  objects: T | T[],
  options: {
    listKind: string;
    apiVersion?: string;
    resourceVersion?: string;
    now: number;
    /** A page's continue token and remainingItemCount (list-page.ts). */
    page?: { continue?: string; remainingItemCount?: number };
  },
): Response {
  const resourceVersion = options.resourceVersion ?? "";
  const metadata = { resourceVersion, ...options.page };
  if (wantsTable(c.req.header("accept"))) {
    const noHeaders = /noHeaders=true/.test(c.req.header("accept") ?? "");
    const table = toTable(
      printer.columns,
      Array.isArray(objects) ? objects : [objects],
      (o) => printer.cells(o, options.now),
      {
        resourceVersion,
        includeObject: c.req.query("includeObject"),
        noHeaders,
      },
    );
    return c.json({ ...table, metadata });
  }
  if (!Array.isArray(objects)) return c.json(objects);
  return c.json({
    kind: options.listKind,
    apiVersion: options.apiVersion ?? "v1",
    metadata,
    items: objects,
  });
}
