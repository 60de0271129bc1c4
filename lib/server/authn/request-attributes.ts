// The authorization attributes of a request to the kubelet API, as the Go kubelet's server/auth.go
// GetRequestAttributes builds them: verb from the HTTP method, resource `nodes`, name = the node's name, and the
// subresource by path: the fine-grained one (pods, healthz, configz) first when the path has one, then the
// coarse one (stats, metrics, log, spec) or `proxy` for every other path. A request is allowed when any is.
import type { RequestAttributes, UserInfo } from "../authorizer.ts";
import { isApiServerPath, requestInfo } from "../apiserver/request-info.ts";

const VERBS: Record<string, string> = { POST: "create", GET: "get", PUT: "update", PATCH: "patch", DELETE: "delete" };

/** Whether `path` is `prefix` or below it (upstream's isSubpath: a trailing slash on the prefix ignored). */
function isSubpath(path: string, prefix: string): boolean {
  const base = prefix.replace(/\/$/, "");
  return path === base || (path.startsWith(base) && path[base.length] === "/");
}

/** The fine-grained subresource (KubeletFineGrainedAuthz), if the path has one. */
function fineGrained(path: string): string | undefined {
  if (isSubpath(path, "/pods")) return "pods";
  if (isSubpath(path, "/healthz")) return "healthz";
  if (isSubpath(path, "/configz")) return "configz";
  if (isSubpath(path, "/runningpods/")) return "pods";
  return undefined;
}

/** The coarse subresource: stats, metrics, log, spec, else proxy. */
function coarse(path: string): string {
  if (isSubpath(path, "/stats/")) return "stats";
  if (isSubpath(path, "/metrics")) return "metrics";
  if (isSubpath(path, "/logs/")) return "log";
  if (isSubpath(path, "/spec/")) return "spec";
  return "proxy";
}

/** One attribute set: `verb` on `nodes/<subresource>` named `nodeName`, for `path`. */
export function nodeAttributes(
  user: UserInfo,
  verb: string,
  subresource: string,
  nodeName: string,
  path: string,
): RequestAttributes {
  return {
    user,
    verb,
    resourceRequest: true,
    apiGroup: "",
    apiVersion: "v1",
    resource: "nodes",
    subresource,
    namespace: "",
    name: nodeName,
    path,
  };
}

/**
 * Every attribute set to check for `method path` by `user` on node `nodeName`, in order. The Kubernetes API's paths
 * (/api, /apis, /version, /openapi) get the one set kube-apiserver would check (apiserver/request-info.ts).
 */
export function requestAttributes(
  user: UserInfo,
  method: string,
  path: string,
  nodeName: string,
  query: URLSearchParams = new URLSearchParams(),
): RequestAttributes[] {
  if (isApiServerPath(path)) {
    const { isResourceRequest, apiPrefix: _, ...info } = requestInfo(method, path, query);
    return [{ user, resourceRequest: isResourceRequest, ...info }];
  }
  const verb = VERBS[method.toUpperCase()] ?? "";
  return [fineGrained(path), coarse(path)]
    .filter((s): s is string => s !== undefined)
    .map((subresource) => nodeAttributes(user, verb, subresource, nodeName, path));
}
