// `kubelet get pods|nodes|events|namespaces|configmaps|secrets [NAME]`: a thin client of this node's API that
// prints what kubectl prints — the Table the server returns (columns of priority 0, all with -o wide, NAMESPACE
// first with -A), or the objects as yaml, json or names — with kubectl's flags (-n, -A, -l, --field-selector, -o).
import { stringifyYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";
import type { ApiClient } from "./api-client.ts";
import { tabwrite } from "./tabwriter.ts";

/** A resource `kubelet get` knows: its path, whether it is namespaced, and kubectl's names for it. */
export interface ResourceKind {
  resource: string;
  namespaced: boolean;
  /** The kind's lower-case name, as `-o name` prints it. */
  singular: string;
  aliases: string[];
}

export const RESOURCES: ResourceKind[] = [
  { resource: "pods", namespaced: true, singular: "pod", aliases: ["po", "pod"] },
  { resource: "nodes", namespaced: false, singular: "node", aliases: ["no", "node"] },
  { resource: "events", namespaced: true, singular: "event", aliases: ["ev", "event"] },
  { resource: "namespaces", namespaced: false, singular: "namespace", aliases: ["ns", "namespace"] },
  { resource: "configmaps", namespaced: true, singular: "configmap", aliases: ["cm", "configmap"] },
  { resource: "secrets", namespaced: true, singular: "secret", aliases: ["secret"] },
];

/** The resource `name` (plural, singular or short name, as kubectl takes them); a usage error names the known ones. */
export function resourceKind(name: string): ResourceKind {
  const lower = name.toLowerCase();
  const found = RESOURCES.find((r) => r.resource === lower || r.aliases.includes(lower));
  if (!found)
    throw new KubeletError(
      "UnknownResource",
      `the server doesn't have a resource type "${name}" that kubelet get reads: use ${RESOURCES.map((r) => r.resource).join(", ")}`,
    );
  return found;
}

export type GetFormat = "table" | "wide" | "yaml" | "json" | "name";

export interface GetOptions {
  kind: ResourceKind;
  name?: string;
  namespace: string;
  allNamespaces: boolean;
  labelSelector?: string;
  fieldSelector?: string;
  format: GetFormat;
}

/** The API path a get reads. */
export function getPath(options: GetOptions): string {
  const { kind, name } = options;
  const scope =
    kind.namespaced && !(options.allNamespaces && !name) ? `/namespaces/${encodeURIComponent(options.namespace)}` : "";
  const query = new URLSearchParams();
  if (options.labelSelector) query.set("labelSelector", options.labelSelector);
  if (options.fieldSelector) query.set("fieldSelector", options.fieldSelector);
  const tail = query.size ? `?${query}` : "";
  return `/api/v1${scope}/${kind.resource}${name ? `/${encodeURIComponent(name)}` : ""}${tail}`;
}

/** metav1.Table as the server sends it. */
export interface ServerTable {
  columnDefinitions: Array<{ name: string; priority?: number }>;
  rows: Array<{ cells: unknown[]; object?: { metadata?: { namespace?: string } } }>;
}

/** A Table printed as kubectl's human-readable printer does. */
export function printTable(table: ServerTable, options: { wide: boolean; withNamespace: boolean }): string {
  const shown = table.columnDefinitions.flatMap((column, index) =>
    options.wide || !column.priority ? [{ name: column.name.toUpperCase(), index }] : [],
  );
  const header = [...(options.withNamespace ? ["NAMESPACE"] : []), ...shown.map((c) => c.name)];
  const rows = table.rows.map((row) => [
    ...(options.withNamespace ? [row.object?.metadata?.namespace ?? ""] : []),
    ...shown.map((c) => cellText(row.cells[c.index])),
  ]);
  return tabwrite(`${[header, ...rows].map((cells) => cells.join("\t")).join("\n")}\n`, 6, 3);
}

/** A cell as kubectl prints it: `<none>` for null, text as is, everything else as Go's %v would. */
function cellText(cell: unknown): string {
  if (cell === null || cell === undefined) return "<none>";
  if (typeof cell === "string") return cell;
  if (typeof cell === "number" || typeof cell === "boolean") return String(cell);
  return JSON.stringify(cell);
}

/** Runs a get: what to print on stdout, and kubectl's "No resources found" note for stderr. */
export async function getCommand(client: ApiClient, options: GetOptions): Promise<{ out: string; note?: string }> {
  const path = getPath(options);
  if (options.format === "table" || options.format === "wide") {
    const table = await client.get<ServerTable>(path, { table: true });
    if (table.rows.length === 0) {
      const where = options.kind.namespaced && !options.allNamespaces ? ` in ${options.namespace} namespace` : "";
      return { out: "", note: `No resources found${where}.` };
    }
    return {
      out: printTable(table, {
        wide: options.format === "wide",
        withNamespace: options.kind.namespaced && options.allNamespaces && !options.name,
      }),
    };
  }
  const body = await client.get<{ items?: Array<{ metadata: { name: string } }>; metadata: { name: string } }>(path);
  const items = options.name ? [body] : (body.items ?? []);
  if (options.format === "name")
    return { out: items.map((item) => `${options.kind.singular}/${item.metadata.name}\n`).join("") };
  // A list is printed as kubectl does: kind List, each item with its kind and apiVersion.
  const printed = options.name ? body : { apiVersion: "v1", items, kind: "List", metadata: { resourceVersion: "" } };
  return { out: options.format === "json" ? `${JSON.stringify(printed, null, 4)}\n` : stringifyYaml(printed) };
}
