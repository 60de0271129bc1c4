// Pure: whether a pod may run on this node by its nodeSelector and its required node affinity, matched
// against the node's labels as the Go kubelet's NodeAffinity predicate does (component-helpers
// nodeaffinity: terms ORed, expressions ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; metadata.name fields).
import type { Pod } from "../api/types.ts";

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

function matches(requirement: Requirement, value: string | undefined): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt": {
      const [have, want] = [Number.parseInt(value ?? "", 10), Number.parseInt(values[0] ?? "", 10)];
      if (Number.isNaN(have) || Number.isNaN(want)) return false;
      return requirement.operator === "Gt" ? have > want : have < want;
    }
    default:
      return false;
  }
}

/** True when the node (its name and labels) satisfies the pod's nodeSelector and required node affinity. */
export function matchesNode(pod: Pod, node: { name: string; labels: Record<string, string> }): boolean {
  for (const [key, value] of Object.entries(pod.spec.nodeSelector ?? {})) if (node.labels[key] !== value) return false;
  const terms = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms) return true;
  // An empty term matches nothing; a pod whose terms are all empty matches no node (as in Go).
  return terms.some(
    (term) =>
      (term.matchExpressions?.length || term.matchFields?.length) &&
      (term.matchExpressions ?? []).every((r) => matches(r, node.labels[r.key])) &&
      (term.matchFields ?? []).every((r) => r.key === "metadata.name" && matches(r, node.name)),
  );
}
