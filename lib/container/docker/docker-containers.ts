// Pod sandboxes (pause containers) and containers on the Docker Engine (the dockershim's docker_sandbox.go,
// docker_container.go and docker_stats.go): create, start, stop, remove, list, inspect, update, one stats sample.
import { KubeletError } from "../../api/types.ts";
import type { ContainerConfig, PodSandboxConfig } from "../cri-types.ts";
import {
  isRuntimeError,
  LABEL,
  POD_INFRA_CONTAINER_NAME,
  runtimeError,
  type ContainerDetails,
  type ContainerStats,
  type ContainerSummary,
  type PodSandboxDetails,
  type PodSandboxSummary,
  type Runtime,
} from "../runtime.ts";
import { call, short, tolerating, type DockerError } from "./docker-calls.ts";
import type { DockerEngine, EngineContainerItem } from "./docker-engine.ts";
import { sandboxOf } from "../dockershim-naming.ts";
import {
  containerBody,
  SANDBOX_STOP_GRACE_SECONDS,
  sandboxBody,
  type ContainerCreateBody,
  type DockerShimOptions,
} from "./docker-shim.ts";
import { criState } from "./docker-streams.ts";
import { writeUnified } from "./docker-unified.ts";

/** The Engine calls sandboxes and containers make. */
export type ContainerEngine = Pick<
  DockerEngine,
  | "createContainer"
  | "startContainer"
  | "stopContainer"
  | "removeContainer"
  | "inspectContainer"
  | "listContainers"
  | "updateContainer"
  | "containerStats"
>;

/** The sandbox and container calls of the Runtime port. */
export type DockerContainers = Pick<
  Runtime,
  | "runPodSandbox"
  | "stopPodSandbox"
  | "removePodSandbox"
  | "podSandboxStatus"
  | "listPodSandboxes"
  | "listContainers"
  | "inspectContainer"
  | "createContainer"
  | "startContainer"
  | "stopContainer"
  | "updateContainerResources"
  | "removeContainer"
  | "stats"
>;

/** What sandboxes and containers are made with. */
export interface DockerContainersDeps {
  engine: ContainerEngine;
  /** Pulls the shim's sandbox image when absent: called only when a sandbox's create answers it is missing. */
  ensureSandboxImage(): Promise<void>;
  /** The JSON of a container's Localhost seccomp profile (Docker takes the profile, not its path). */
  seccompJson(config: ContainerConfig): Promise<string | undefined>;
}

/** Sandboxes and containers over the Engine. */
export function createDockerContainers(
  options: { timeoutMs: number; shim: DockerShimOptions },
  deps: DockerContainersDeps,
): DockerContainers {
  const { engine } = deps;
  const { timeoutMs, shim } = options;
  const limits = { timeoutMs };

  const create = async (body: ContainerCreateBody): Promise<string> => {
    // Restarts are the kubelet's decision, never Docker's.
    const request = { ...body, HostConfig: { ...body.HostConfig, RestartPolicy: { Name: "no" as const } } };
    const created = await call(`create container ${body.name}`, (s) => engine.createContainer(request, s), limits);
    return created.id;
  };
  /** Containers created with a unified map (cgroup v2 files), applied once they start: the Engine API has none. */
  const unifiedOf = new Map<string, Record<string, string>>();
  const startContainer = async (id: string): Promise<void> => {
    await call(`start container ${short(id)}`, (s) => tolerating([304], () => engine.startContainer(id, s)), limits);
    const unified = unifiedOf.get(id);
    if (!unified) return;
    unifiedOf.delete(id);
    const started = await call(`inspect container ${short(id)}`, (s) => engine.inspectContainer(id, s), limits);
    if (started.State.Pid > 0) await writeUnified(started.State.Pid, unified, `container ${short(id)}`);
  };
  const stop = async (id: string, graceSeconds: number, what: string) => {
    const t = Math.max(0, Math.round(graceSeconds));
    await call(`stop ${what} ${short(id)}`, (s) => tolerating([304, 404], () => engine.stopContainer(id, t, s)), {
      timeoutMs: timeoutMs + t * 1000,
    });
  };
  const remove = async (id: string, what: string) => {
    await call(
      `remove ${what} ${short(id)}`,
      async (signal) => {
        try {
          await engine.removeContainer(id, { force: true, v: true }, signal);
        } catch (error) {
          const e = error as DockerError;
          if (e.statusCode !== 404 && !(e.statusCode === 409 && /in progress/.test(e.json?.message ?? e.message)))
            throw error;
        }
      },
      limits,
    );
  };

  /** Lists the kubelet's containers, pause containers included (`k8s_…` named, with a pod uid label). */
  const listOwn = async (labels: string[], size = false) =>
    (
      await call(
        "list containers",
        (s) => engine.listContainers({ all: true, size, filters: { label: labels } }, s),
        limits,
      )
    ).filter((c) => (c.Names[0] ?? "").startsWith("/k8s_"));

  const inspect = (id: string, what: string) =>
    call(`inspect ${what} ${short(id)}`, (s) => engine.inspectContainer(id, s), limits);

  return {
    async runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string) {
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
        await deps.ensureSandboxImage();
        id = await create(body);
      }
      await startContainer(id);
      return id;
    },
    stopPodSandbox: (id) => stop(id, SANDBOX_STOP_GRACE_SECONDS, "pod sandbox"),
    removePodSandbox: (id) => remove(id, "pod sandbox"),
    async podSandboxStatus(id): Promise<PodSandboxDetails> {
      // The pause container behind a sandbox id; NotFound for anything else, as a CRI runtime answers.
      const c = await inspect(id, "pod sandbox");
      if (!isSandbox(c.Config.Labels))
        throw runtimeError("NotFound", `cannot inspect pod sandbox ${short(id)}: ${short(id)} is not a pod sandbox`);
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
    createContainer: async (sandboxId, config, sandboxConfig) => {
      const id = await create(containerBody(sandboxId, config, sandboxConfig, await deps.seccompJson(config), shim));
      const unified = config.linux?.resources?.unified;
      if (unified && Object.keys(unified).length) unifiedOf.set(id, unified);
      return id;
    },
    startContainer,
    stopContainer: (id, graceSeconds) => stop(id, graceSeconds, "container"),
    // Docker's update leaves a field at 0 as it is; the swap limit follows memory, as at creation.
    updateContainerResources: async (id, r) => {
      const body = {
        CpuShares: r.cpu_shares,
        CpuPeriod: r.cpu_period,
        CpuQuota: r.cpu_quota,
        ...(r.memory_limit_in_bytes ? { Memory: r.memory_limit_in_bytes, MemorySwap: r.memory_limit_in_bytes } : {}),
        ...(r.cpuset_cpus ? { CpusetCpus: r.cpuset_cpus } : {}),
        ...(r.cpuset_mems ? { CpusetMems: r.cpuset_mems } : {}),
      };
      await call(`update container ${short(id)}`, (s) => engine.updateContainer(id, body, s), limits);
    },
    removeContainer: (id) => {
      unifiedOf.delete(id);
      return remove(id, "container");
    },
    async stats(id): Promise<ContainerStats> {
      const s = await call(`read the stats of container ${short(id)}`, (sig) => engine.containerStats(id, sig), limits);
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
  };
}

const isSandbox = (labels: Record<string, string> | undefined) =>
  labels?.[LABEL.containerName] === POD_INFRA_CONTAINER_NAME;

function summary(c: EngineContainerItem): ContainerSummary {
  return {
    id: c.Id,
    name: (c.Names[0] ?? "").replace(/^\//, ""),
    podSandboxId: sandboxIdOf(c.HostConfig?.NetworkMode),
    labels: c.Labels ?? {},
    image: c.Image,
    imageId: c.ImageID,
    state: criState(c.State),
    createdAt: c.Created * 1000,
    ...(c.SizeRw !== undefined ? { sizeRwBytes: c.SizeRw } : {}),
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
