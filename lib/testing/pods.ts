// Builders of defaulted pods for tests, through the same parser the sources use.
import { readManifests } from "../api/manifest.ts";
import type { Pod, SourceName, V1Container, V1PodSpec } from "../api/types.ts";

/** A defaulted pod named `name` (namespace default) with one busybox container unless `spec` says otherwise. */
export function testPod(
  name: string,
  spec: Partial<V1PodSpec> = {},
  options: { source?: SourceName; namespace?: string; origin?: string } = {},
): Pod {
  const manifest = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, ...(options.namespace ? { namespace: options.namespace } : {}) },
    spec: {
      containers: [{ name: "app", image: "local/busybox:latest", command: ["sleep", "3600"] } as V1Container],
      ...spec,
    },
  };
  const source = options.source ?? "file";
  const { pods, rejected } = readManifests(JSON.stringify(manifest), {
    source,
    origin: options.origin ?? `test/${name}.yaml`,
  });
  if (!pods[0]) throw new Error(`testPod ${name}: ${JSON.stringify(rejected)}`);
  return pods[0];
}
