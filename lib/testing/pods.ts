// Builders of defaulted pods for tests, through the same parser the sources use.
import { readManifests } from "../api/manifest.ts";
import type { ConfigKind, ConfigObject } from "../api/config-objects.ts";
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

/** A ConfigMap or Secret as a source would read it (`data` is text for a ConfigMap, base64 for a Secret). */
export function testConfig(
  kind: ConfigKind,
  name: string,
  fields: { data?: Record<string, string>; stringData?: Record<string, string>; immutable?: boolean; type?: string },
  options: { source?: SourceName; namespace?: string } = {},
): ConfigObject {
  const manifest = {
    apiVersion: "v1",
    kind,
    metadata: { name, ...(options.namespace ? { namespace: options.namespace } : {}) },
    ...fields,
  };
  const { configs } = readManifests(JSON.stringify(manifest), {
    source: options.source ?? "file",
    origin: `test/${name}.yaml`,
  });
  return configs[0]!;
}
