// The Runtime port on a Docker Engine (the dockershim's docker_service.go NewDockerService): the Engine client of
// docker-engine.ts (the only dockerode import) handed, as the narrow calls each uses, to the service, images,
// sandboxes and containers, logs and events, and exec.
import { type Clock, systemClock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { keepingListing, staleOnEvents } from "../kept-listing.ts";
import { EVENTED_RELIST_PERIOD_MS } from "../pleg/evented.ts";
import type { PlegHealth } from "../pleg/health.ts";
import { createSharedListing } from "../shared-listing.ts";
import type { Runtime } from "../runtime.ts";
import { createDockerContainers } from "./docker-containers.ts";
import { createDockerEngine, type DockerEngine } from "./docker-engine.ts";
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
  /** The kept listing's clock (its age). */
  clock?: Clock;
}

/** The Runtime port on the Docker Engine at `endpoint` (unix://path, tcp://host:port), or on `deps.engine`. */
export function createDockerRuntime(options: DockerRuntimeOptions, deps: { engine?: DockerEngine } = {}): Runtime {
  const engine = deps.engine ?? createDockerEngine(options.endpoint);
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
  // The last full listing answers the node's other readers (the resync, container GC, the log manager, the stats
  // collection) while nothing can have changed since it began, as on the CRI. The Engine's events stream keeps it
  // current only for what it tells (container lifecycle actions, not a rename or a retagged image), so it is current
  // for at most the Evented PLEG's relist period: the resync then lists, and that listing is the relist the PLEG
  // health reads (its threshold while the stream is open is twice that period).
  const shared = createSharedListing(options.clock ?? systemClock, { streamedMaxAgeMs: EVENTED_RELIST_PERIOD_MS });
  const { logs, events } = createDockerLogs(
    {
      timeoutMs,
      log,
      streaming: (on) => {
        // Opened once the Engine answered: an event from then on reaches the stream; the end is staleOnEvents'.
        if (on) shared.streaming(true);
        options.plegHealth?.streaming(on);
      },
    },
    { engine },
  );
  const { plegHealth, relisted } = options;
  let lastRelistStart: number | undefined;
  return keepingListing(shared, {
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
    events: (signal) => staleOnEvents(shared, events(signal)),
  });
}
