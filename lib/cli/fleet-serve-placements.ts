// Fleet serve's writes: a pod created, replaced or deleted through the API becomes a placement, written as
// `kubelet fleet apply` and `fleet delete` write one (the same transaction and compare-and-swap).
import { fieldError, KubeletError, type Pod } from "../api/types.ts";
import { conflict, invalid, notFound } from "../server/apiserver/api-status.ts";
import { FLEET_PLACED } from "../server/apiserver/fleet-pods.ts";
import type { PushTarget } from "../server/push-routes.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { fleetDelete, placePods, type PlacementTarget } from "./fleet-apply.ts";

/** A pod annotation naming the nodes to run it on by label, as `fleet apply --selector` does ("" = every node). */
export const FLEET_SELECTOR = "kubelet.fleet/selector";

/** A sink for the lines the CLI prints; the API answers with the pod instead. */
const quiet = { write: () => true } as unknown as NodeJS.WritableStream;

/** Where a pod sent to the API goes: its `kubelet.fleet/selector` annotation, else the node spec.nodeName names. */
export function placementTarget(pod: Pod): PlacementTarget {
  const selector = pod.metadata.annotations?.[FLEET_SELECTOR];
  const name = pod.metadata.name;
  if (selector !== undefined) {
    const labels: Record<string, string> = {};
    for (const pair of selector
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)) {
      const [key, value, ...rest] = pair.split("=");
      if (!key || value === undefined || rest.length)
        throw invalid("Pod", name, [
          fieldError(
            `metadata.annotations[${FLEET_SELECTOR}]`,
            "Invalid value",
            selector,
            'expected key=value,… (e.g. gpu=yes), or "" for every node',
          ),
        ]);
      labels[key] = value;
    }
    return { selector: labels };
  }
  if (pod.spec.nodeName) return { nodes: [pod.spec.nodeName] };
  throw invalid("Pod", name, [
    fieldError(
      "spec.nodeName",
      "Required value",
      undefined,
      `fleet serve has no scheduler: name the node in spec.nodeName, or the nodes' labels in the ${FLEET_SELECTOR} annotation ("" for every node)`,
    ),
  ]);
}

/** The API's pod writes as placements in etcd. */
export function createFleetPlacements(client: Pick<EtcdClient, "get" | "applyIf">): PushTarget {
  const options = { client, dryRun: false, out: quiet, err: quiet };
  const write = async (op: string, pods: Pod[]) => {
    if (op === "REMOVE") {
      const placed = pods.map((pod) => {
        const [namespace, name] = (pod.metadata.annotations?.[FLEET_PLACED] ?? "").split("/");
        if (!namespace || !name) throw notFound("pods", pod.metadata.name);
        return { namespace, name };
      });
      if ((await fleetDelete(placed, options)) !== 0) throw notFound("pods", placed[0]!.name);
      return;
    }
    for (const pod of pods) {
      // A copy served as `<name>-<node>` is written back as the pod placed.
      const [, name] = (pod.metadata.annotations?.[FLEET_PLACED] ?? "").split("/");
      const placed = name ? { ...pod, metadata: { ...pod.metadata, name } } : pod;
      const annotations = { ...placed.metadata.annotations };
      delete annotations[FLEET_PLACED];
      const target = placementTarget(placed);
      const spec = "selector" in target ? { ...placed.spec, nodeName: undefined } : placed.spec;
      await placePods([{ ...placed, metadata: { ...placed.metadata, annotations }, spec } as Pod], target, options);
    }
  };
  return {
    async merge(_source, op, pods) {
      try {
        await write(op, pods);
      } catch (error) {
        if ((error as KubeletError).code === "Conflict") throw conflict("pods", pods[0]?.metadata.name ?? "");
        throw error;
      }
    },
    mergeConfigs() {
      throw new KubeletError("MethodNotSupported", "fleet serve does not store ConfigMaps or Secrets");
    },
  };
}
