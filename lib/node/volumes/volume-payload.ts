// Pure: the files of a configMap, secret, projected or downwardAPI volume, from the pod and the
// ConfigMaps and Secrets it names — keys to paths, modes, optional references, and the kubelet's
// messages when an object or a key is missing.
import { configBytes, type ConfigKind, type ConfigLookup } from "../../api/config-objects.ts";
import { KubeletError, type Pod, type V1Volume } from "../../api/types.ts";
import { podFieldValue, resourceFieldValue } from "../../api/downward.ts";
import type { VolumeFile } from "./atomic-writer.ts";

/** Kubernetes' defaults: 0644 for ConfigMaps and downward API files; Secrets are owner-read-only here. */
export const DEFAULT_MODE = { ConfigMap: 0o644, Secret: 0o400, downwardAPI: 0o644 } as const;

type Node = { cpus: number; memoryBytes: number };

interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

interface DownwardItem {
  path: string;
  mode?: number;
  fieldRef?: { fieldPath: string };
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: string | number };
}

/** True for the volume kinds whose files the kubelet writes. */
export function isProjectedKind(volume: V1Volume): boolean {
  return !!(volume.configMap || volume.secret || volume.projected || volume.downwardAPI);
}

/** The files of one such volume; throws KubeletError("CreateContainerConfigError") naming what is missing. */
export function volumePayload(pod: Pod, volume: V1Volume, configs: ConfigLookup, node: Node): Map<string, VolumeFile> {
  const files = new Map<string, VolumeFile>();
  const fail = (why: string) =>
    new KubeletError("CreateContainerConfigError", `MountVolume.SetUp failed for volume "${volume.name}" : ${why}`);
  const addObject = (
    kind: ConfigKind,
    name: string,
    items: KeyToPath[] | undefined,
    optional: boolean,
    defaultMode: number,
  ) => {
    const object = configs.get(kind, pod.metadata.namespace, name);
    if (!object) {
      if (optional) return;
      throw fail(`${kind === "ConfigMap" ? "configmap" : "secret"} "${name}" not found`);
    }
    const bytes = configBytes(object);
    if (!items?.length) {
      for (const [key, data] of bytes) files.set(key, { data, mode: defaultMode });
      return;
    }
    for (const item of items) {
      const data = bytes.get(item.key);
      if (data === undefined) {
        if (optional) continue;
        throw fail(
          kind === "ConfigMap"
            ? `configmap references non-existent config key: ${item.key}`
            : `references non-existent secret key: ${item.key}`,
        );
      }
      files.set(item.path, { data, mode: item.mode ?? defaultMode });
    }
  };
  const addDownward = (items: DownwardItem[] | undefined, defaultMode: number) => {
    for (const item of items ?? []) {
      const text = item.fieldRef
        ? (podFieldValue(pod, item.fieldRef.fieldPath) ?? "")
        : downwardResource(pod, item.resourceFieldRef!, node, fail);
      files.set(item.path, { data: Buffer.from(text, "utf8"), mode: item.mode ?? defaultMode });
    }
  };

  if (volume.configMap) {
    const { name, items, optional, defaultMode } = volume.configMap;
    addObject("ConfigMap", name ?? "", items, optional === true, defaultMode ?? DEFAULT_MODE.ConfigMap);
  } else if (volume.secret) {
    const { secretName, items, optional, defaultMode } = volume.secret;
    addObject("Secret", secretName ?? "", items, optional === true, defaultMode ?? DEFAULT_MODE.Secret);
  } else if (volume.downwardAPI) {
    addDownward(volume.downwardAPI.items as DownwardItem[], volume.downwardAPI.defaultMode ?? DEFAULT_MODE.downwardAPI);
  } else if (volume.projected) {
    const mode = volume.projected.defaultMode;
    for (const source of volume.projected.sources ?? []) {
      if (source.configMap) {
        const { name, items, optional } = source.configMap;
        addObject("ConfigMap", name ?? "", items, optional === true, mode ?? DEFAULT_MODE.ConfigMap);
      } else if (source.secret) {
        const { name, items, optional } = source.secret;
        addObject("Secret", name ?? "", items, optional === true, mode ?? DEFAULT_MODE.Secret);
      } else if (source.downwardAPI) {
        addDownward(source.downwardAPI.items as DownwardItem[], mode ?? DEFAULT_MODE.downwardAPI);
      }
    }
  }
  return files;
}

function downwardResource(
  pod: Pod,
  ref: NonNullable<DownwardItem["resourceFieldRef"]>,
  node: Node,
  fail: (why: string) => Error,
): string {
  const container = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find(
    (c) => c.name === ref.containerName,
  );
  if (!container) throw fail(`container "${ref.containerName}" of resourceFieldRef not found in the pod`);
  return resourceFieldValue(container, ref, node);
}
