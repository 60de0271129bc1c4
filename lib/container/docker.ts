// The only dockerode import: the Runtime port on a Docker Engine (unix socket or tcp).
import Docker from "dockerode";
import { KubeletError } from "../types.ts";
import { silentLogger, type Logger } from "../log.ts";
import {
  LABEL,
  type ContainerCreateBody,
  type ContainerDetails,
  type ContainerStats,
  type ContainerSummary,
  type ExecResult,
  type LogOptions,
  type RegistryAuth,
  type Runtime,
  type RuntimeEvent,
  type RuntimeInfo,
} from "./runtime.ts";

/** --docker_endpoint, else $DOCKER_HOST, else the default socket. */
export function resolveDockerEndpoint(flag: string, env: Record<string, string | undefined>): string {
  return flag || env.DOCKER_HOST || "unix:///var/run/docker.sock";
}

function connectionOptions(endpoint: string): Docker.DockerOptions {
  if (endpoint.startsWith("unix://")) return { socketPath: endpoint.slice("unix://".length) };
  if (endpoint.startsWith("/")) return { socketPath: endpoint };
  const url = new URL(endpoint.replace(/^tcp:\/\//, "http://"));
  return { host: url.hostname, port: Number(url.port || (url.protocol === "https:" ? 2376 : 2375)), protocol: url.protocol === "https:" ? "https" : "http" };
}

type DockerError = Error & { statusCode?: number; code?: string; json?: { message?: string } };

/** Maps dockerode/HTTP errors to the port's codes. */
function mapError(error: unknown, action: string): KubeletError {
  const e = error as DockerError;
  const message = e.json?.message ?? e.message;
  if (e.statusCode === 404) return new KubeletError("NotFound", `${action}: ${message}`, { cause: error });
  if (e.statusCode === 409) return new KubeletError("Conflict", `${action}: ${message}`, { cause: error });
  if (!e.statusCode && (e.code && /^(ECONNREFUSED|ENOENT|EPIPE|ECONNRESET|EACCES|ETIMEDOUT|EHOSTUNREACH)$/.test(e.code) || /socket|connect|ECONNREFUSED|ENOENT/.test(message))) {
    return new KubeletError("RuntimeUnavailable", `${action}: Docker Engine unreachable: ${message}`, { cause: error });
  }
  return new KubeletError("RuntimeError", `${action}: ${message}`, { cause: error });
}

async function call<T>(action: string, fn: () => PromiseLike<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw mapError(error, action);
  }
}

export function createDockerRuntime(options: { endpoint: string; log?: Logger }): Runtime {
  const docker = new Docker(connectionOptions(options.endpoint));
  const log = options.log ?? silentLogger;

  const summary = (c: Docker.ContainerInfo): ContainerSummary => ({
    id: c.Id,
    name: (c.Names[0] ?? "").replace(/^\//, ""),
    labels: c.Labels ?? {},
    image: c.Image,
    imageId: c.ImageID,
    state: c.State as ContainerSummary["state"],
    createdAt: c.Created * 1000,
  });

  const runtime: Runtime = {
    async ping(signal) {
      await call("ping the Docker Engine", () => docker.ping({ abortSignal: signal } as never));
    },
    async info(): Promise<RuntimeInfo> {
      const [version, info] = await call("read Docker version", () => Promise.all([docker.version(), docker.info()]));
      return {
        version: version.Version,
        apiVersion: version.ApiVersion,
        os: info.OperatingSystem,
        kernelVersion: info.KernelVersion,
        cpus: info.NCPU,
        memoryBytes: info.MemTotal,
        hostname: info.Name,
      };
    },
    async listContainers(options = {}) {
      const label = options.podUid ? `${LABEL.podUid}=${options.podUid}` : LABEL.podUid;
      const list = await call("list containers", () => docker.listContainers({ all: true, filters: { label: [label] } }));
      return list.map(summary).filter((c) => c.name.startsWith("k8s_"));
    },
    async inspectContainer(id): Promise<ContainerDetails> {
      const c = await call(`inspect container ${id.slice(0, 12)}`, () => docker.getContainer(id).inspect());
      const never = (t: string) => (!t || t.startsWith("0001-") ? undefined : t);
      return {
        id: c.Id,
        name: c.Name.replace(/^\//, ""),
        labels: c.Config.Labels ?? {},
        image: c.Config.Image,
        imageId: c.Image,
        state: c.State.Status as ContainerDetails["state"],
        createdAt: Date.parse(c.Created),
        running: c.State.Running,
        exitCode: c.State.ExitCode,
        startedAt: never(c.State.StartedAt),
        finishedAt: never(c.State.FinishedAt),
        oomKilled: c.State.OOMKilled,
        error: c.State.Error || undefined,
        pid: c.State.Pid,
        logPath: c.LogPath || undefined,
        ipAddress: (c.NetworkSettings as { IPAddress?: string } | undefined)?.IPAddress || Object.values(c.NetworkSettings?.Networks ?? {})[0]?.IPAddress || "",
      };
    },
    async createContainer(body: ContainerCreateBody) {
      const created = await call(`create container ${body.name}`, () =>
        docker.createContainer({ ...body, HostConfig: { ...body.HostConfig, RestartPolicy: { Name: "no" } } } as Docker.ContainerCreateOptions));
      return created.id;
    },
    async startContainer(id) {
      await call(`start container ${id.slice(0, 12)}`, async () => {
        try {
          await docker.getContainer(id).start();
        } catch (error) {
          if ((error as DockerError).statusCode !== 304) throw error;
        }
      });
    },
    async stopContainer(id, graceSeconds) {
      await call(`stop container ${id.slice(0, 12)}`, async () => {
        try {
          await docker.getContainer(id).stop({ t: Math.max(0, Math.round(graceSeconds)) });
        } catch (error) {
          const status = (error as DockerError).statusCode;
          if (status !== 304 && status !== 404) throw error;
        }
      });
    },
    async removeContainer(id) {
      await call(`remove container ${id.slice(0, 12)}`, async () => {
        try {
          await docker.getContainer(id).remove({ force: true, v: true });
        } catch (error) {
          const e = error as DockerError;
          if (e.statusCode !== 404 && !(e.statusCode === 409 && /already in progress/.test(e.json?.message ?? e.message))) throw error;
        }
      });
    },
    async imageId(ref) {
      try {
        return (await docker.getImage(ref).inspect()).Id;
      } catch (error) {
        if ((error as DockerError).statusCode === 404) return undefined;
        throw mapError(error, `inspect image ${ref}`);
      }
    },
    async pullImage(ref: string, auth?: RegistryAuth, signal?: AbortSignal) {
      let stream: NodeJS.ReadableStream;
      try {
        stream = await call(`pull image ${ref}`, () => docker.pull(ref, { ...(auth ? { authconfig: auth } : {}), abortSignal: signal }) as Promise<NodeJS.ReadableStream>);
      } catch (error) {
        if ((error as KubeletError).code === "RuntimeUnavailable") throw error;
        throw new KubeletError("ImagePullFailed", (error as Error).message, { cause: error });
      }
      await new Promise<void>((resolve, reject) => {
        docker.modem.followProgress(stream, (error: Error | null, output: Array<{ error?: string; errorDetail?: { message?: string } }>) => {
          const failed = error?.message ?? output?.find((o) => o.error)?.error;
          if (failed) reject(new KubeletError("ImagePullFailed", `pull image ${ref}: ${failed}`));
          else resolve();
        });
      });
    },
    async exec(id, cmd, execOptions = {}): Promise<ExecResult> {
      const container = docker.getContainer(id);
      const exec = await call(`exec in container ${id.slice(0, 12)}`, () => container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true }));
      const stream = await call(`exec in container ${id.slice(0, 12)}`, () => exec.start({ hijack: true, stdin: false }));
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const collected = new Promise<void>((resolve, reject) => {
        docker.modem.demuxStream(stream, { write: (c: Buffer) => stdout.push(c) } as never, { write: (c: Buffer) => stderr.push(c) } as never);
        stream.on("end", resolve);
        stream.on("close", resolve);
        stream.on("error", reject);
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const limits: Array<Promise<never>> = [];
      if (execOptions.timeoutMs) {
        limits.push(new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new KubeletError("ExecTimeout", `command ${JSON.stringify(cmd)} timed out after ${execOptions.timeoutMs} ms`)), execOptions.timeoutMs);
        }));
      }
      if (execOptions.signal) {
        limits.push(new Promise<never>((_, reject) => execOptions.signal!.addEventListener("abort", () => reject(execOptions.signal!.reason), { once: true })));
      }
      try {
        await Promise.race([collected, ...limits]);
      } finally {
        clearTimeout(timer);
        (stream as { destroy?: () => void }).destroy?.();
      }
      const inspected = await call("inspect exec", () => exec.inspect());
      return { exitCode: inspected.ExitCode ?? -1, stdout: Buffer.concat(stdout).toString("utf8"), stderr: Buffer.concat(stderr).toString("utf8") };
    },
    logs(id, logOptions: LogOptions = {}) {
      return logStream(docker, id, logOptions);
    },
    async stats(id): Promise<ContainerStats> {
      const s = (await call(`stats of container ${id.slice(0, 12)}`, () => docker.getContainer(id).stats({ stream: false }))) as unknown as DockerStats;
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
    events(signal) {
      return eventStream(docker, signal, log);
    },
  };
  return runtime;
}

interface DockerStats {
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
  pids_stats?: { current?: number };
}

/** Container output, demultiplexed from Docker's 8-byte frame headers unless the container has a TTY. */
async function* logStream(docker: Docker, id: string, options: LogOptions): AsyncGenerator<Uint8Array> {
  const container = docker.getContainer(id);
  const info = await call(`inspect container ${id.slice(0, 12)}`, () => container.inspect());
  const params = { stdout: true, stderr: true, timestamps: options.timestamps ?? false, ...(options.tail !== undefined ? { tail: options.tail } : {}), ...(options.since ? { since: options.since } : {}) };
  const source = options.follow
    ? ((await call("read logs", () => container.logs({ ...params, follow: true, abortSignal: options.signal } as never))) as unknown as AsyncIterable<Buffer> & { destroy?: () => void })
    : [(await call("read logs", () => container.logs({ ...params, follow: false } as never))) as unknown as Buffer];
  const onAbort = () => (source as { destroy?: () => void }).destroy?.();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    if (info.Config.Tty) {
      for await (const chunk of source) yield chunk;
      return;
    }
    let pending = Buffer.alloc(0);
    for await (const chunk of source) {
      pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
      while (pending.length >= 8) {
        const size = pending.readUInt32BE(4);
        if (pending.length < 8 + size) break;
        yield pending.subarray(8, 8 + size);
        pending = pending.subarray(8 + size);
      }
    }
  } catch (error) {
    if (!options.signal?.aborted) throw mapError(error, "read logs");
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    onAbort();
  }
}

/** Docker's /events stream, container events only, until the signal aborts. */
async function* eventStream(docker: Docker, signal: AbortSignal, log: Logger): AsyncGenerator<RuntimeEvent> {
  const stream = (await call("watch Docker events", () => docker.getEvents({ filters: { type: ["container"] }, abortSignal: signal } as never))) as unknown as AsyncIterable<Buffer> & { destroy?: () => void };
  const onAbort = () => stream.destroy?.();
  signal.addEventListener("abort", onAbort, { once: true });
  let pending = "";
  try {
    for await (const chunk of stream) {
      pending += chunk.toString("utf8");
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (!line) continue;
        try {
          const e = JSON.parse(line) as { Action: string; Actor?: { ID: string; Attributes?: Record<string, string> }; id?: string; timeNano?: number; time?: number };
          yield { action: e.Action, containerId: e.Actor?.ID ?? e.id ?? "", labels: e.Actor?.Attributes ?? {}, time: e.timeNano ? Math.floor(e.timeNano / 1e6) : (e.time ?? 0) * 1000 };
        } catch {
          log.debug(`ignoring an unparsable Docker event: ${line.slice(0, 200)}`);
        }
      }
    }
  } catch (error) {
    if (!signal.aborted) throw mapError(error, "watch Docker events");
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  if (!signal.aborted) throw new KubeletError("RuntimeUnavailable", "the Docker events stream ended");
}
