// Builders of the CRI configs tests hand to a Runtime: a sandbox of one pod and containers in it,
// labelled as the kubelet labels them (podSandboxConfig/containerConfig derive them from real pods).
import type { ContainerConfig, PodSandboxConfig } from "../container/cri-types.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME } from "../container/runtime.ts";

/** A sandbox of pod `name` (namespace default) on the pod's own namespaces. */
export function testSandboxConfig(
  uid: string,
  name: string,
  over: { logDirectory?: string; labels?: Record<string, string> } = {},
): PodSandboxConfig {
  return {
    metadata: { name, namespace: "default", uid, attempt: 0 },
    hostname: name,
    ...(over.logDirectory ? { log_directory: over.logDirectory } : {}),
    labels: {
      [LABEL.podUid]: uid,
      [LABEL.podName]: name,
      [LABEL.podNamespace]: "default",
      [LABEL.containerName]: POD_INFRA_CONTAINER_NAME,
      ...over.labels,
    },
    linux: { security_context: { namespace_options: { network: "POD", ipc: "POD", pid: "CONTAINER" } } },
  };
}

/** Container `name` (instance `attempt`) of the sandbox's pod, running `command` from `image`. */
export function testContainerConfig(
  sandbox: PodSandboxConfig,
  name: string,
  attempt: number,
  image: string,
  command: string[],
  over: Partial<ContainerConfig> = {},
): ContainerConfig {
  const { [LABEL.containerName]: _, ...podLabels } = sandbox.labels ?? {};
  return {
    metadata: { name, attempt },
    image: { image },
    command,
    labels: { ...podLabels, [LABEL.containerName]: name, [LABEL.restartCount]: String(attempt) },
    log_path: `${name}/${attempt}.log`,
    linux: { security_context: { namespace_options: { network: "POD", ipc: "POD", pid: "CONTAINER" } } },
    ...over,
  };
}
