// A pod's hostname, domain and sandbox hostname, as the Go kubelet derives them.
import { expect, test } from "bun:test";
import { podHostnameAndDomain, sandboxHostname } from "./pod-hostname.ts";
import { testPod } from "../testing/pods.ts";

test("setHostnameAsFQDN makes the FQDN the hostname only with a subdomain, and at most 64 characters", () => {
  expect(sandboxHostname(testPod("web-0", { subdomain: "web", setHostnameAsFQDN: true }), "cluster.local")).toBe(
    "web-0.web.default.svc.cluster.local",
  );
  expect(sandboxHostname(testPod("web-0", { setHostnameAsFQDN: true }), "cluster.local")).toBe("web-0");
  expect(sandboxHostname(testPod("web-0", { hostname: "api", subdomain: "web" }), "cluster.local")).toBe("api");
  expect(() =>
    sandboxHostname(testPod("a".repeat(40), { subdomain: "web", setHostnameAsFQDN: true }), "cluster.local"),
  ).toThrow("is too long (64 characters is the max, 70 characters requested)");
});

test("the hostname is spec.hostname or the pod's name, cut to 63 characters without trailing dots or hyphens", () => {
  expect(podHostnameAndDomain(testPod("web-0", { hostname: "api" }), "cluster.local")).toEqual({ hostname: "api" });
  expect(podHostnameAndDomain(testPod(`${"a".repeat(62)}-b`), "cluster.local")).toEqual({ hostname: "a".repeat(62) });
});

test("a domain needs both a subdomain and a cluster domain", () => {
  expect(podHostnameAndDomain(testPod("web-0", { subdomain: "web" }), "")).toEqual({ hostname: "web-0" });
  expect(podHostnameAndDomain(testPod("web-0", { subdomain: "web" }), "cluster.local")).toEqual({
    hostname: "web-0",
    domain: "web.default.svc.cluster.local",
  });
});
