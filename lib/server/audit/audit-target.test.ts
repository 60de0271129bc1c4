import { expect, test } from "bun:test";
import { auditTarget } from "./audit-target.ts";

const target = (method: string, pathAndQuery: string) => {
  const url = new URL(`http://node${pathAndQuery}`);
  return auditTarget(method, url.pathname, url.searchParams, "node-1");
};

test("exec, attach, port-forward, run and container logs name the pod's subresource, as the API server audits them", () => {
  expect(target("GET", "/exec/default/web/app?command=id")).toEqual({
    objectRef: { resource: "pods", namespace: "default", name: "web", apiVersion: "v1", subresource: "exec" },
    verb: "get",
    pod: "default/web",
    container: "app",
    long: true,
    exec: true,
  });
  expect(target("GET", "/attach/ns/p/c")?.objectRef.subresource).toBe("attach");
  expect(target("GET", "/portForward/ns/p")?.objectRef).toMatchObject({ subresource: "portforward", name: "p" });
  expect(target("POST", "/run/ns/p/c?cmd=id")).toMatchObject({ verb: "create", long: false, exec: true });
  expect(target("GET", "/containerLogs/ns/p/c")).toMatchObject({ long: false, exec: false, container: "c" });
  expect(target("GET", "/containerLogs/ns/p/c?follow=true")?.long).toBe(true);
  expect(target("GET", "/containerLogs/ns/p/c?follow=false")?.long).toBe(false);
});

test("node log reads are nodes/log on this node; pushes and removals are writes of pods, configmaps and secrets", () => {
  expect(target("GET", "/logs/syslog")?.objectRef).toEqual({
    resource: "nodes",
    name: "node-1",
    apiVersion: "v1",
    subresource: "log",
  });
  expect(target("GET", "/logs")?.objectRef.subresource).toBe("log");
  expect(target("POST", "/pods")).toMatchObject({ verb: "create", objectRef: { resource: "pods" } });
  expect(target("PUT", "/pods")?.verb).toBe("update");
  expect(target("POST", "/containers")?.objectRef.resource).toBe("pods");
  expect(target("DELETE", "/pods/ns/web")).toMatchObject({ verb: "delete", pod: "ns/web" });
  expect(target("DELETE", "/secrets/ns/s")?.objectRef).toMatchObject({ resource: "secrets", name: "s" });
});

test("reads of state, metrics and health are not audited", () => {
  for (const path of ["/pods", "/pods/ns/web", "/metrics", "/healthz", "/stats/summary", "/spec/", "/configz"])
    expect(target("GET", path)).toBeUndefined();
});

test("percent-encoded path segments are decoded", () => {
  expect(target("GET", "/exec/default/my%2Dpod/app")?.objectRef.name).toBe("my-pod");
});
