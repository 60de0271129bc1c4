// Helpers the info server's routes share: Kubernetes Status errors and container lookup by labels.
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Pod } from "../api/types.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME, type ContainerSummary, type Runtime } from "../container/runtime.ts";

/** A Kubernetes Status failure body. */
export function status(
  code: number,
  reason: string,
  message: string,
  causes?: Array<{ field: string; message: string }>,
) {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(causes ? { details: { causes } } : {}),
    code,
  };
}

export const REASON: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  408: "Timeout",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
};

/** Field-level causes of a 400, carried as the HTTPException's cause into the Status body. */
export type StatusCauses = Array<{ field: string; message: string }>;

/** Hono's HTTPException with the message the Status body carries; onError renders it. */
export function httpError(code: ContentfulStatusCode, message: string, causes?: StatusCauses): HTTPException {
  return new HTTPException(code, { message, ...(causes ? { cause: causes } : {}) });
}

/** The kubelet's instances of a pod's container, newest attempt first. Only kubelet containers exist here. */
export async function findInstances(
  runtime: Runtime,
  namespace: string,
  pod: string,
  container: string,
): Promise<ContainerSummary[]> {
  if (container === POD_INFRA_CONTAINER_NAME) return [];
  const all = await runtime.listContainers();
  return all
    .filter(
      (c) =>
        c.labels[LABEL.podNamespace] === namespace &&
        c.labels[LABEL.podName] === pod &&
        c.labels[LABEL.containerName] === container,
    )
    .sort(
      (a, b) =>
        Number(b.labels[LABEL.restartCount] ?? 0) - Number(a.labels[LABEL.restartCount] ?? 0) ||
        b.createdAt - a.createdAt,
    );
}

/**
 * The container to read or exec: the newest instance, or, given `previousId`, the one the pod status's lastState
 * names (null: the status names none).
 */
export async function pickContainer(
  runtime: Runtime,
  namespace: string,
  pod: string,
  container: string,
  previousId?: string | null,
): Promise<ContainerSummary> {
  const instances = await findInstances(runtime, namespace, pod, container);
  const chosen = previousId === undefined ? instances[0] : instances.find((c) => c.id === previousId);
  if (!chosen) {
    const what = previousId !== undefined ? `previous terminated container "${container}"` : `container "${container}"`;
    throw httpError(404, `${what} in pod "${pod}" in namespace "${namespace}" not found`);
  }
  return chosen;
}

/** The runtime id of the container a pod's status gives as the last terminated instance of `container`, or null. */
export function lastTerminatedId(pods: Pod[], namespace: string, pod: string, container: string): string | null {
  const found = pods.find((p) => p.metadata.namespace === namespace && p.metadata.name === pod);
  const statuses = [...(found?.status?.containerStatuses ?? []), ...(found?.status?.initContainerStatuses ?? [])];
  const id = statuses.find((s) => s.name === container)?.lastState?.terminated?.containerID;
  return id ? id.replace(/^[a-z]+:\/\//, "") : null;
}
