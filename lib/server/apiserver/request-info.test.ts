import { expect, test } from "bun:test";
import { isApiServerPath, requestInfo } from "./request-info.ts";

const info = (method: string, url: string) => {
  const parsed = new URL(url, "https://node");
  const i = requestInfo(method, parsed.pathname, parsed.searchParams);
  return i.isResourceRequest
    ? `${i.verb} ${i.apiGroup}/${i.apiVersion} ns=${i.namespace} ${i.resource}${i.subresource ? `/${i.subresource}` : ""} name=${i.name}`
    : `nonresource ${i.verb} ${i.path}`;
};

test.each([
  ["GET", "/api", "nonresource get /api"],
  ["GET", "/api/v1", "nonresource get /api/v1"],
  ["GET", "/apis/metrics.k8s.io/v1beta1", "nonresource get /apis/metrics.k8s.io/v1beta1"],
  ["GET", "/api/v1/pods", "list /v1 ns= pods name="],
  ["GET", "/api/v1/pods?watch=true", "watch /v1 ns= pods name="],
  ["GET", "/api/v1/pods?watch=True", "watch /v1 ns= pods name="],
  ["GET", "/api/v1/pods?watch=false", "list /v1 ns= pods name="],
  ["GET", "/api/v1/namespaces/default/pods", "list /v1 ns=default pods name="],
  ["GET", "/api/v1/namespaces/default/pods?watch=1", "watch /v1 ns=default pods name="],
  ["GET", "/api/v1/watch/namespaces/default/pods", "watch /v1 ns=default pods name="],
  ["GET", "/api/v1/watch/pods", "watch /v1 ns= pods name="],
  ["GET", "/api/v1/watch/namespaces/default/pods/web", "watch /v1 ns=default pods name=web"],
  ["GET", "/api/v1/watch/events", "watch /v1 ns= events name="],
  ["GET", "/api/v1/namespaces/default/pods/web", "get /v1 ns=default pods name=web"],
  ["GET", "/api/v1/namespaces/default/pods/web/status", "get /v1 ns=default pods/status name=web"],
  ["POST", "/api/v1/namespaces/default/pods", "create /v1 ns=default pods name="],
  ["PUT", "/api/v1/namespaces/default/pods/web", "update /v1 ns=default pods name=web"],
  ["PATCH", "/api/v1/namespaces/default/pods/web", "patch /v1 ns=default pods name=web"],
  ["DELETE", "/api/v1/namespaces/default/pods/web", "delete /v1 ns=default pods name=web"],
  ["DELETE", "/api/v1/namespaces/default/pods", "deletecollection /v1 ns=default pods name="],
  ["POST", "/api/v1/namespaces/default/pods/web/exec", "create /v1 ns=default pods/exec name=web"],
  // WebSocket upgrades (GET) of the streaming subresources are authorized as create, as kube-apiserver 1.30+.
  ["GET", "/api/v1/namespaces/default/pods/web/exec?command=sh", "create /v1 ns=default pods/exec name=web"],
  ["GET", "/api/v1/namespaces/default/pods/web/attach", "create /v1 ns=default pods/attach name=web"],
  [
    "GET",
    "/api/v1/namespaces/default/pods/web/portforward?ports=80",
    "create /v1 ns=default pods/portforward name=web",
  ],
  ["GET", "/api/v1/namespaces/default/pods/web/log", "get /v1 ns=default pods/log name=web"],
  ["GET", "/api/v1/namespaces/kube-system", "get /v1 ns=kube-system namespaces name=kube-system"],
  ["GET", "/api/v1/nodes/n1", "get /v1 ns= nodes name=n1"],
  ["GET", "/apis/metrics.k8s.io/v1beta1/namespaces/a/pods", "list metrics.k8s.io/v1beta1 ns=a pods name="],
  ["GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dweb", "list /v1 ns=a pods name=web"],
  ["GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3D%3Dweb&watch=true", "watch /v1 ns=a pods name=web"],
  ["GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name!%3Dweb", "list /v1 ns=a pods name="],
])("%s %s is %s, as RequestInfoFactory reads it", (method, url, expected) => {
  expect(info(method, url)).toBe(expected);
});

test("/version and /openapi are the API server's paths too; the kubelet's own routes are not", () => {
  expect(["/version", "/openapi/v3", "/api", "/apis/x/v1", "/pods", "/apix"].map(isApiServerPath)).toEqual([
    true,
    true,
    true,
    true,
    false,
    false,
  ]);
});
