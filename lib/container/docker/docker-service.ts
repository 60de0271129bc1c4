// The runtime's own calls on Docker (the dockershim's docker_service.go): version, status, and the machine's facts
// from the Engine's /info, read once.
import type { MachineInfo, Runtime } from "../runtime.ts";
import { call } from "./docker-calls.ts";
import type { DockerEngine, EngineInfo } from "./docker-engine.ts";

/** The Engine calls the service makes. */
export type ServiceEngine = Pick<DockerEngine, "version" | "info">;

/** Options of the Docker runtime service. */
export interface DockerServiceOptions {
  /** Deadline of one call, ms. */
  timeoutMs: number;
  /** The shim's sandbox image, which status() reports as the runtime's. */
  sandboxImage: string;
}

/** version, status and machineInfo of the Runtime port, plus the Engine's /info as it is now. */
export type DockerService = Pick<Runtime, "version" | "status" | "machineInfo"> & {
  /** GET /info anew (its DockerRootDir for the image filesystem). */
  info(): Promise<EngineInfo>;
};

/** The runtime service over the Engine. */
export function createDockerService(options: DockerServiceOptions, deps: { engine: ServiceEngine }): DockerService {
  const { engine } = deps;
  const limits = (signal?: AbortSignal) => ({ timeoutMs: options.timeoutMs, signal });

  const version = async (signal?: AbortSignal) => {
    const v = await call("read the Docker version", (s) => engine.version(s), limits(signal));
    return { runtimeName: "docker", runtimeVersion: v.Version, runtimeApiVersion: v.ApiVersion };
  };
  const info = () => call("read the Docker Engine's info", (s) => engine.info(s), limits());

  // The Engine's /info once (a slow call: 6–30 ms in dockerd): the machine it describes is fixed for the daemon's life,
  // and its two readers (the cgroup driver at start, the node's capacity at the first pod) each asked it anew. An
  // answer is kept, a failure is not.
  let machine: Promise<MachineInfo> | undefined;

  return {
    version,
    async status(signal) {
      // The dockershim's conditions: the daemon answering (its version) is RuntimeReady; the shim's networks
      // (none, host, a Docker network) need no network plugin, so NetworkReady holds with it. A daemon that does
      // not answer throws, as a CRI runtime's Status call does.
      await version(signal);
      return {
        conditions: [
          { type: "RuntimeReady", status: true, reason: "", message: "" },
          { type: "NetworkReady", status: true, reason: "", message: "" },
        ],
        sandboxImage: options.sandboxImage,
      };
    },
    machineInfo: () =>
      (machine ??= info().then(
        (i) => ({
          os: i.OperatingSystem,
          kernelVersion: i.KernelVersion,
          cpus: i.NCPU,
          memoryBytes: i.MemTotal,
          hostname: i.Name,
          cgroupDriver: i.CgroupDriver,
        }),
        (error: unknown) => {
          machine = undefined;
          throw error;
        },
      )),
    info,
  };
}
