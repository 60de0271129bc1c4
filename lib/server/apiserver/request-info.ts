// What an API request asks, as k8s.io/apiserver's RequestInfoFactory reads it from the path and query: the verb
// (get/list/watch/create/update/patch/delete/deletecollection), API group and version, namespace, resource,
// subresource and name. The authorizer checks these, so a policy written for kube-apiserver means the same here.

/** request.RequestInfo: the parts of an API request an authorizer sees. */
export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/** Whether the path is under the API prefixes (/api, /apis), where RequestInfo applies. */
export function isApiPath(path: string): boolean {
  return path === "/api" || path === "/apis" || path.startsWith("/api/") || path.startsWith("/apis/");
}

/** The paths the API server answers: the API prefixes, /version and /openapi (non-resource URLs in RBAC terms). */
export function isApiServerPath(path: string): boolean {
  return isApiPath(path) || path === "/version" || path === "/openapi" || path.startsWith("/openapi/");
}

/** The pod subresources that open a stream into the pod (log, a read, is not one). */
const STREAMING_SUBRESOURCES = new Set(["exec", "attach", "portforward"]);

const VERBS: Record<string, string> = {
  POST: "create",
  GET: "get",
  HEAD: "get",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

/** Upstream's NewRequestInfo for the /api and /apis prefixes (no legacy /api/v1/watch paths beyond its rules). */
export function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const plain = (verb: string): RequestInfo => ({
    isResourceRequest: false,
    path,
    verb,
    apiPrefix: "",
    apiGroup: "",
    apiVersion: "",
    namespace: "",
    resource: "",
    subresource: "",
    name: "",
  });
  const nonResourceVerb = method.toLowerCase();
  let parts = path.replace(/^\/+|\/+$/g, "").split("/");
  if (parts.length < 1 || (parts[0] !== "api" && parts[0] !== "apis")) return plain(nonResourceVerb);
  const apiPrefix = parts[0]!;
  parts = parts.slice(1);
  let apiGroup = "";
  if (apiPrefix === "apis") {
    if (parts.length < 1) return plain(nonResourceVerb);
    apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  if (parts.length < 1) return plain(nonResourceVerb);
  const apiVersion = parts[0]!;
  parts = parts.slice(1);
  if (parts.length < 1) return plain(nonResourceVerb);
  let verb = VERBS[method.toUpperCase()] ?? nonResourceVerb;
  // /api/v1/watch/namespaces/x/pods: the deprecated watch prefix.
  if (parts[0] === "watch") {
    verb = "watch";
    parts = parts.slice(1);
  }
  let namespace = "";
  if (parts[0] === "namespaces") {
    if (parts.length > 1) {
      namespace = parts[1]!;
      // /namespaces/{name} is the namespace itself; anything below it is a namespaced resource.
      if (parts.length > 2) parts = parts.slice(2);
    }
  }
  const [resource = "", name = "", subresource = ""] = parts;
  // exec, attach and portforward start a process or a connection: a WebSocket upgrade (a GET) is authorized as
  // create, as kube-apiserver does since AuthorizePodWebsocketUpgradeCreatePermission (1.30).
  if (verb === "get" && resource === "pods" && STREAMING_SUBRESOURCES.has(subresource)) verb = "create";
  if (verb === "get" || verb === "delete") {
    if (name === "") verb = verb === "get" ? "list" : "deletecollection";
  }
  if (verb === "list" && isTrue(query.get("watch"))) verb = "watch";
  // A list narrowed to one name by metadata.name is authorized as a get/watch of that name (upstream does so).
  let named = name;
  if ((verb === "list" || verb === "watch") && named === "") {
    for (const term of (query.get("fieldSelector") ?? "").split(",")) {
      const exact = /^\s*metadata\.name\s*==?\s*([^=!\s]+)\s*$/.exec(term);
      if (exact) named = exact[1]!;
    }
  }
  return {
    isResourceRequest: true,
    path,
    verb,
    apiPrefix,
    apiGroup,
    apiVersion,
    namespace,
    resource,
    subresource,
    name: named,
  };
}

/** Go's strconv.ParseBool, which metav1's parameter codec reads booleans with (Python's client sends "True"/"False"). */
export function parseBool(value: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(value)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(value)) return false;
  return undefined;
}

/** A boolean query parameter as Go's strconv.ParseBool reads it; absent or unparsable is false. */
export function isTrue(value: string | null | undefined): boolean {
  return value !== null && value !== undefined && parseBool(value) === true;
}
