// The pods /pods serves, each whose newest edit a source refused marked with why (ANNOTATION.refusedEdit): the
// version that runs is the last good one, and `kubectl get pod -o yaml` or `curl /pods` should say so beside it.
import { ANNOTATION, type Pod } from "../api/types.ts";

/** `pods` with the refusal of each refused pod's edit in its annotations (copies; the others as they are). */
export function withRefusedEdits(pods: Pod[], refused: ReadonlyMap<string, string>): Pod[] {
  if (refused.size === 0) return pods;
  return pods.map((pod) => {
    const why = refused.get(`${pod.metadata.namespace}/${pod.metadata.name}`);
    if (why === undefined) return pod;
    const annotations = { ...pod.metadata.annotations, [ANNOTATION.refusedEdit]: why };
    return { ...pod, metadata: { ...pod.metadata, annotations } };
  });
}
