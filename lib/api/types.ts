// The pod model every part of the kubelet shares: a defaulted Kubernetes v1 Pod, the
// updates the merge store emits, and the status the sync loop reports.
// Folder api/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import type {
  Container as V1Container,
  ContainerStatus as V1ContainerStatus,
  Node as V1Node,
  NodeCondition as V1NodeCondition,
  Pod as V1Pod,
  PodCondition as V1PodCondition,
  PodSpec as V1PodSpec,
  PodStatus as V1PodStatus,
  Volume as V1Volume,
} from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";

export type {
  V1Container,
  V1ContainerStatus,
  V1Node,
  V1NodeCondition,
  V1Pod,
  V1PodCondition,
  V1PodSpec,
  V1PodStatus,
  V1Volume,
};

/** Where desired pods come from; also the value of the `kubernetes.io/config.source` annotation. */
export type SourceName = "file" | "url" | "etcd" | "http";

/** Annotations the kubelet stamps on every pod it accepts (the names the real kubelet uses). */
export const ANNOTATION = {
  source: "kubernetes.io/config.source",
  /** Hash of the pod as written; changes whenever the manifest's meaning changes. */
  hash: "kubernetes.io/config.hash",
  /** The file, URL or etcd key the pod was read from. */
  origin: "kubelet.io/config.origin",
  /** Which document of a multi-document file the pod came from (0-based). */
  document: "kubelet.io/config.document",
  /** Set to CONTAINER_MANIFEST on a pod converted from the 2014 format, whose rules validation then applies. */
  format: "kubelet.io/config.format",
  /** Hash of the manifest as `kubelet fleet apply` placed it: which version a node runs. */
  manifestHash: "kubelet.io/manifest-hash",
  /** On a pod served by /pods whose newest edit was refused: why (the last good version is what runs). */
  refusedEdit: "kubelet.io/refused-edit",
} as const;

/** ANNOTATION.format's value for a v1beta1/v1beta2 ContainerManifest. */
export const CONTAINER_MANIFEST = "ContainerManifest";

/**
 * A pod after parsing, conversion and defaulting: name, namespace and uid are always set,
 * spec.containers is non-empty and every Kubernetes default has been applied.
 */
export interface Pod extends V1Pod {
  apiVersion: "v1";
  kind: "Pod";
  metadata: ObjectMeta & {
    name: string;
    namespace: string;
    uid: string;
    annotations: Record<string, string>;
  };
  spec: V1PodSpec;
}

/** Operations of the merge store (the Go PodOperation). */
export type PodOperation = "SET" | "ADD" | "UPDATE" | "REMOVE";

/** One update from the merge store to the sync loop; `source` is "*" for merged SETs. */
export interface PodUpdate {
  op: PodOperation;
  pods: Pod[];
  source: SourceName | "*";
}

/** A problem found in input, Kubernetes style: `spec.containers[0].image: Required value`. */
export interface FieldIssue {
  /** Field path as Kubernetes prints it, e.g. `spec.containers[1].name`. */
  path: string;
  /**
   * Kubernetes error type: "Required value", "Invalid value", "Duplicate value", "Unsupported value", "Forbidden",
   * "Too long", "Not supported".
   */
  type: string;
  /** Offending value when there is one (printed JSON-quoted, as Kubernetes does). */
  value?: unknown;
  /** Extra detail: what is allowed, how to fix it. */
  detail?: string;
  severity: "error" | "warning";
}

/** An error-severity issue; `value` and `detail` only when given. */
export function fieldError(path: string, type: string, value?: unknown, detail?: string): FieldIssue {
  return { path, type, ...(value !== undefined ? { value } : {}), ...(detail ? { detail } : {}), severity: "error" };
}

/** Formats an issue the way Kubernetes does: `path: Type: "value": detail`. */
export function formatIssue(issue: FieldIssue): string {
  let text = `${issue.path}: ${issue.type}`;
  if (issue.value !== undefined) text += `: ${JSON.stringify(issue.value)}`;
  if (issue.detail) text += `: ${issue.detail}`;
  return text;
}

/** A pod that could not be accepted, with where it came from and why. */
export interface RejectedPod {
  source: SourceName;
  /** File path, URL or etcd key. */
  origin: string;
  /** Document index within the origin (0-based), when the origin holds several. */
  document?: number;
  /** `namespace/name` when it could be read. */
  pod?: string;
  /** Set when the object is a ConfigMap or Secret rather than a pod. */
  kind?: "ConfigMap" | "Secret";
  issues: FieldIssue[];
}

/** Errors that cross module boundaries carry a code and are checked by code. */
export class KubeletError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "KubeletError";
  }
}

/** Kubernetes pod phases. */
export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";

/** `namespace/name`, the key pods are known by everywhere. */
export function podKey(pod: { metadata: { name: string; namespace: string } }): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** A sidecar (KEP-753): an init container with `restartPolicy: Always`, kept running beside the app containers. */
export function isSidecar(container: V1Container): boolean {
  return container.restartPolicy === "Always";
}
