// The downward API: a pod's own fields and a container's resources as the strings that env variables and
// downward API volume files hold (the Go kubelet's fieldpath.ExtractFieldPathAsString and its resource
// helpers), one resolver for both.
import { parseQuantity } from "./quantity.ts";
import type { Pod, V1Container } from "./types.ts";

/** Where the pod runs: what spec.nodeName and status.hostIP/podIP resolve to. */
export interface PodPlacement {
  nodeName: string;
  hostIP: string;
  /** "" for network none. */
  podIP: string;
}

/** The node's capacity: a resourceFieldRef to a limit the container does not set reads it. */
export interface NodeCapacity {
  cpus: number;
  memoryBytes: number;
}

/** The kubelet's own bookkeeping annotations are not part of what the pod's author wrote. */
const INTERNAL_ANNOTATION = /^kubelet\.io\//;

/**
 * A fieldRef's value, or undefined for a path the downward API does not have. spec.* and status.* resolve only
 * with a placement: a downward API volume holds metadata only, as Kubernetes allows.
 */
export function podFieldValue(pod: Pod, path: string, placement?: PodPlacement): string | undefined {
  const keyed = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(path);
  if (keyed) return (keyed[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations)?.[keyed[2]!] ?? "";
  switch (path) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace;
    case "metadata.uid":
      return pod.metadata.uid;
    case "metadata.labels":
      return formatMap(pod.metadata.labels ?? {});
    case "metadata.annotations":
      return formatMap(
        Object.fromEntries(Object.entries(pod.metadata.annotations).filter(([k]) => !INTERNAL_ANNOTATION.test(k))),
      );
  }
  if (!placement) return undefined;
  switch (path) {
    case "spec.nodeName":
      return placement.nodeName;
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "default";
    case "status.hostIP":
      return placement.hostIP;
    case "status.podIP":
    case "status.podIPs":
      return placement.podIP;
    default:
      return undefined;
  }
}

/** `key="value"` lines in key order, values quoted as Go's %q does: the downward API file format. */
function formatMap(map: Record<string, string>): string {
  return Object.keys(map)
    .sort()
    .map((key) => `${key}=${JSON.stringify(map[key])}`)
    .join("\n");
}

/** A resourceFieldRef's value (env or downward API file): the container's figure, or the node's for a missing limit. */
export function resourceFieldValue(
  container: V1Container,
  ref: { resource: string; divisor?: string | number },
  node: NodeCapacity,
): string {
  const [kind, name] = ref.resource.split(".") as ["limits" | "requests", "cpu" | "memory"];
  const raw = container.resources?.[kind]?.[name];
  const value =
    raw !== undefined ? parseQuantity(raw)! : kind === "limits" ? (name === "cpu" ? node.cpus : node.memoryBytes) : 0;
  const divisor = ref.divisor !== undefined ? parseQuantity(ref.divisor) || 1 : 1;
  return String(Math.ceil(value / divisor));
}
