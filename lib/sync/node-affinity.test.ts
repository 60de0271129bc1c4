// nodeSelector and required node affinity against a node's labels, operator by operator.
import { expect, test } from "bun:test";
import { matchesNode } from "./node-affinity.ts";
import { testPod } from "../testing/pods.ts";

const node = { name: "node-a", labels: { "kubernetes.io/os": "linux", disk: "ssd", cores: "8" } };
const affinity = (terms: object[]) =>
  testPod("web", {
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
  } as object);

test("a nodeSelector matches only when every label has its value", () => {
  expect(matchesNode(testPod("web", { nodeSelector: { disk: "ssd" } }), node)).toBe(true);
  expect(matchesNode(testPod("web", { nodeSelector: { disk: "ssd", zone: "a" } }), node)).toBe(false);
});

test("required node affinity: terms are ORed, expressions ANDed, with every operator", () => {
  const term = (key: string, operator: string, values?: string[]) => ({
    matchExpressions: [{ key, operator, ...(values ? { values } : {}) }],
  });
  expect(matchesNode(affinity([term("disk", "In", ["ssd", "nvme"])]), node)).toBe(true);
  expect(matchesNode(affinity([term("disk", "NotIn", ["ssd"])]), node)).toBe(false);
  expect(matchesNode(affinity([term("gpu", "Exists")]), node)).toBe(false);
  expect(matchesNode(affinity([term("gpu", "DoesNotExist")]), node)).toBe(true);
  expect(matchesNode(affinity([term("cores", "Gt", ["4"])]), node)).toBe(true);
  expect(matchesNode(affinity([term("cores", "Lt", ["4"])]), node)).toBe(false);
  expect(matchesNode(affinity([term("gpu", "Exists"), term("disk", "In", ["ssd"])]), node)).toBe(true);
  expect(
    matchesNode(affinity([{ matchFields: [{ key: "metadata.name", operator: "In", values: ["node-b"] }] }]), node),
  ).toBe(false);
  expect(matchesNode(affinity([{}]), node)).toBe(false);
});
