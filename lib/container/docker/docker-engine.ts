// The only dockerode import: the Docker Engine API calls the kubelet makes, as one narrow typed interface over a
// dockerode client on the endpoint (unix socket or tcp) with kept-alive connections. Raw calls: deadlines and the
// port's error codes are docker-calls.ts's.
import Docker from "dockerode";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { KubeletError } from "../../api/types.ts";
import type { RegistryAuth } from "../runtime.ts";
import type { ExecInspect, HijackedStream } from "./docker-exec.ts";
import type { ContainerCreateBody } from "./docker-shim.ts";

/** --docker_endpoint, else $DOCKER_HOST, else the default socket. */
export function resolveDockerEndpoint(flag: string, env: Record<string, string | undefined>): string {
  return flag || env.DOCKER_HOST || "unix:///var/run/docker.sock";
}

/**
 * Idle connections to the Engine kept for reuse. docker-modem opened and closed one per call, and connecting and
 * closing was most of the CPU of the kubelet's idle polling; the bound keeps a burst (100 log followers, a stats
 * collection) from holding its sockets afterwards, as Go's http.Transport bounds its idle connections per host.
 */
export const KEPT_ENGINE_CONNECTIONS = 8;

const keptAlive = (https = false): HttpAgent =>
  new (https ? HttpsAgent : HttpAgent)({ keepAlive: true, maxFreeSockets: KEPT_ENGINE_CONNECTIONS });

/** docker-modem takes an `agent`, which @types/dockerode leaves out. */
function connectionOptions(endpoint: string): Docker.DockerOptions & { agent: HttpAgent } {
  if (endpoint.startsWith("unix://")) return { socketPath: endpoint.slice("unix://".length), agent: keptAlive() };
  if (endpoint.startsWith("/")) return { socketPath: endpoint, agent: keptAlive() };
  const url = URL.parse(endpoint.replace(/^tcp:\/\//, "http://"));
  // ssh:// (Docker's remote-host scheme) included: a node agent drives the Engine of the node it runs on, whose paths,
  // cgroups and volumes it shares; the kubelet has no SSH client (ssh2 is left out of the binary).
  if (!url || !["http:", "https:"].includes(url.protocol))
    throw new KubeletError(
      "InvalidValue",
      `Docker endpoint "${endpoint}" (--docker_endpoint, else $DOCKER_HOST): unsupported; give unix:///path/to/docker.sock, ` +
        "tcp://host:port, http://host:port or https://host:port",
    );
  const https = url.protocol === "https:";
  return {
    host: url.hostname,
    port: Number(url.port || (https ? 2376 : 2375)),
    protocol: https ? "https" : "http",
    agent: keptAlive(https),
  };
}

/** A streamed answer (pull progress, followed logs, events): bytes until the Engine or destroy() ends it. */
export type EngineStream = AsyncIterable<Uint8Array> & { destroy(): void };

/** GET /version. */
export interface EngineVersion {
  Version: string;
  ApiVersion: string;
}

/** GET /info: the fields the kubelet reads. */
export interface EngineInfo {
  OperatingSystem: string;
  KernelVersion: string;
  NCPU: number;
  MemTotal: number;
  Name: string;
  CgroupDriver: string;
  DockerRootDir: string;
}

/** GET /containers/json: one container. */
export interface EngineContainerItem {
  Id: string;
  Names: string[];
  Image: string;
  ImageID: string;
  Labels?: Record<string, string>;
  State: string;
  /** Seconds since the epoch. */
  Created: number;
  HostConfig?: { NetworkMode?: string };
  SizeRw?: number;
}

/** GET /containers/{id}/json: the fields the kubelet reads. */
export interface EngineContainerInspect {
  Id: string;
  Name: string;
  Created: string;
  Image: string;
  LogPath: string;
  Config: { Labels?: Record<string, string>; Image: string; Tty: boolean };
  State: {
    Status: string;
    Running: boolean;
    ExitCode: number;
    StartedAt: string;
    FinishedAt: string;
    OOMKilled: boolean;
    Error: string;
    Pid: number;
  };
  HostConfig: { CpuPeriod?: number; CpuQuota?: number; CpuShares?: number; Memory?: number; NetworkMode?: string };
  NetworkSettings: unknown;
}

/** GET /containers/{id}/stats, one sample. */
export interface EngineStats {
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
  pids_stats?: { current?: number };
}

/** POST /containers/{id}/update: the resources the kubelet changes. */
export interface EngineUpdateBody {
  CpuShares?: number;
  CpuPeriod?: number;
  CpuQuota?: number;
  Memory?: number;
  MemorySwap?: number;
  CpusetCpus?: string;
  CpusetMems?: string;
}

/** GET /containers/{id}/logs parameters (follow aside). */
export interface EngineLogParams {
  stdout: boolean;
  stderr: boolean;
  timestamps: boolean;
  tail?: number;
  since?: number;
}

/** POST /containers/{id}/exec. */
export interface EngineExecBody {
  Cmd: string[];
  AttachStdin?: boolean;
  AttachStdout?: boolean;
  AttachStderr?: boolean;
  Tty?: boolean;
}

/** One created exec instance, raw. */
export interface EngineExec {
  start(options: { stdin: boolean; tty?: boolean }): Promise<HijackedStream>;
  inspect(): Promise<ExecInspect>;
  resize(size: { w: number; h: number }): Promise<unknown>;
}

/** GET /images/{ref}/json: the fields the kubelet reads. */
export interface EngineImageInspect {
  Id: string;
  RepoTags?: string[];
  Size: number;
  Config?: { User?: string };
}

/** GET /images/json: one image. */
export interface EngineImageItem {
  Id: string;
  RepoTags?: string[] | null;
  Size: number;
  /** Seconds since the epoch. */
  Created: number;
}

/**
 * The Engine API calls the kubelet makes, raw: each answers as the Engine does and fails with dockerode's error
 * (`statusCode`, `json.message`). A `signal` aborts the request.
 */
export interface DockerEngine {
  version(signal: AbortSignal): Promise<EngineVersion>;
  info(signal: AbortSignal): Promise<EngineInfo>;
  /** GET /system/df. */
  diskUsage(signal: AbortSignal): Promise<{ LayersSize?: number }>;
  createContainer(body: ContainerCreateBody, signal: AbortSignal): Promise<{ id: string }>;
  startContainer(id: string, signal: AbortSignal): Promise<unknown>;
  stopContainer(id: string, t: number, signal: AbortSignal): Promise<unknown>;
  removeContainer(id: string, options: { force: boolean; v: boolean }, signal: AbortSignal): Promise<unknown>;
  inspectContainer(id: string, signal: AbortSignal): Promise<EngineContainerInspect>;
  listContainers(
    options: { all: true; size?: boolean; filters?: { label: string[] } },
    signal: AbortSignal,
  ): Promise<EngineContainerItem[]>;
  updateContainer(id: string, body: EngineUpdateBody, signal: AbortSignal): Promise<unknown>;
  /** One sample the Engine has at hand (one-shot: no wait for a second one). */
  containerStats(id: string, signal: AbortSignal): Promise<EngineStats>;
  /** The log so far, in one answer. */
  readLogs(id: string, params: EngineLogParams, signal: AbortSignal): Promise<Uint8Array>;
  /** The log, followed. */
  followLogs(id: string, params: EngineLogParams, signal: AbortSignal): Promise<EngineStream>;
  /** The container's stdio, hijacked (no signal: dockerode takes none here). */
  attach(id: string, options: { stdin: boolean; stdout: boolean; stderr: boolean }): Promise<HijackedStream>;
  resizeContainer(id: string, size: { w: number; h: number }, signal: AbortSignal): Promise<unknown>;
  createExec(id: string, body: EngineExecBody, signal: AbortSignal): Promise<EngineExec>;
  events(filters: { type: "container"[]; event: string[] }, signal: AbortSignal): Promise<EngineStream>;
  inspectImage(ref: string, signal: AbortSignal): Promise<EngineImageInspect>;
  /** The pull's progress stream (failures come in-band). */
  pull(ref: string, auth: RegistryAuth | undefined, signal: AbortSignal): Promise<EngineStream>;
  listImages(signal: AbortSignal): Promise<EngineImageItem[]>;
  /** Untags `ref`, deleting the image at its last tag; never forced. */
  removeImage(ref: string, signal: AbortSignal): Promise<unknown>;
}

/** Calls a dockerode method with options (an abortSignal) that @types/dockerode leaves out of its signature. */
function invoke<T>(target: object, method: string, options: object): Promise<T> {
  return (target as Record<string, (o: object) => Promise<T>>)[method]!(options);
}

/** The Engine at `endpoint` (unix://path, /path, tcp://, http:// or https://host:port); InvalidValue for others. */
export function createDockerEngine(endpoint: string): DockerEngine {
  const docker = new Docker(connectionOptions(endpoint));
  const container = (id: string) => docker.getContainer(id);
  const image = (ref: string) => docker.getImage(ref);
  return {
    version: (abortSignal) => invoke(docker, "version", { abortSignal }),
    info: (abortSignal) => invoke(docker, "info", { abortSignal }),
    diskUsage: (abortSignal) => invoke(docker, "df", { abortSignal }),
    createContainer: (body, abortSignal) =>
      docker.createContainer({ ...body, abortSignal } as Docker.ContainerCreateOptions),
    startContainer: (id, abortSignal) => container(id).start({ abortSignal }),
    stopContainer: (id, t, abortSignal) => container(id).stop({ t, abortSignal }),
    removeContainer: (id, options, abortSignal) => container(id).remove({ ...options, abortSignal }),
    inspectContainer: (id, abortSignal) =>
      container(id).inspect({ abortSignal }) as unknown as Promise<EngineContainerInspect>,
    listContainers: (options, abortSignal) =>
      docker.listContainers({ ...options, abortSignal }) as unknown as Promise<EngineContainerItem[]>,
    updateContainer: (id, body, abortSignal) => invoke(container(id), "update", { ...body, abortSignal }),
    containerStats: (id, abortSignal) =>
      invoke(container(id), "stats", { stream: false, "one-shot": true, abortSignal }),
    readLogs: (id, params, abortSignal) =>
      container(id).logs({ ...params, follow: false, abortSignal }) as unknown as Promise<Uint8Array>,
    followLogs: (id, params, abortSignal) =>
      container(id).logs({ ...params, follow: true, abortSignal }) as unknown as Promise<EngineStream>,
    attach: (id, options) =>
      container(id).attach({ stream: true, hijack: true, ...options }) as unknown as Promise<HijackedStream>,
    resizeContainer: (id, { w, h }, abortSignal) => invoke(container(id), "resize", { w, h, abortSignal }),
    async createExec(id, body, abortSignal) {
      const exec = await container(id).exec({ ...body, abortSignal } as Docker.ExecCreateOptions);
      return {
        // An unset tty leaves Tty out of the body (JSON drops it), as the blocking exec always sent it.
        start: async ({ stdin, tty }) =>
          (await exec.start({ hijack: true, stdin, Tty: tty })) as unknown as HijackedStream,
        inspect: () => exec.inspect() as Promise<ExecInspect>,
        resize: (size) => exec.resize(size),
      };
    },
    events: (filters, abortSignal) => docker.getEvents({ filters, abortSignal }) as unknown as Promise<EngineStream>,
    inspectImage: (ref, abortSignal) => invoke(image(ref), "inspect", { abortSignal }),
    pull: (ref, auth, abortSignal) =>
      docker.pull(ref, { ...(auth ? { authconfig: auth } : {}), abortSignal }) as unknown as Promise<EngineStream>,
    listImages: (abortSignal) => invoke(docker, "listImages", { abortSignal }),
    removeImage: (ref, abortSignal) => invoke(image(ref), "remove", { abortSignal }),
  };
}
