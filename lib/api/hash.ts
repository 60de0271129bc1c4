// Pure: stable hashes of pod model values. The merge store tells edits apart by the pod's hash; a
// container's hash and its pod's sandbox hash, stamped as labels, tell the sync what to replace.
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
  return sha256(container, 8);
}

/** Hash of what the pod sandbox embodies; a change recreates the whole pod. */
export function podSandboxHash(pod: Pod, networkMode: string): string {
  const ports = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => p.hostPort)
      .map((p) => `${p.hostIP ?? ""}:${p.hostPort}:${p.containerPort}/${p.protocol}`),
  );
  return sha256(
    {
      hostNetwork: !!pod.spec.hostNetwork,
      hostIPC: !!pod.spec.hostIPC,
      hostPID: !!pod.spec.hostPID,
      hostname: pod.spec.hostname ?? "",
      ports,
      networkMode,
      volumes: pod.spec.volumes ?? [],
    },
    8,
  );
}
