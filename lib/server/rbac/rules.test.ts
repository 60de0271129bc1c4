import { describe, expect, test } from "bun:test";
import { nodeRequest } from "../../testing/node-request.ts";
import type { RequestAttributes } from "../authorizer.ts";
import { ruleAllows, type PolicyRule } from "./rules.ts";

const rule = (fields: Partial<PolicyRule>): PolicyRule => ({
  verbs: [],
  apiGroups: [],
  resources: [],
  resourceNames: [],
  nonResourceURLs: [],
  ...fields,
});

const request = (verb: string, subresource: string, fields: Partial<RequestAttributes> = {}) =>
  nodeRequest("alice", verb, subresource, fields);
const nonResource = (verb: string, path: string) => request(verb, "", { resourceRequest: false, resource: "", path });

const metrics = rule({ verbs: ["get"], apiGroups: [""], resources: ["nodes/metrics"] });

describe("one rule", () => {
  const cases: Array<[string, PolicyRule, RequestAttributes, boolean]> = [
    // verbs
    ["grants the verb it lists", metrics, request("get", "metrics"), true],
    ["refuses a verb it does not list", metrics, request("create", "metrics"), false],
    ["grants every verb with *", rule({ ...metrics, verbs: ["*"] }), request("delete", "metrics"), true],
    ["compares verbs exactly (GET is not get)", rule({ ...metrics, verbs: ["GET"] }), request("get", "metrics"), false],
    // API groups
    [
      "refuses a request outside its API groups",
      rule({ ...metrics, apiGroups: ["apps"] }),
      request("get", "metrics"),
      false,
    ],
    ["grants every API group with *", rule({ ...metrics, apiGroups: ["*"] }), request("get", "metrics"), true],
    // resources and subresources
    ["refuses another subresource of the same resource", metrics, request("get", "proxy"), false],
    [
      "does not let nodes cover nodes/proxy",
      rule({ ...metrics, resources: ["nodes"] }),
      request("get", "proxy"),
      false,
    ],
    [
      "reads nodes/* literally, as no glob",
      rule({ ...metrics, resources: ["nodes/*"] }),
      request("get", "proxy"),
      false,
    ],
    [
      "grants every resource and subresource with *",
      rule({ ...metrics, resources: ["*"] }),
      request("get", "proxy"),
      true,
    ],
    [
      "grants a subresource of any resource with */subresource",
      rule({ ...metrics, resources: ["*/proxy"] }),
      request("get", "proxy"),
      true,
    ],
    [
      "refuses another subresource with */subresource",
      rule({ ...metrics, resources: ["*/proxy"] }),
      request("get", "log"),
      false,
    ],
    [
      "does not read */subresource as a suffix glob",
      rule({ ...metrics, resources: ["*/xproxy"] }),
      request("get", "proxy"),
      false,
    ],
    [
      "grants the bare resource of a request without subresource",
      rule({ ...metrics, resources: ["nodes"] }),
      request("get", ""),
      true,
    ],
    // resource names
    ["grants any node when it names none", metrics, request("get", "metrics", { name: "other" }), true],
    ["grants the node it names", rule({ ...metrics, resourceNames: ["node-1"] }), request("get", "metrics"), true],
    [
      "refuses a node it does not name",
      rule({ ...metrics, resourceNames: ["node-2"] }),
      request("get", "metrics"),
      false,
    ],
    // non-resource URLs
    [
      "grants the exact URL",
      rule({ verbs: ["get"], nonResourceURLs: ["/healthz"] }),
      nonResource("get", "/healthz"),
      true,
    ],
    [
      "refuses a longer URL without a glob",
      rule({ verbs: ["get"], nonResourceURLs: ["/healthz"] }),
      nonResource("get", "/healthz/ping"),
      false,
    ],
    [
      "grants a prefix with a trailing *",
      rule({ verbs: ["get"], nonResourceURLs: ["/healthz*"] }),
      nonResource("get", "/healthz/ping"),
      true,
    ],
    [
      "grants below a folder with /*",
      rule({ verbs: ["get"], nonResourceURLs: ["/metrics/*"] }),
      nonResource("get", "/metrics/cadvisor"),
      true,
    ],
    [
      "refuses the folder itself with /*",
      rule({ verbs: ["get"], nonResourceURLs: ["/metrics/*"] }),
      nonResource("get", "/metrics"),
      false,
    ],
    [
      "grants every URL with *",
      rule({ verbs: ["get"], nonResourceURLs: ["*"] }),
      nonResource("get", "/anything"),
      true,
    ],
    [
      "reads a * inside a URL literally",
      rule({ verbs: ["get"], nonResourceURLs: ["/a*/b"] }),
      nonResource("get", "/ax/b"),
      false,
    ],
    [
      "checks the verb of a non-resource request",
      rule({ verbs: ["get"], nonResourceURLs: ["*"] }),
      nonResource("post", "/x"),
      false,
    ],
    // the two kinds do not mix
    [
      "gives a resource rule no non-resource URL",
      rule({ ...metrics, resources: ["*"] }),
      nonResource("get", "/metrics"),
      false,
    ],
    [
      "gives a non-resource rule no resource",
      rule({ verbs: ["*"], nonResourceURLs: ["*"] }),
      request("get", "metrics"),
      false,
    ],
  ];
  for (const [claim, given, attributes, allowed] of cases)
    test(claim, () => expect(ruleAllows(attributes, given)).toBe(allowed));
});
