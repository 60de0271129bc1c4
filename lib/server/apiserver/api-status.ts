// The API server's error Statuses (k8s.io/apimachinery/pkg/api/errors): reason, code, details and message as
// kube-apiserver words them, so kubectl prints its usual `Error from server (NotFound): pods "x" not found`.
import { formatIssue, type FieldIssue } from "../../api/types.ts";
import type { RequestAttributes } from "../authorizer.ts";
import { status } from "../server-support.ts";

/** A metav1.Status failure; `details` names the object (kind is the resource, as upstream's errors do). */
export interface ApiStatus {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: Array<{ reason: string; message: string; field: string }>;
    retryAfterSeconds?: number;
  };
  code: number;
}

/** An ApiStatus to throw: onError answers it with its code. */
export class ApiError extends Error {
  readonly code = "ApiStatus";
  constructor(readonly status: ApiStatus) {
    super(status.message);
  }
}

/** Whether `error` carries an API Status (checked by code, not instanceof). */
export function isApiError(error: unknown): error is ApiError {
  return (error as { code?: string } | undefined)?.code === "ApiStatus";
}

/** The group-qualified resource, as schema.GroupResource.String() prints it: "pods", "podmetrics.metrics.k8s.io". */
function qualified(resource: string, group = ""): string {
  return group ? `${resource}.${group}` : resource;
}

function failure(code: number, reason: string, message: string, details?: ApiStatus["details"]): ApiError {
  const { details: _, ...body } = status(code, reason, message);
  return new ApiError({ ...(body as Omit<ApiStatus, "details">), ...(details ? { details } : {}) });
}

/** errors.NewNotFound: `pods "x" not found`. */
export function notFound(resource: string, name: string, group = ""): ApiError {
  return failure(404, "NotFound", `${qualified(resource, group)} "${name}" not found`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

/** errors.NewAlreadyExists: `pods "x" already exists`, with `why` after it when there is more to say. */
export function alreadyExists(resource: string, name: string, why = ""): ApiError {
  return failure(409, "AlreadyExists", `${resource} "${name}" already exists${why ? `: ${why}` : ""}`, {
    name,
    kind: resource,
  });
}

/** errors.NewConflict for a stale resourceVersion (the registry's OptimisticLockErrorMsg). */
export function conflict(resource: string, name: string): ApiError {
  return failure(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, kind: resource },
  );
}

/** errors.NewForbidden: `pods "x" is forbidden: why` (no name: `pods is forbidden: why`). */
export function forbidden(resource: string, name: string, why: string, group = ""): ApiError {
  const what = name ? `${qualified(resource, group)} "${name}"` : qualified(resource, group);
  return failure(403, "Forbidden", `${what} is forbidden: ${why}`, {
    ...(name ? { name } : {}),
    ...(group ? { group } : {}),
    kind: resource,
  });
}

/** The authorizer's 403 (responsewriters.Forbidden with upstream's forbiddenMessage). */
export function forbiddenRequest(a: RequestAttributes): ApiStatus {
  if (!a.resourceRequest)
    return failure(403, "Forbidden", `forbidden: User "${a.user.name}" cannot ${a.verb} path "${a.path}"`, {}).status;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
  const why = `User "${a.user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${scope}`;
  return forbidden(a.resource, a.name, why, a.apiGroup).status;
}

/** errors.NewMethodNotSupported: `get is not supported on resources of kind "pods/status"`-style. */
export function methodNotSupported(resource: string, action: string): ApiError {
  return failure(405, "MethodNotAllowed", `${action} is not supported on resources of kind "${resource}"`, {
    kind: resource,
  });
}

/** errors.NewBadRequest. */
export function badRequest(message: string): ApiError {
  return failure(400, "BadRequest", message);
}

/** errors.NewUnsupportedMediaType-like 415. */
export function unsupportedMediaType(message: string): ApiError {
  return failure(415, "UnsupportedMediaType", message);
}

/** errors.NewResourceExpired: the 410 a watch gets for a resourceVersion older than the history kept. */
export function expired(message: string): ApiError {
  return failure(410, "Expired", message);
}

/** field.ErrorType → metav1.CauseType, as upstream maps them. */
const CAUSES: Record<string, string> = {
  "Required value": "FieldValueRequired",
  "Invalid value": "FieldValueInvalid",
  "Unsupported value": "FieldValueNotSupported",
  "Duplicate value": "FieldValueDuplicate",
  Forbidden: "FieldValueForbidden",
  "Too long": "FieldValueTooLong",
  "Too many": "FieldValueTooMany",
  "Not found": "FieldValueNotFound",
  "Not supported": "FieldValueNotSupported",
  "Internal error": "InternalError",
};

/** errors.NewInvalid: `Pod "x" is invalid: spec.containers[0].image: Required value` (several: in brackets). */
export function invalid(kind: string, name: string, issues: FieldIssue[]): ApiError {
  const said = issues.map(formatIssue);
  const message = `${kind} "${name}" is invalid: ${said.length === 1 ? said[0] : `[${said.join(", ")}]`}`;
  return failure(422, "Invalid", message, {
    name,
    kind,
    causes: issues.map((i) => ({
      reason: CAUSES[i.type] ?? "FieldValueInvalid",
      message: `${i.type}${i.value !== undefined ? `: ${JSON.stringify(i.value)}` : ""}${i.detail ? `: ${i.detail}` : ""}`,
      field: i.path,
    })),
  });
}
