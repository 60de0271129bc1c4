// The only dockerode import: the Runtime port on a Docker Engine (unix socket or tcp).
import Docker from "dockerode";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { KubeletError } from "../../api/types.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { criState, DOCKER_LIFECYCLE_ACTIONS, demuxFrames, parseEvents, pullError } from "./docker-streams.ts";
import { credentialsFor, defaultDockerConfigPaths } from "./docker-credentials.ts";
import { createDockerStreaming, execExitCode, type HijackedStream } from "./docker-exec.ts";
import {
  LABEL,
  POD_INFRA_CONTAINER_NAME,
  type ContainerDetails,
  type ContainerStats,
  type ContainerSummary,
  type ExecResult,
  type ImageStatus,
  type ImageSummary,
  type LogOptions,
  type MachineInfo,
  type PodSandboxDetails,
  type PodSandboxSummary,
  type PullOptions,
  type Runtime,
  type RuntimeEvent,
  isRuntimeError,
  runtimeError,
} from "../runtime.ts";
import {
  containerBody,
  SANDBOX_STOP_GRACE_SECONDS,
  sandboxBody,
  sandboxOf,
  type ContainerCreateBody,
  type DockerShimOptions,
} from "./docker-shim.ts";
import { localhostSeccompJson } from "./seccomp-profile.ts";
import { imageUser } from "../security-context.ts";
import { unreachableFix } from "../unreachable.ts";
import { withOfflineHint } from "../pull-failure.ts";

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

type DockerError = Error & { statusCode?: number; code?: string; json?: { message?: string } };

/** Maps dockerode/HTTP errors to the port's codes. */
function mapError(error: unknown, action: string): KubeletError {
  const e = error as DockerError;
  if (e.name === "KubeletError") return e as KubeletError;
  const message = (e.json?.message ?? e.message ?? String(error)).trim();
  if (e.statusCode === 404) return runtimeError("NotFound", `cannot ${action}: ${message}`, { cause: error });
  if (e.statusCode === 409) return runtimeError("Conflict", `cannot ${action}: ${message}`, { cause: error });
  const unreachable =
    /^(ECONNREFUSED|ENOENT|EPIPE|ECONNRESET|EACCES|ETIMEDOUT|EHOSTUNREACH|ENOTCONN|FailedToOpenSocket|ConnectionRefused)$/;
  if (
    !e.statusCode &&
    ((e.code && unreachable.test(e.code)) || /socket|connect|ECONNREFUSED|ENOENT|No such file/i.test(message))
  ) {
    const fix = unreachableFix(`${e.code ?? ""} ${message}`, { flag: "--docker_endpoint", service: "docker" });
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${action}: the Docker Engine is unreachable: ${message}${fix ? `: ${fix}` : ""}`,
      { cause: error },
    );
  }
  return runtimeError("RuntimeError", `cannot ${action}: ${message}`, { cause: error });
}

interface CallLimits {
  /** Infinity = no deadline of its own (the caller's signal ends it). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** The call opens a stream: the deadline ends at the response, the caller's signal stays linked. */
  stream?: boolean;
}

/**
 * Runs one Engine API call with a deadline and maps its errors. dockerode's own `timeout` is a
 * socket idle timeout that would also cut quiet event and log streams, so deadlines are signals.
 */
async function call<T>(action: string, fn: (signal: AbortSignal) => PromiseLike<T>, limits: CallLimits): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(limits.signal!.reason);
  if (limits.signal?.aborted) onAbort();
  limits.signal?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  const timer = Number.isFinite(limits.timeoutMs)
    ? setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, limits.timeoutMs)
    : undefined;
  // Also race the abort, for the calls (exec start) whose dockerode method takes no signal.
  const aborted = new Promise<never>((_, reject) =>
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
  );
  aborted.catch(() => {});
  try {
    return await Promise.race([fn(controller.signal), aborted]);
  } catch (error) {
    limits.signal?.removeEventListener("abort", onAbort);
    if (timedOut)
      throw runtimeError(
        "RuntimeUnavailable",
        `cannot ${action}: the Docker Engine did not answer within ${limits.timeoutMs} ms`,
        { cause: error },
      );
    if (limits.signal?.aborted) throw limits.signal.reason;
    throw mapError(error, action);
  } finally {
    clearTimeout(timer);
    if (!limits.stream) limits.signal?.removeEventListener("abort", onAbort);
  }
}

/** The container events the kubelet reacts to (see DOCKER_LIFECYCLE_ACTIONS). */
const LIFECYCLE_EVENTS = Object.keys(DOCKER_LIFECYCLE_ACTIONS);

/** Calls a dockerode method with options (an abortSignal) that @types/dockerode leaves out of its signature. */
function invoke<T>(target: object, method: string, options: object): Promise<T> {
  return (target as Record<string, (o: object) => Promise<T>>)[method]!(options);
}

/** Options of the Docker runtime. */
export interface DockerRuntimeOptions {
  endpoint: string;
  log?: Logger;
  /** Deadline of a non-streaming call (of the response, for streams), ms; default 30 s. */
  requestTimeoutMs?: number;
  /** The shim's pause image and sandbox network; defaults as the flags': registry.k8s.io/pause:3.9, "bridge". */
  shim?: Partial<DockerShimOptions>;
}

/** The Runtime port on the Docker Engine at `endpoint` (unix://path, tcp://host:port). */
export function createDockerRuntime(options: DockerRuntimeOptions): Runtime {
  const docker = new Docker(connectionOptions(options.endpoint));
  const log = options.log ?? silentLogger;
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const limits = (signal?: AbortSignal): CallLimits => ({ timeoutMs, signal });
  const short = (id: string) => id.slice(0, 12);
  const shim: DockerShimOptions = {
    podInfraImage: "registry.k8s.io/pause:3.9",
    podNetworkMode: "bridge",
    ...options.shim,
  };

  const create = async (body: ContainerCreateBody): Promise<string> => {
    // Restarts are the kubelet's decision, never Docker's.
    const request = { ...body, HostConfig: { ...body.HostConfig, RestartPolicy: { Name: "no" } } };
    const created = await call(
      `create container ${body.name}`,
      (abortSignal) => docker.createContainer({ ...request, abortSignal } as Docker.ContainerCreateOptions),
      limits(),
    );
    return created.id;
  };
  const startContainer = async (id: string): Promise<void> => {
    await call(
      `start container ${short(id)}`,
      (abortSignal) => tolerating([304], () => docker.getContainer(id).start({ abortSignal }))(),
      limits(),
    );
  };

  const summary = (c: Docker.ContainerInfo & { SizeRw?: number }): ContainerSummary => ({
    id: c.Id,
    name: (c.Names[0] ?? "").replace(/^\//, ""),
    podSandboxId: sandboxIdOf(c.HostConfig?.NetworkMode),
    labels: c.Labels ?? {},
    image: c.Image,
    imageId: c.ImageID,
    state: criState(c.State),
    createdAt: c.Created * 1000,
    ...(c.SizeRw !== undefined ? { sizeRwBytes: c.SizeRw } : {}),
  });

  const isSandbox = (labels: Record<string, string> | undefined) =>
    labels?.[LABEL.containerName] === POD_INFRA_CONTAINER_NAME;

  /** Lists the kubelet's containers, pause containers included (`k8s_…` named, with a pod uid label). */
  const listOwn = async (labels: string[], size = false) =>
    (
      await call(
        "list containers",
        (abortSignal) => docker.listContainers({ all: true, size, filters: { label: labels }, abortSignal }),
        limits(),
      )
    ).filter((c) => (c.Names[0] ?? "").startsWith("/k8s_"));

  const inspect = (id: string, what: string) =>
    call(`inspect ${what} ${short(id)}`, (abortSignal) => docker.getContainer(id).inspect({ abortSignal }), limits());

  /** The pause container behind a sandbox id; NotFound for anything else, as a CRI runtime answers. */
  const inspectSandbox = async (id: string) => {
    const c = await inspect(id, "pod sandbox");
    if (!isSandbox(c.Config.Labels))
      throw runtimeError("NotFound", `cannot inspect pod sandbox ${short(id)}: ${short(id)} is not a pod sandbox`);
    return c;
  };

  /** Docker answers a stopped/started container's stop/start with 304 and a gone one with 404. */
  const tolerating = (codes: number[], fn: () => Promise<unknown>) => async () => {
    try {
      await fn();
    } catch (error) {
      if (!codes.includes((error as DockerError).statusCode ?? 0)) throw error;
    }
  };

  const dockerVersion = async (signal?: AbortSignal) => {
    const v = await call(
      "read the Docker version",
      (abortSignal) => invoke<Docker.DockerVersion>(docker, "version", { abortSignal }),
      limits(signal),
    );
    return { runtimeName: "docker", runtimeVersion: v.Version, runtimeApiVersion: v.ApiVersion };
  };
  const dockerInfo = () =>
    call(
      "read the Docker Engine's info",
      (abortSignal) => invoke<Record<string, never>>(docker, "info", { abortSignal }),
      limits(),
    );

  // The Engine's /info once (a slow call: 6–30 ms in dockerd): the machine it describes is fixed for the daemon's life,
  // and its two readers (the cgroup driver at start, the node's capacity at the first pod) each asked it anew. An
  // answer is kept, a failure is not.
  let machine: Promise<MachineInfo> | undefined;

  // The Engine runs one disk usage count at a time and answers a second one "a disk usage operation is
  // already running": callers at once (image GC, the node's stats) share the count in flight.
  let counting: Promise<{ LayersSize?: number }> | undefined;
  const diskUsage = () =>
    (counting ??= call(
      "read the Docker Engine's disk usage",
      (abortSignal) => invoke<{ LayersSize?: number }>(docker, "df", { abortSignal }),
      limits(),
    ).finally(() => (counting = undefined)));

  const stop = async (id: string, graceSeconds: number, what: string) => {
    const t = Math.max(0, Math.round(graceSeconds));
    await call(
      `stop ${what} ${short(id)}`,
      (abortSignal) => tolerating([304, 404], () => docker.getContainer(id).stop({ t, abortSignal }))(),
      { timeoutMs: timeoutMs + t * 1000 },
    );
  };
  const remove = async (id: string, what: string) => {
    await call(
      `remove ${what} ${short(id)}`,
      async (abortSignal) => {
        try {
          await docker.getContainer(id).remove({ force: true, v: true, abortSignal });
        } catch (error) {
          const e = error as DockerError;
          if (e.statusCode !== 404 && !(e.statusCode === 409 && /in progress/.test(e.json?.message ?? e.message)))
            throw error;
        }
      },
      limits(),
    );
  };

  async function exec(
    id: string,
    cmd: string[],
    execOptions: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<ExecResult> {
    const action = `exec ${JSON.stringify(cmd)} in container ${short(id)}`;
    // A probe's timeout also bounds setting the exec up.
    const setup = { timeoutMs: Math.min(timeoutMs, execOptions.timeoutMs || timeoutMs), signal: execOptions.signal };
    const instance = await call(
      action,
      (abortSignal) =>
        docker
          .getContainer(id)
          .exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, abortSignal } as Docker.ExecCreateOptions),
      setup,
    );
    const socket = (await call(
      action,
      () => instance.start({ hijack: true, stdin: false }),
      setup,
    )) as unknown as AsyncIterable<Uint8Array> & { destroy(): void };
    let timedOut = false;
    const stop = () => socket.destroy();
    const timer = execOptions.timeoutMs
      ? setTimeout(() => ((timedOut = true), stop()), execOptions.timeoutMs)
      : undefined;
    execOptions.signal?.addEventListener("abort", stop, { once: true });
    const output: Uint8Array[][] = [[], [], []];
    try {
      for await (const frame of demuxFrames(socket)) output[frame.stream === 2 ? 2 : 1]!.push(frame.data);
    } catch (error) {
      if (!timedOut && !execOptions.signal?.aborted) throw mapError(error, action);
    } finally {
      clearTimeout(timer);
      execOptions.signal?.removeEventListener("abort", stop);
      stop();
    }
    if (timedOut) throw runtimeError("ExecTimeout", `cannot ${action}: no exit within ${execOptions.timeoutMs} ms`);
    if (execOptions.signal?.aborted) throw execOptions.signal.reason;
    const exitCode = await execExitCode(() => call(action, () => instance.inspect(), limits()));
    const text = (chunks: Uint8Array[]) => Buffer.concat(chunks).toString("utf8");
    return { exitCode, stdout: text(output[1]!), stderr: text(output[2]!) };
  }

  // Hijacked streams: the deadline covers setting one up, never the stream itself.
  const streaming = createDockerStreaming({
    async createExec(id, config) {
      const action = `exec ${JSON.stringify(config.cmd)} in container ${short(id)}`;
      const instance = await call(
        action,
        (abortSignal) =>
          docker.getContainer(id).exec({
            Cmd: config.cmd,
            AttachStdin: config.stdin,
            AttachStdout: config.stdout,
            AttachStderr: config.stderr,
            Tty: config.tty,
            abortSignal,
          } as Docker.ExecCreateOptions),
        limits(),
      );
      return {
        start: async ({ stdin, tty }) =>
          (await call(
            action,
            () => instance.start({ hijack: true, stdin, Tty: tty }),
            limits(),
          )) as unknown as HijackedStream,
        inspect: () => call(action, () => instance.inspect(), limits()),
        resize: async ({ width, height }) =>
          void (await call(`resize the TTY of ${action}`, () => instance.resize({ w: width, h: height }), limits())),
      };
    },
    async containerTty(id) {
      const info = await call(
        `inspect container ${short(id)}`,
        (abortSignal) => docker.getContainer(id).inspect({ abortSignal }),
        limits(),
      );
      return info.Config.Tty;
    },
    attach: async (id, { stdin, stdout, stderr }) =>
      (await call(
        `attach to container ${short(id)}`,
        () => docker.getContainer(id).attach({ stream: true, hijack: true, stdin, stdout, stderr }),
        limits(),
      )) as unknown as HijackedStream,
    resizeContainer: async (id, { width, height }) =>
      void (await call(
        `resize the TTY of container ${short(id)}`,
        (abortSignal) => invoke(docker.getContainer(id), "resize", { w: width, h: height, abortSignal }),
        limits(),
      )),
    mapError,
  });

  async function* logs(id: string, logOptions: LogOptions = {}): AsyncGenerator<Uint8Array> {
    const action = `read the logs of container ${short(id)}`;
    const container = docker.getContainer(id);
    const info = await call(action, (abortSignal) => container.inspect({ abortSignal }), limits(logOptions.signal));
    const params = {
      stdout: true,
      stderr: true,
      timestamps: logOptions.timestamps ?? false,
      ...(logOptions.tail !== undefined ? { tail: logOptions.tail } : {}),
      ...(logOptions.since ? { since: logOptions.since } : {}),
    };
    let source: (AsyncIterable<Uint8Array> | Uint8Array[]) & { destroy?(): void };
    try {
      source = logOptions.follow
        ? ((await call(action, (abortSignal) => container.logs({ ...params, follow: true, abortSignal }), {
            ...limits(logOptions.signal),
            stream: true,
          })) as unknown as AsyncIterable<Uint8Array>)
        : [
            (await call(
              action,
              (abortSignal) => container.logs({ ...params, follow: false, abortSignal }),
              limits(logOptions.signal),
            )) as unknown as Uint8Array,
          ];
    } catch (error) {
      if (logOptions.signal?.aborted) return;
      throw error;
    }
    const stop = () => source.destroy?.();
    logOptions.signal?.addEventListener("abort", stop, { once: true });
    try {
      if (info.Config.Tty) yield* source;
      else for await (const frame of demuxFrames(source)) yield frame.data;
    } catch (error) {
      if (!logOptions.signal?.aborted) throw mapError(error, action);
    } finally {
      logOptions.signal?.removeEventListener("abort", stop);
      stop();
    }
  }

  async function* events(signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const action = "watch Docker events";
    let stream: AsyncIterable<Uint8Array> & { destroy(): void };
    try {
      stream = (await call(
        action,
        (abortSignal) => docker.getEvents({ filters: { type: ["container"], event: LIFECYCLE_EVENTS }, abortSignal }),
        { ...limits(signal), stream: true },
      )) as unknown as typeof stream;
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    const stop = () => stream.destroy();
    signal.addEventListener("abort", stop, { once: true });
    try {
      yield* parseEvents(stream, (line) => log.debug(`ignoring an unparsable Docker event: ${line.slice(0, 200)}`));
    } catch (error) {
      if (!signal.aborted) throw mapError(error, action);
    } finally {
      signal.removeEventListener("abort", stop);
      stop();
    }
    if (!signal.aborted)
      throw runtimeError("RuntimeUnavailable", `cannot ${action}: the Docker Engine closed the event stream`);
  }

  async function imageStatus(ref: string): Promise<ImageStatus | undefined> {
    let image: Docker.ImageInspectInfo;
    try {
      image = await call(
        `inspect image ${ref}`,
        (abortSignal) => invoke<Docker.ImageInspectInfo>(docker.getImage(ref), "inspect", { abortSignal }),
        limits(),
      );
    } catch (error) {
      if (isRuntimeError(error, "NotFound")) return undefined;
      throw error;
    }
    return { id: image.Id, repoTags: image.RepoTags ?? [], sizeBytes: image.Size, ...imageUser(image.Config?.User) };
  }

  async function pullImage(ref: string, { auth, signal, onProgress }: PullOptions = {}): Promise<void> {
    const action = `pull image ${ref}`;
    let failure: string | undefined;
    try {
      const stream = (await call(
        action,
        (abortSignal) => docker.pull(ref, { ...(auth ? { authconfig: auth } : {}), abortSignal }),
        // Docker answers a pull with its first progress message, which a stalled registry may
        // never let it send: a caller that watches progress owns the deadline (no RuntimeUnavailable).
        { timeoutMs: onProgress ? Infinity : Math.max(timeoutMs, 120_000), signal, stream: true },
      )) as unknown as AsyncIterable<Uint8Array> & { destroy(): void };
      try {
        onProgress?.({ message: "pulling", status: "pulling", bytes: 0 });
        failure = await pullError(stream, onProgress);
      } finally {
        stream.destroy();
      }
    } catch (error) {
      // Cancelled: the caller's reason (e.g. the progress deadline's), not the stream's "aborted".
      if (signal?.aborted) throw signal.reason;
      if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
      failure = (error as Error).message.replace(/^cannot pull image \S+: /, "");
    }
    if (signal?.aborted) throw signal.reason;
    if (failure) throw runtimeError("ImagePullFailed", `cannot ${action}: ${failure}`);
  }

  /**
   * The dockershim's ensureSandboxImageExists: the shim's sandbox image (--network_container_image) is the
   * runtime's, as a CRI runtime's is, so the shim pulls it itself, with the node's credentials, when absent.
   */
  const ensureSandboxImage = async () => {
    if (await imageStatus(shim.podInfraImage)) return;
    log.info(`pulling the sandbox image ${shim.podInfraImage} (--network_container_image)`);
    await pullImage(shim.podInfraImage, { auth: credentialsFor(shim.podInfraImage, defaultDockerConfigPaths()) }).catch(
      (error: KubeletError) => {
        if (!isRuntimeError(error, "ImagePullFailed")) throw error;
        const why = error.message.replace(/^cannot pull image \S+: /, "");
        const message = `cannot pull the sandbox image ${shim.podInfraImage} (--network_container_image): ${why}`;
        throw runtimeError("ImagePullFailed", withOfflineHint(message), { cause: error });
      },
    );
  };

  return {
    version: (signal) => dockerVersion(signal),
    async status(signal) {
      // The dockershim's conditions: the daemon answering (its version) is RuntimeReady; the shim's networks
      // (none, host, a Docker network) need no network plugin, so NetworkReady holds with it. A daemon that does
      // not answer throws, as a CRI runtime's Status call does.
      await dockerVersion(signal);
      return {
        conditions: [
          { type: "RuntimeReady", status: true, reason: "", message: "" },
          { type: "NetworkReady", status: true, reason: "", message: "" },
        ],
        sandboxImage: shim.podInfraImage,
      };
    },
    machineInfo: () =>
      (machine ??= dockerInfo().then(
        (info) => ({
          os: info.OperatingSystem,
          kernelVersion: info.KernelVersion,
          cpus: info.NCPU,
          memoryBytes: info.MemTotal,
          hostname: info.Name,
          cgroupDriver: info.CgroupDriver,
        }),
        (error: unknown) => {
          machine = undefined;
          throw error;
        },
      )),
    async listPodSandboxes(filter = {}): Promise<PodSandboxSummary[]> {
      const labels = [
        filter.podUid ? `${LABEL.podUid}=${filter.podUid}` : LABEL.podUid,
        `${LABEL.containerName}=${POD_INFRA_CONTAINER_NAME}`,
      ];
      return (await listOwn(labels))
        .map((c) =>
          sandboxOf({
            id: c.Id,
            name: c.Names[0] ?? "",
            labels: c.Labels ?? {},
            running: c.State === "running",
            createdAt: c.Created * 1000,
          }),
        )
        .filter((s) => !filter.state || s.state === filter.state);
    },
    async podSandboxStatus(id): Promise<PodSandboxDetails> {
      const c = await inspectSandbox(id);
      return {
        ...sandboxOf({
          id: c.Id,
          name: c.Name,
          labels: c.Config.Labels ?? {},
          running: c.State.Running,
          createdAt: Date.parse(c.Created),
        }),
        ipAddress: ipOf(c.NetworkSettings),
      };
    },
    stopPodSandbox: (id) => stop(id, SANDBOX_STOP_GRACE_SECONDS, "pod sandbox"),
    removePodSandbox: (id) => remove(id, "pod sandbox"),
    async listContainers(listOptions = {}) {
      const label = listOptions.podUid ? `${LABEL.podUid}=${listOptions.podUid}` : LABEL.podUid;
      return (await listOwn([label], !!listOptions.size)).filter((c) => !isSandbox(c.Labels)).map(summary);
    },
    async inspectContainer(id): Promise<ContainerDetails> {
      const c = await inspect(id, "container");
      if (isSandbox(c.Config.Labels))
        throw runtimeError("NotFound", `cannot inspect container ${short(id)}: ${short(id)} is a pod sandbox`);
      const time = (t: string) => (!t || t.startsWith("0001-") ? undefined : t);
      return {
        id: c.Id,
        name: c.Name.replace(/^\//, ""),
        labels: c.Config.Labels ?? {},
        image: c.Config.Image,
        imageId: c.Image,
        state: criState(c.State.Status),
        createdAt: Date.parse(c.Created),
        running: c.State.Running,
        exitCode: c.State.ExitCode,
        startedAt: time(c.State.StartedAt),
        finishedAt: time(c.State.FinishedAt),
        oomKilled: c.State.OOMKilled,
        error: c.State.Error || undefined,
        pid: c.State.Pid,
        logPath: c.LogPath || undefined,
        ipAddress: ipOf(c.NetworkSettings),
        resources: {
          cpu_period: c.HostConfig.CpuPeriod ?? 0,
          cpu_quota: c.HostConfig.CpuQuota ?? 0,
          cpu_shares: c.HostConfig.CpuShares ?? 0,
          memory_limit_in_bytes: c.HostConfig.Memory ?? 0,
        },
      };
    },
    async runPodSandbox(config, runtimeHandler) {
      // Docker runs every container on its own default runtime: only runc can be honoured (as the dockershim).
      if (runtimeHandler && runtimeHandler !== "runc")
        throw new KubeletError(
          "RuntimeError",
          `RuntimeHandler "${runtimeHandler}" not supported: the Docker shim runs pods on runc only; use the CRI (--container_runtime remote) for other runtime classes`,
        );
      // The sandbox image is looked for only when the create says it is missing (the docker CLI's run: create, and on
      // "No such image" pull, then create again), not before every sandbox: one image inspect fewer per pod.
      const body = sandboxBody(config, shim);
      let id: string;
      try {
        id = await create(body);
      } catch (error) {
        if (!isRuntimeError(error, "NotFound")) throw error;
        await ensureSandboxImage();
        id = await create(body);
      }
      await startContainer(id);
      return id;
    },
    createContainer: async (sandboxId, config, sandboxConfig) =>
      create(containerBody(sandboxId, config, sandboxConfig, await localhostSeccompJson(config), shim)),
    startContainer,
    stopContainer: (id, graceSeconds) => stop(id, graceSeconds, "container"),
    // Docker's update leaves a field at 0 as it is; the swap limit follows memory, as at creation.
    updateContainerResources: (id, r) =>
      call(
        `update container ${short(id)}`,
        (abortSignal) =>
          invoke(docker.getContainer(id), "update", {
            CpuShares: r.cpu_shares,
            CpuPeriod: r.cpu_period,
            CpuQuota: r.cpu_quota,
            ...(r.memory_limit_in_bytes
              ? { Memory: r.memory_limit_in_bytes, MemorySwap: r.memory_limit_in_bytes }
              : {}),
            abortSignal,
          }),
        limits(),
      ).then(() => undefined),
    removeContainer: (id) => remove(id, "container"),
    imageStatus,
    async imageFsInfo() {
      // The dockershim's answer: the data root is the image filesystem; the images' bytes are what
      // `docker system df` counts (shared layers once). The Engine keeps no inode count of its own.
      const [info, df] = await Promise.all([dockerInfo(), diskUsage()]);
      return { mountpoint: info.DockerRootDir, usedBytes: df.LayersSize ?? 0 };
    },
    reportsPullProgress: true,
    pullImage,
    async listImages(): Promise<ImageSummary[]> {
      const [images, containers] = await call(
        "list images",
        (abortSignal) =>
          Promise.all([
            invoke<Docker.ImageInfo[]>(docker, "listImages", { abortSignal }),
            docker.listContainers({ all: true, abortSignal }),
          ]),
        limits(),
      );
      const used = new Set(containers.map((c) => c.ImageID));
      return images.map((i) => ({
        id: i.Id,
        tags: (i.RepoTags ?? []).filter((t) => t !== "<none>:<none>"),
        sizeBytes: i.Size,
        createdAt: i.Created * 1000,
        inUse: used.has(i.Id),
      }));
    },
    async removeImage(id) {
      await call(
        `remove image ${short(id.replace(/^sha256:/, ""))}`,
        async (abortSignal) => {
          // Never forced (force also deletes images of stopped containers): an image tagged in several repositories is
          // removed tag by tag, the last untag deleting it; a container using it answers 409 (Conflict).
          let tags: string[];
          try {
            tags =
              (await invoke<Docker.ImageInspectInfo>(docker.getImage(id), "inspect", { abortSignal })).RepoTags ?? [];
          } catch (error) {
            if ((error as DockerError).statusCode === 404) return;
            throw error;
          }
          // Untagging one of several tags succeeds even under a container: check for users first.
          const imageId = id.startsWith("sha256:") ? id : `sha256:${id}`;
          const users = (await docker.listContainers({ all: true, abortSignal })).filter((c) => c.ImageID === imageId);
          if (users.length)
            throw runtimeError(
              "Conflict",
              `cannot remove image ${short(id.replace(/^sha256:/, ""))}: container ${short(users[0]!.Id)} uses it`,
            );
          for (const ref of tags.length ? tags : [id])
            await tolerating([404], () => invoke(docker.getImage(ref), "remove", { abortSignal }))();
        },
        limits(),
      );
    },
    exec,
    execStream: streaming.execStream,
    attach: streaming.attach,
    logs,
    async stats(id): Promise<ContainerStats> {
      const s = (await call(
        `read the stats of container ${short(id)}`,
        // one-shot: the sample at hand; without it the Engine waits a second for a second one (precpu_stats), unused here.
        (abortSignal) => invoke(docker.getContainer(id), "stats", { stream: false, "one-shot": true, abortSignal }),
        limits(),
      )) as unknown as DockerStats;
      const cache = s.memory_stats?.stats?.total_inactive_file ?? s.memory_stats?.stats?.inactive_file ?? 0;
      const usage = s.memory_stats?.usage ?? 0;
      const networks = Object.values(s.networks ?? {});
      return {
        time: s.read,
        cpuUsageNanoseconds: s.cpu_stats?.cpu_usage?.total_usage ?? 0,
        systemCpuNanoseconds: s.cpu_stats?.system_cpu_usage ?? 0,
        memoryUsageBytes: usage,
        memoryWorkingSetBytes: Math.max(0, usage - cache),
        memoryLimitBytes: s.memory_stats?.limit ?? 0,
        networkRxBytes: networks.reduce((n, x) => n + (x.rx_bytes ?? 0), 0),
        networkTxBytes: networks.reduce((n, x) => n + (x.tx_bytes ?? 0), 0),
        pids: s.pids_stats?.current ?? 0,
      };
    },
    events,
  };
}

/** The pause container a container's network mode joins (`container:<id>`, as the shim creates every one). */
function sandboxIdOf(networkMode: string | undefined): string {
  return networkMode?.startsWith("container:") ? networkMode.slice("container:".length) : "";
}

/** A container's IP in its network: "" for none, host and a container's network. */
function ipOf(settings: unknown): string {
  const networks = settings as { IPAddress?: string; Networks?: Record<string, { IPAddress?: string }> } | undefined;
  return networks?.IPAddress || Object.values(networks?.Networks ?? {})[0]?.IPAddress || "";
}

interface DockerStats {
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
  pids_stats?: { current?: number };
}
