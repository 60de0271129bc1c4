// A Runtime that sees only one node's containers, so kubelets with different --hostname_override can
// share a Docker Engine (a fleet on one machine, tests) without stopping each other's pods as orphans.
// Containers are labelled with the node at creation; unlabelled ones (created before the label
// existed) stay visible, so an upgraded kubelet still adopts what it ran.
import type { Runtime } from "./runtime.ts";

/** The node (the kubelet's node name) a container was created for. */
export const NODE_LABEL = "kubelet.io/node";

export function scopeRuntimeToNode(runtime: Runtime, node: string): Runtime {
  const mine = (labels: Record<string, string>) => labels[NODE_LABEL] === undefined || labels[NODE_LABEL] === node;
  const labelled = <T extends { labels?: Record<string, string> }>(config: T): T => ({
    ...config,
    labels: { ...config.labels, [NODE_LABEL]: node },
  });
  return {
    version: (signal) => runtime.version(signal),
    status: (signal) => runtime.status(signal),
    machineInfo: () => runtime.machineInfo(),
    listPodSandboxes: async (filter) => (await runtime.listPodSandboxes(filter)).filter((s) => mine(s.labels)),
    podSandboxStatus: (id) => runtime.podSandboxStatus(id),
    stopPodSandbox: (id) => runtime.stopPodSandbox(id),
    removePodSandbox: (id) => runtime.removePodSandbox(id),
    listContainers: async (options) => (await runtime.listContainers(options)).filter((c) => mine(c.labels)),
    inspectContainer: (id) => runtime.inspectContainer(id),
    runPodSandbox: (config) => runtime.runPodSandbox(labelled(config)),
    createContainer: (sandboxId, config, sandboxConfig) =>
      runtime.createContainer(sandboxId, labelled(config), labelled(sandboxConfig)),
    startContainer: (id) => runtime.startContainer(id),
    stopContainer: (id, grace) => runtime.stopContainer(id, grace),
    removeContainer: (id) => runtime.removeContainer(id),
    imageStatus: (ref) => runtime.imageStatus(ref),
    // The image filesystem is the daemon's, shared by every node on it.
    imageFsInfo: () => runtime.imageFsInfo(),
    pullImage: (ref, auth, signal, onProgress) => runtime.pullImage(ref, auth, signal, onProgress),
    // Images are the daemon's, shared by every node on it: in use means by any container (listImages says so).
    listImages: () => runtime.listImages(),
    removeImage: (id) => runtime.removeImage(id),
    exec: (id, cmd, options) => runtime.exec(id, cmd, options),
    execStream: (id, cmd, options) => runtime.execStream(id, cmd, options),
    attach: (id, options) => runtime.attach(id, options),
    ...(runtime.reopenContainerLog && { reopenContainerLog: (id: string) => runtime.reopenContainerLog!(id) }),
    logs: (id, options) => runtime.logs(id, options),
    stats: (id) => runtime.stats(id),
    async *events(signal) {
      for await (const event of runtime.events(signal)) if (mine(event.labels)) yield event;
    },
  };
}
