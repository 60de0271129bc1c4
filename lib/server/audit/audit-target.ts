// Which info-server requests are audited and what they touch: exec, attach, port-forward, run, container
// and node log reads, and the push source's writes. The object is named as the API server's audit names
// the same action proxied to a kubelet (pods/exec, pods/log…); node logs are nodes/log.
import type { AuditObjectRef } from "./event.ts";

/** What one audited request touches. */
export interface AuditTarget {
  objectRef: AuditObjectRef;
  /** The verb when the authorizer set none: the Go kubelet's mapping of the HTTP method. */
  verb: string;
  pod?: string;
  container?: string;
  /** A stream that may last (exec, attach, port-forward, a followed log): RequestReceived first, then ResponseComplete. */
  long: boolean;
  /** exec and run: the exit code is recorded. */
  exec: boolean;
}

/** The Go kubelet's verb per HTTP method (pkg/kubelet/server/auth.go). */
const VERBS: Record<string, string> = { GET: "get", POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" };

const POD_STREAMS: Array<[RegExp, string]> = [
  [/^\/exec\/([^/]+)\/([^/]+)\/([^/]+)$/, "exec"],
  [/^\/attach\/([^/]+)\/([^/]+)\/([^/]+)$/, "attach"],
  [/^\/portForward\/([^/]+)\/([^/]+)(?:\/[^/]+)?$/, "portforward"],
  [/^\/run\/([^/]+)\/([^/]+)\/([^/]+)$/, "exec"],
  [/^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/, "log"],
];

const PUSH_PATHS = new Set(["POST /container", "POST /containers", "PUT /pods", "POST /pods"]);

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The audit target of a request, or undefined when the request is not audited (reads of state, metrics, health). */
export function auditTarget(
  method: string,
  path: string,
  query: URLSearchParams,
  nodeName: string,
): AuditTarget | undefined {
  const verb = VERBS[method] ?? method.toLowerCase();
  for (const [pattern, subresource] of POD_STREAMS) {
    const match = pattern.exec(path);
    if (!match) continue;
    const [namespace, name, container] = match.slice(1).map((s) => (s === undefined ? undefined : decode(s)));
    const follow = query.get("follow");
    return {
      objectRef: { resource: "pods", namespace, name, apiVersion: "v1", subresource },
      verb,
      pod: `${namespace}/${name}`,
      ...(container !== undefined ? { container } : {}),
      long: subresource === "log" ? follow !== null && follow !== "false" && follow !== "0" : !path.startsWith("/run/"),
      exec: subresource === "exec",
    };
  }
  if (path === "/logs" || path.startsWith("/logs/"))
    return {
      objectRef: { resource: "nodes", name: nodeName, apiVersion: "v1", subresource: "log" },
      verb,
      long: false,
      exec: false,
    };
  if (PUSH_PATHS.has(`${method} ${path}`))
    return { objectRef: { resource: "pods", apiVersion: "v1" }, verb, long: false, exec: false };
  const removal = /^\/(pods|configmaps|secrets)\/([^/]+)\/([^/]+)$/.exec(path);
  if (method === "DELETE" && removal) {
    const [resource, namespace, name] = removal.slice(1).map((s) => decode(s!));
    return {
      objectRef: { resource, namespace, name, apiVersion: "v1" },
      verb,
      ...(resource === "pods" ? { pod: `${namespace}/${name}` } : {}),
      long: false,
      exec: false,
    };
  }
  return undefined;
}
