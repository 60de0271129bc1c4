// The Runtime port on a Docker Engine (the dockershim's docker_service.go NewDockerService): the Engine client of
// docker-engine.ts (the only dockerode import) handed, as the narrow calls each uses, to the service, images,
// sandboxes and containers, logs and events, and exec.
import type { Logger } from "../../log.ts";
import type { PlegHealth } from "../pleg/health.ts";
import type { Runtime } from "../runtime.ts";
import { createDockerContainers } from "./docker-containers.ts";
import { createDockerEngine } from "./docker-engine.ts";
import { createDockerExecSync } from "./docker-exec-sync.ts";
import { createDockerStreaming, dockerStreamCalls } from "./docker-exec.ts";
import { createDockerImages } from "./docker-images.ts";
import { createDockerLogs } from "./docker-logs.ts";
import { createDockerPortForward } from "./docker-port-forward.ts";
import { createDockerService } from "./docker-service.ts";
import type { DockerShimOptions } from "./docker-shim.ts";
import { localhostSeccompJson } from "./seccomp-profile.ts";

export { KEPT_ENGINE_CONNECTIONS, resolveDockerEndpoint } from "./docker-engine.ts";

/** Options of the Docker runtime. */
export interface DockerRuntimeOptions {
  endpoint: string;
  log?: Logger;
  /** Deadline of a non-streaming call (of the response, for streams), ms; default 30 s. */
  requestTimeoutMs?: number;
  /** The shim's pause image and sandbox network; defaults as the flags': registry.k8s.io/pause:3.9, "bridge". */
  shim?: Partial<DockerShimOptions>;
  /**
   * The PLEG's health (/healthz "pleg"): on Docker the relist is the sync loop's listing of every container, and the
   * Engine's events stream plays the Evented PLEG's part.
   */
  plegHealth?: Pick<PlegHealth, "relisted" | "streaming">;
  /**
   * kubelet_pleg_relist_duration_seconds / _interval_seconds: that listing's duration and the interval since the one
   * before began, so kube-prometheus' PLEG panels read Docker nodes as CRI ones.
   */
  relisted?(durationSeconds: number, intervalSeconds: number | undefined): void;
}

/** The Runtime port on the Docker Engine at `endpoint` (unix://path, tcp://host:port). */
export function createDockerRuntime(options: DockerRuntimeOptions): Runtime {
  const engine = createDockerEngine(options.endpoint);
  const { log } = options;
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const shim: DockerShimOptions = {
    podInfraImage: "registry.k8s.io/pause:3.9",
    podNetworkMode: "bridge",
    ...options.shim,
  };
  const service = createDockerService({ timeoutMs, sandboxImage: shim.podInfraImage }, { engine });
  const images = createDockerImages(
    { timeoutMs, sandboxImage: shim.podInfraImage, log },
    { engine, info: service.info },
  );
  const containers = createDockerContainers(
    { timeoutMs, shim },
    { engine, ensureSandboxImage: images.ensureSandboxImage, seccompJson: localhostSeccompJson },
  );
  const streaming = createDockerStreaming(dockerStreamCalls({ timeoutMs }, { engine }));
  const { logs, events } = createDockerLogs(
    { timeoutMs, log, ...(options.plegHealth ? { streaming: options.plegHealth.streaming } : {}) },
    { engine },
  );
  const { plegHealth, relisted } = options;
  let lastRelistStart: number | undefined;
  return {
    version: service.version,
    status: service.status,
    machineInfo: service.machineInfo,
    runPodSandbox: containers.runPodSandbox,
    stopPodSandbox: containers.stopPodSandbox,
    removePodSandbox: containers.removePodSandbox,
    podSandboxStatus: containers.podSandboxStatus,
    listPodSandboxes: containers.listPodSandboxes,
    listContainers:
      plegHealth || relisted
        ? async (filter) => {
            const start = performance.now();
            const listed = await containers.listContainers(filter);
            if (filter?.podUid) return listed;
            plegHealth?.relisted();
            relisted?.(
              (performance.now() - start) / 1000,
              lastRelistStart === undefined ? undefined : (start - lastRelistStart) / 1000,
            );
            lastRelistStart = start;
            return listed;
          }
        : containers.listContainers,
    inspectContainer: containers.inspectContainer,
    createContainer: containers.createContainer,
    startContainer: containers.startContainer,
    stopContainer: containers.stopContainer,
    updateContainerResources: containers.updateContainerResources,
    removeContainer: containers.removeContainer,
    stats: containers.stats,
    imageStatus: images.imageStatus,
    imageFsInfo: images.imageFsInfo,
    reportsPullProgress: images.reportsPullProgress,
    pullImage: images.pullImage,
    listImages: images.listImages,
    removeImage: images.removeImage,
    exec: createDockerExecSync({ timeoutMs }, { engine }),
    execStream: streaming.execStream,
    attach: streaming.attach,
    portForward: createDockerPortForward({ timeoutMs }, { engine }),
    logs,
    events,
  };
}
