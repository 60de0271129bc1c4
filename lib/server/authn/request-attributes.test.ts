import { expect, test } from "bun:test";
import { ANONYMOUS } from "../authorizer.ts";
import { requestAttributes } from "./request-attributes.ts";

const subresources = (method: string, path: string) =>
  requestAttributes(ANONYMOUS, method, path, "node-a").map((a) => `${a.verb} ${a.subresource}`);

test.each([
  ["GET", "/stats/summary", ["get stats"]],
  ["GET", "/stats", ["get stats"]],
  ["GET", "/statsfoo", ["get proxy"]],
  ["GET", "/metrics", ["get metrics"]],
  ["GET", "/metrics/cadvisor", ["get metrics"]],
  ["GET", "/logs/syslog", ["get log"]],
  ["GET", "/logs", ["get log"]],
  ["GET", "/spec/", ["get spec"]],
  ["GET", "/pods", ["get pods", "get proxy"]],
  ["GET", "/pods/default/web", ["get pods", "get proxy"]],
  ["GET", "/healthz/syncloop", ["get healthz", "get proxy"]],
  ["GET", "/configz", ["get configz", "get proxy"]],
  ["GET", "/runningpods/", ["get pods", "get proxy"]],
  ["POST", "/run/default/web/app", ["create proxy"]],
  ["POST", "/exec/default/web/app", ["create proxy"]],
  ["GET", "/containerLogs/default/web/app", ["get proxy"]],
  ["PUT", "/pods/default/web", ["update pods", "update proxy"]],
  ["DELETE", "/pods/default/web", ["delete pods", "delete proxy"]],
  ["PATCH", "/x", ["patch proxy"]],
  ["OPTIONS", "/x", [" proxy"]],
])("%s %s is checked as %p (fine-grained first, then the coarse one)", (method, path, expected) => {
  expect(subresources(method, path)).toEqual(expected);
});

test("each attribute set is resource nodes, version v1, the node's name and the request's path", () => {
  expect(requestAttributes(ANONYMOUS, "GET", "/metrics", "node-a")).toEqual([
    {
      user: ANONYMOUS,
      verb: "get",
      resourceRequest: true,
      apiGroup: "",
      apiVersion: "v1",
      resource: "nodes",
      subresource: "metrics",
      namespace: "",
      name: "node-a",
      path: "/metrics",
    },
  ]);
});

test("the Kubernetes API's paths get the one attribute set kube-apiserver would check, query included", () => {
  const query = new URLSearchParams("watch=true");
  expect(requestAttributes(ANONYMOUS, "GET", "/api/v1/namespaces/default/pods", "node-a", query)).toEqual([
    {
      user: ANONYMOUS,
      verb: "watch",
      resourceRequest: true,
      apiGroup: "",
      apiVersion: "v1",
      resource: "pods",
      subresource: "",
      namespace: "default",
      name: "",
      path: "/api/v1/namespaces/default/pods",
    },
  ]);
  expect(requestAttributes(ANONYMOUS, "GET", "/version", "node-a").map((a) => [a.resourceRequest, a.verb])).toEqual([
    [false, "get"],
  ]);
});
