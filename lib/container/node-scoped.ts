// A Runtime that sees only one node's containers, so kubelets with different --hostname_override can
// share a Docker Engine (a fleet on one machine, tests) without stopping each other's pods as orphans.
// Containers are labelled with the node at creation; unlabelled ones (created before the label
// existed) stay visible, so an upgraded kubelet still adopts what it ran. Calls it does not scope
// pass their arguments on as they came (`...args`), so a parameter added to the port cannot be dropped here.
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
    version: (...args) => runtime.version(...args),
    status: (...args) => runtime.status(...args),
    machineInfo: () => runtime.machineInfo(),
    listPodSandboxes: async (filter) => (await runtime.listPodSandboxes(filter)).filter((s) => mine(s.labels)),
    podSandboxStatus: (...args) => runtime.podSandboxStatus(...args),
    stopPodSandbox: (...args) => runtime.stopPodSandbox(...args),
    removePodSandbox: (...args) => runtime.removePodSandbox(...args),
    listContainers: async (options) => (await runtime.listContainers(options)).filter((c) => mine(c.labels)),
    ...(runtime.lastListing && {
      lastListing: (maxAgeMs: number) => {
        const { sandboxes, containers } = runtime.lastListing!(maxAgeMs);
        return {
          ...(sandboxes && { sandboxes: sandboxes.filter((s) => mine(s.labels)) }),
          ...(containers && { containers: containers.filter((c) => mine(c.labels)) }),
        };
      },
    }),
    inspectContainer: (...args) => runtime.inspectContainer(...args),
    runPodSandbox: (config, runtimeHandler) => runtime.runPodSandbox(labelled(config), runtimeHandler),
    createContainer: (sandboxId, config, sandboxConfig) =>
      runtime.createContainer(sandboxId, labelled(config), labelled(sandboxConfig)),
    startContainer: (...args) => runtime.startContainer(...args),
    stopContainer: (...args) => runtime.stopContainer(...args),
    updateContainerResources: (...args) => runtime.updateContainerResources(...args),
    removeContainer: (...args) => runtime.removeContainer(...args),
    imageStatus: (...args) => runtime.imageStatus(...args),
    // The image filesystem is the daemon's, shared by every node on it.
    imageFsInfo: () => runtime.imageFsInfo(),
    pullImage: (...args) => runtime.pullImage(...args),
    reportsPullProgress: runtime.reportsPullProgress,
    // Images are the daemon's, shared by every node on it: in use means by any container (listImages says so).
    listImages: () => runtime.listImages(),
    removeImage: (...args) => runtime.removeImage(...args),
    exec: (...args) => runtime.exec(...args),
    execStream: (...args) => runtime.execStream(...args),
    attach: (...args) => runtime.attach(...args),
    portForward: (...args) => runtime.portForward(...args),
    ...(runtime.reopenContainerLog && { reopenContainerLog: (id: string) => runtime.reopenContainerLog!(id) }),
    logs: (...args) => runtime.logs(...args),
    stats: (...args) => runtime.stats(...args),
    async *events(signal) {
      for await (const event of runtime.events(signal)) if (mine(event.labels)) yield event;
    },
  };
}
