// A Runtime that records every call in the runtime operation metrics, with the kubelet's operation names.
import type { KubeletMetrics } from "../metrics.ts";
import type { Runtime } from "./runtime.ts";

const OPERATION: Partial<Record<keyof Runtime, string>> = {
  ping: "version",
  info: "info",
  listContainers: "list_containers",
  inspectContainer: "container_status",
  createContainer: "create_container",
  startContainer: "start_container",
  stopContainer: "stop_container",
  removeContainer: "remove_container",
  imageId: "image_status",
  pullImage: "pull_image",
  exec: "exec_sync",
  stats: "container_stats",
};

/** Wraps the non-streaming methods of a runtime with timing and error counting. */
export function instrumentRuntime(runtime: Runtime, metrics: KubeletMetrics): Runtime {
  const wrapped = { ...runtime } as Record<string, unknown>;
  for (const [method, operation] of Object.entries(OPERATION) as Array<[keyof Runtime, string]>) {
    const original = runtime[method] as (...args: unknown[]) => Promise<unknown>;
    wrapped[method] = async (...args: unknown[]) => {
      const started = performance.now();
      try {
        const result = await original.apply(runtime, args);
        metrics.runtimeOperation(operation, (performance.now() - started) / 1000, false);
        return result;
      } catch (error) {
        metrics.runtimeOperation(operation, (performance.now() - started) / 1000, true);
        throw error;
      }
    };
  }
  wrapped.logs = runtime.logs.bind(runtime);
  wrapped.events = runtime.events.bind(runtime);
  return wrapped as unknown as Runtime;
}
