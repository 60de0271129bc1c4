// A Runtime that records every non-streaming call in the runtime operation metrics, under the
// operation names the real kubelet uses for kubelet_runtime_operations_*{operation_type}, and counts
// the streams (followed logs, events, exec and attach sessions) held open, so a stream left behind by
// a gone client shows.
import type { KubeletMetrics } from "../metrics.ts";
import type { Runtime, StreamSession } from "./runtime.ts";

/**
 * Operation name of each call (logs and events are streams: counted while open). Exec and attach
 * sessions are timed until they are set up, then counted while open.
 */
export const RUNTIME_OPERATIONS = {
  version: "version",
  status: "status",
  machineInfo: "machine_info",
  runPodSandbox: "run_podsandbox",
  stopPodSandbox: "stop_podsandbox",
  removePodSandbox: "remove_podsandbox",
  podSandboxStatus: "podsandbox_status",
  listPodSandboxes: "list_podsandbox",
  listContainers: "list_containers",
  inspectContainer: "container_status",
  createContainer: "create_container",
  startContainer: "start_container",
  stopContainer: "stop_container",
  updateContainerResources: "update_container",
  removeContainer: "remove_container",
  imageStatus: "image_status",
  imageFsInfo: "image_fs_info",
  pullImage: "pull_image",
  listImages: "list_images",
  removeImage: "remove_image",
  exec: "exec_sync",
  execStream: "exec",
  attach: "attach",
  portForward: "port_forward",
  stats: "container_stats",
  reopenContainerLog: "reopen_container_log",
} as const satisfies Partial<Record<keyof Runtime, string>>;

/** Runs one call, recorded under `operation` (its duration, and whether it failed). */
export async function measuredCall<R>(
  record: KubeletMetrics["runtimeOperation"],
  operation: string,
  call: () => Promise<R>,
): Promise<R> {
  const started = performance.now();
  let failed = true;
  try {
    const result = await call();
    failed = false;
    return result;
  } finally {
    record(operation, (performance.now() - started) / 1000, failed);
  }
}

/** Wraps the non-streaming methods of a runtime with timing and error counting. */
export function instrumentRuntime(runtime: Runtime, metrics: KubeletMetrics): Runtime {
  const measured =
    <A extends unknown[], R>(operation: string, fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      measuredCall(metrics.runtimeOperation, operation, () => fn.apply(runtime, args));
  return {
    version: measured(RUNTIME_OPERATIONS.version, runtime.version),
    status: measured(RUNTIME_OPERATIONS.status, runtime.status),
    machineInfo: measured(RUNTIME_OPERATIONS.machineInfo, runtime.machineInfo),
    runPodSandbox: measured(RUNTIME_OPERATIONS.runPodSandbox, runtime.runPodSandbox),
    stopPodSandbox: measured(RUNTIME_OPERATIONS.stopPodSandbox, runtime.stopPodSandbox),
    removePodSandbox: measured(RUNTIME_OPERATIONS.removePodSandbox, runtime.removePodSandbox),
    podSandboxStatus: measured(RUNTIME_OPERATIONS.podSandboxStatus, runtime.podSandboxStatus),
    listPodSandboxes: measured(RUNTIME_OPERATIONS.listPodSandboxes, runtime.listPodSandboxes),
    listContainers: measured(RUNTIME_OPERATIONS.listContainers, runtime.listContainers),
    // Answered from memory, not the runtime: no operation to count.
    ...(runtime.lastListing && { lastListing: (maxAgeMs: number) => runtime.lastListing!(maxAgeMs) }),
    inspectContainer: measured(RUNTIME_OPERATIONS.inspectContainer, runtime.inspectContainer),
    createContainer: measured(RUNTIME_OPERATIONS.createContainer, runtime.createContainer),
    startContainer: measured(RUNTIME_OPERATIONS.startContainer, runtime.startContainer),
    stopContainer: measured(RUNTIME_OPERATIONS.stopContainer, runtime.stopContainer),
    updateContainerResources: measured(RUNTIME_OPERATIONS.updateContainerResources, runtime.updateContainerResources),
    removeContainer: measured(RUNTIME_OPERATIONS.removeContainer, runtime.removeContainer),
    imageStatus: measured(RUNTIME_OPERATIONS.imageStatus, runtime.imageStatus),
    imageFsInfo: measured(RUNTIME_OPERATIONS.imageFsInfo, runtime.imageFsInfo),
    pullImage: measured(RUNTIME_OPERATIONS.pullImage, runtime.pullImage),
    reportsPullProgress: runtime.reportsPullProgress,
    listImages: measured(RUNTIME_OPERATIONS.listImages, runtime.listImages),
    removeImage: measured(RUNTIME_OPERATIONS.removeImage, runtime.removeImage),
    exec: measured(RUNTIME_OPERATIONS.exec, runtime.exec),
    execStream: async (id, cmd, options) =>
      countedSession("exec", await measured(RUNTIME_OPERATIONS.execStream, runtime.execStream)(id, cmd, options)),
    attach: async (id, options) =>
      countedSession("attach", await measured(RUNTIME_OPERATIONS.attach, runtime.attach)(id, options)),
    portForward: measured(RUNTIME_OPERATIONS.portForward, runtime.portForward),
    stats: measured(RUNTIME_OPERATIONS.stats, runtime.stats),
    ...(runtime.reopenContainerLog && {
      reopenContainerLog: measured(RUNTIME_OPERATIONS.reopenContainerLog, runtime.reopenContainerLog),
    }),
    logs: (id, options) => counted("logs", runtime.logs(id, options)),
    events: (signal) => counted("events", runtime.events(signal)),
  };

  /** Counts a session as open until it is closed. */
  function countedSession(streamType: "exec" | "attach", session: StreamSession): StreamSession {
    metrics.runtimeStream(streamType, 1);
    let open = true;
    return {
      ...session,
      close() {
        if (open) metrics.runtimeStream(streamType, -1);
        open = false;
        session.close();
      },
    };
  }

  /** Counts a stream as open from its first read until it ends or its reader returns. */
  async function* counted<T>(streamType: "logs" | "events", stream: AsyncIterable<T>): AsyncGenerator<T> {
    metrics.runtimeStream(streamType, 1);
    try {
      yield* stream;
    } finally {
      metrics.runtimeStream(streamType, -1);
    }
  }
}
