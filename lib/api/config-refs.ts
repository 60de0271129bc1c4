// Which ConfigMaps and Secrets a pod reads, from where in its spec (volumes, projected volumes, env,
// envFrom, imagePullSecrets), and the check of those references against a set of objects.
import type { ConfigKind, ConfigLookup } from "./config-objects.ts";
import { configBytes } from "./config-objects.ts";
import type { FieldIssue, Pod } from "./types.ts";
import { isEnvVarName } from "./validation.ts";

/** One reference from a pod to a ConfigMap or Secret. */
export interface ConfigRef {
  kind: ConfigKind;
  name: string;
  /** Field path of the reference, e.g. `spec.volumes[0].configMap`. */
  path: string;
  /** The field naming the object under `path`: `name`, or `secretName` for a secret volume. */
  nameField?: "secretName";
  optional: boolean;
  /** Keys the reference needs, with the field path naming each. */
  keys: Array<{ key: string; path: string }>;
  /** envFrom's prefix (envFrom references only). */
  prefix?: string;
  /** How the pod uses it: volumes follow changes, env is read when a container starts. */
  use: "volume" | "env" | "imagePullSecret";
}

interface KeyToPath {
  key: string;
}

const keysOf = (items: KeyToPath[] | undefined, path: string) =>
  (items ?? []).map((item, i) => ({ key: item.key, path: `${path}.items[${i}].key` }));

/** A reference to the object named at `path` (its `name`, or `secretName` with nameField). */
const refTo = (
  kind: ConfigKind,
  object: { name?: string; optional?: boolean },
  path: string,
  use: ConfigRef["use"],
  extra: Partial<ConfigRef> = {},
): ConfigRef => ({ kind, name: object.name ?? "", path, optional: object.optional === true, keys: [], use, ...extra });

/** Every ConfigMap and Secret reference of a pod, in spec order. */
export function podConfigRefs(pod: Pod): ConfigRef[] {
  const refs: ConfigRef[] = [];
  (pod.spec.volumes ?? []).forEach((volume, i) => {
    const base = `spec.volumes[${i}]`;
    const { configMap, secret } = volume;
    if (configMap)
      refs.push(
        refTo("ConfigMap", configMap, `${base}.configMap`, "volume", {
          keys: keysOf(configMap.items, `${base}.configMap`),
        }),
      );
    if (secret)
      refs.push(
        refTo("Secret", { name: secret.secretName, optional: secret.optional }, `${base}.secret`, "volume", {
          nameField: "secretName",
          keys: keysOf(secret.items, `${base}.secret`),
        }),
      );
    (volume.projected?.sources ?? []).forEach((source, j) => {
      const at = `${base}.projected.sources[${j}]`;
      if (source.configMap)
        refs.push(
          refTo("ConfigMap", source.configMap, `${at}.configMap`, "volume", {
            keys: keysOf(source.configMap.items, `${at}.configMap`),
          }),
        );
      if (source.secret)
        refs.push(
          refTo("Secret", source.secret, `${at}.secret`, "volume", {
            keys: keysOf(source.secret.items, `${at}.secret`),
          }),
        );
    });
  });
  const groups = [
    ["spec.initContainers", pod.spec.initContainers ?? []],
    ["spec.containers", pod.spec.containers ?? []],
  ] as const;
  for (const [group, containers] of groups) {
    containers.forEach((container, i) => {
      const base = `${group}[${i}]`;
      (container.envFrom ?? []).forEach((source, j) => {
        const at = `${base}.envFrom[${j}]`;
        const prefix = source.prefix ?? "";
        if (source.configMapRef)
          refs.push(refTo("ConfigMap", source.configMapRef, `${at}.configMapRef`, "env", { prefix }));
        if (source.secretRef) refs.push(refTo("Secret", source.secretRef, `${at}.secretRef`, "env", { prefix }));
      });
      (container.env ?? []).forEach((env, j) => {
        const at = `${base}.env[${j}].valueFrom`;
        const cm = env.valueFrom?.configMapKeyRef;
        const secret = env.valueFrom?.secretKeyRef;
        if (cm)
          refs.push(
            refTo("ConfigMap", cm, `${at}.configMapKeyRef`, "env", {
              keys: [{ key: cm.key, path: `${at}.configMapKeyRef.key` }],
            }),
          );
        if (secret)
          refs.push(
            refTo("Secret", secret, `${at}.secretKeyRef`, "env", {
              keys: [{ key: secret.key, path: `${at}.secretKeyRef.key` }],
            }),
          );
      });
    });
  }
  // A missing pull secret is not fatal in Kubernetes either: the pull goes ahead with the node's credentials.
  (pod.spec.imagePullSecrets ?? []).forEach((ref, i) =>
    refs.push(refTo("Secret", { name: ref.name, optional: true }, `spec.imagePullSecrets[${i}]`, "imagePullSecret")),
  );
  return refs;
}

/**
 * References that the given objects cannot satisfy (a missing object or key, not optional), and a
 * note per env reference that a change applies only when the container restarts.
 */
export function checkConfigRefs(pod: Pod, lookup: ConfigLookup): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const namespace = pod.metadata.namespace;
  for (const ref of podConfigRefs(pod)) {
    const object = lookup.get(ref.kind, namespace, ref.name);
    if (!object) {
      if (!ref.optional)
        issues.push({
          path: `${ref.path}.${ref.nameField ?? "name"}`,
          type: "Not found",
          value: ref.name,
          detail: `no ${ref.kind} ${namespace}/${ref.name} in the manifests read: the pod would wait with CreateContainerConfigError (mark the reference optional: true if it may be absent)`,
          severity: "error",
        });
      else if (ref.use === "imagePullSecret")
        issues.push({
          path: `${ref.path}.name`,
          type: "Not found",
          value: ref.name,
          detail: `no Secret ${namespace}/${ref.name} in the manifests read: images are pulled with the node's credentials`,
          severity: "warning",
        });
      continue;
    }
    const bytes = configBytes(object);
    for (const { key, path } of ref.keys)
      if (!bytes.has(key) && !ref.optional)
        issues.push({
          path,
          type: "Not found",
          value: key,
          detail: `couldn't find key ${key} in ${ref.kind} ${namespace}/${ref.name}`,
          severity: "error",
        });
    const skipped = ref.prefix === undefined ? [] : [...bytes.keys()].filter((k) => !isEnvVarName(`${ref.prefix}${k}`));
    if (skipped.length)
      issues.push({
        path: ref.path,
        type: "Invalid value",
        detail: `keys [${skipped.join(", ")}] from the EnvFrom ${ref.kind.toLowerCase()} ${namespace}/${ref.name} were skipped since they are considered invalid environment variable names`,
        severity: "warning",
      });
    if (ref.use === "env" && !object.immutable)
      issues.push({
        path: ref.path,
        type: "Restart required",
        detail: `environment variables are read when the container starts: a change of ${ref.kind} ${namespace}/${ref.name} reaches it only after a restart (mounted volumes follow changes)`,
        severity: "warning",
      });
    if (ref.use === "imagePullSecret" && object.type !== "kubernetes.io/dockerconfigjson")
      issues.push({
        path: `${ref.path}.name`,
        type: "Invalid value",
        value: ref.name,
        detail: `Secret ${namespace}/${ref.name} has type ${JSON.stringify(object.type)}; image pull secrets must be of type "kubernetes.io/dockerconfigjson"`,
        severity: "warning",
      });
  }
  return issues;
}
