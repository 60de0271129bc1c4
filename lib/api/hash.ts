// Pure: stable hashes of pod model values. The merge store tells edits apart by the pod's hash; a
// container's hash and its pod's sandbox hash, stamped as labels, tell the sync what to replace.
//
// Decision: pod model values are not changed once read (manifest.ts builds them; later steps copy), so
// the container and sandbox hashes are kept per object: the periodic resync hashed every container of
// every pod each round, a tenth of an idle hollow node's time (bench/fleet-scale.bench.ts, profiled).
import { createHash } from "node:crypto";
import { ANNOTATION, type Pod, type V1Container } from "./types.ts";

/** Annotations the kubelet writes itself: they never change what a pod means. */
const BOOKKEEPING = new Set<string>([
  ANNOTATION.source,
  ANNOTATION.origin,
  ANNOTATION.hash,
  ANNOTATION.document,
  ANNOTATION.format,
]);

/** JSON with object keys sorted, so equal values always serialise the same. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const object = value as Record<string, unknown>;
    return `{${Object.keys(object)
      .filter((k) => object[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(object[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function sha256(value: unknown, length: number): string {
  return createHash("sha256").update(stableJson(value)).digest("hex").slice(0, length);
}

/** Stable hash of what a pod means (name, namespace, labels, annotations, spec), key order aside. */
export function podSpecHash(pod: Pod): string {
  const annotations = Object.fromEntries(
    Object.entries(pod.metadata.annotations ?? {}).filter(([k]) => !BOOKKEEPING.has(k)),
  );
  return sha256(
    {
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      uid: pod.metadata.uid,
      labels: pod.metadata.labels ?? {},
      annotations,
      spec: pod.spec,
    },
    16,
  );
}

/** Stable hash of a container's spec: a change replaces just that container. */
export function containerHash(container: V1Container): string {
  let hash = containerHashes.get(container);
  if (hash === undefined) containerHashes.set(container, (hash = sha256(container, 8)));
  return hash;
}
const containerHashes = new WeakMap<V1Container, string>();

/** What the pod sandbox embodies, field by field. */
function sandboxFields(pod: Pod, networkMode: string): Record<string, unknown> {
  const ports = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => p.hostPort)
      .map((p) => `${p.hostIP ?? ""}:${p.hostPort}:${p.containerPort}/${p.protocol}`),
  );
  return {
    hostNetwork: !!pod.spec.hostNetwork,
    hostIPC: !!pod.spec.hostIPC,
    hostPID: !!pod.spec.hostPID,
    hostname: pod.spec.hostname ?? "",
    ports,
    networkMode,
    volumes: pod.spec.volumes ?? [],
  };
}

/** Hash of what the pod sandbox embodies; a change recreates the whole pod. */
export function podSandboxHash(pod: Pod, networkMode: string): string {
  const kept = sandboxHashes.get(pod);
  if (kept?.networkMode === networkMode) return kept.hash;
  const hash = sha256(sandboxFields(pod, networkMode), 8);
  sandboxHashes.set(pod, { networkMode, hash });
  return hash;
}
const sandboxHashes = new WeakMap<Pod, { networkMode: string; hash: string }>();

/**
 * A short hash per field (`{"image":"1a2b",…}`), stamped as a label beside the spec hash so that a
 * change can be explained field by field (`kubelet plan`) without keeping the old spec anywhere.
 */
export function fieldHashes(value: object): string {
  return stableJson(
    Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, sha256(v, 4)]),
    ),
  );
}

export function containerFieldHashes(container: V1Container): string {
  return fieldHashes(container);
}

export function sandboxFieldHashes(pod: Pod, networkMode: string): string {
  return fieldHashes(sandboxFields(pod, networkMode));
}

/** The fields whose hashes differ between two fieldHashes labels; undefined when `before` is missing or unreadable. */
export function changedFields(before: string | undefined, after: string): string[] | undefined {
  if (!before) return undefined;
  let old: Record<string, string>;
  try {
    old = JSON.parse(before) as Record<string, string>;
  } catch {
    return undefined;
  }
  const now = JSON.parse(after) as Record<string, string>;
  return [...new Set([...Object.keys(old), ...Object.keys(now)])].filter((k) => old[k] !== now[k]).sort();
}
