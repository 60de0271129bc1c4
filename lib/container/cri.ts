// The Runtime port on a CRI runtime (containerd, CRI-O) through runtime.v1: the pod infra
// container the sync asks for becomes a pod sandbox, app and init containers are created in it,
// logs are the CRI log files read by the kubelet, and events come from relisting (pleg.ts).
import { hostname as osHostname, cpus, release, totalmem, type } from "node:os";
import { join } from "node:path";
import { KubeletError } from "../api/types.ts";
import type { Clock } from "../clock.ts";
import { readCriLog } from "./cri-logs.ts";
import type {
  ContainerConfig,
  CriClient,
  CriContainer,
  CriContainerState,
  NamespaceMode,
  PodSandbox,
  PodSandboxConfig,
  CriImage,
} from "./cri-types.ts";
import { relistEvents, type RelistEntry } from "./pleg.ts";
import {
  LABEL,
  POD_INFRA_CONTAINER_NAME,
  type ContainerCreateBody,
  type ContainerDetails,
  type ContainerState,
  type ContainerSummary,
  type Runtime,
  type RuntimeInfo,
} from "./runtime.ts";

export interface CriRuntimeOptions {
  /** --pod_logs_dir: `<dir>/<namespace>_<pod>_<uid>/<container>/<attempt>.log`, as the Go kubelet lays them out. */
  podLogsDir: string;
  /** The generic PLEG's relist period (the Go kubelet's: 1 s). */
  relistPeriodMs?: number;
  clock: Clock;
}

const CONTAINER_STATES: Record<CriContainerState, ContainerState> = {
  CONTAINER_CREATED: "created",
  CONTAINER_RUNNING: "running",
  CONTAINER_EXITED: "exited",
  CONTAINER_UNKNOWN: "dead",
};

/** Sandbox label keeping the pause body's network mode, so a restarted kubelet rebuilds the same config. */
const SANDBOX_NETWORK = "io.kubernetes.sandbox.network-mode";

const ns = (time: number) => (time > 0 ? new Date(time / 1e6).toISOString() : undefined);

/** Whether labels mark something the kubelet made (the same test Docker mode applies). */
const ours = (labels: Record<string, string>) => !!labels[LABEL.podUid] && !!labels[LABEL.containerName];

/** The dockershim name, so every layer above sees the same `k8s_…` names on either runtime. */
function shimName(labels: Record<string, string>, container: string, attempt: number): string {
  return `k8s_${container}_${labels[LABEL.podName]}_${labels[LABEL.podNamespace]}_${labels[LABEL.podUid]}_${attempt}`;
}

function sandboxSummary(s: PodSandbox): ContainerSummary {
  return {
    id: s.id,
    name: shimName(s.labels, POD_INFRA_CONTAINER_NAME, s.metadata.attempt),
    labels: s.labels,
    image: "",
    imageId: "",
    state: s.state === "SANDBOX_READY" ? "running" : "exited",
    createdAt: s.created_at / 1e6,
  };
}

function containerSummary(c: CriContainer): ContainerSummary {
  return {
    id: c.id,
    name: shimName(c.labels, c.metadata.name, c.metadata.attempt),
    labels: c.labels,
    image: c.image?.image ?? "",
    imageId: c.image_ref,
    state: CONTAINER_STATES[c.state],
    createdAt: c.created_at / 1e6,
  };
}

const namespaceMode = (mode: string | undefined, pod: NamespaceMode): NamespaceMode => (mode === "host" ? "NODE" : pod);

/** The sandbox config of a pod, from the pause body the sync built (or from a listed sandbox's labels). */
export function sandboxConfig(
  labels: Record<string, string>,
  attempt: number,
  podLogsDir: string,
  host: {
    network?: string;
    ipc?: string;
    pid?: string;
    hostname?: string;
    ports?: ContainerCreateBody["HostConfig"]["PortBindings"];
  },
): PodSandboxConfig {
  const name = labels[LABEL.podName]!;
  const namespace = labels[LABEL.podNamespace]!;
  const uid = labels[LABEL.podUid]!;
  const network = namespaceMode(host.network, "POD");
  return {
    metadata: { name, namespace, uid, attempt },
    // Host-network pods must leave it empty: the runtime cannot set a hostname without a private UTS namespace.
    hostname: network === "NODE" ? "" : (host.hostname ?? name),
    log_directory: join(podLogsDir, `${namespace}_${name}_${uid}`),
    port_mappings: Object.entries(host.ports ?? {}).flatMap(([key, bindings]) => {
      const [port, protocol] = key.split("/");
      return bindings.map((b) => ({
        protocol: (protocol ?? "tcp").toUpperCase() as "TCP",
        container_port: Number(port),
        host_port: Number(b.HostPort),
        host_ip: b.HostIp ?? "",
      }));
    }),
    labels,
    linux: {
      security_context: {
        namespace_options: {
          network,
          ipc: namespaceMode(host.ipc, "POD"),
          pid: namespaceMode(host.pid, "CONTAINER"),
        },
      },
    },
  };
}

/** `uid`, `uid:gid` or a user name, as Docker's `User` holds them. */
function user(value: string | undefined): NonNullable<ContainerConfig["linux"]>["security_context"] {
  if (!value) return {};
  const [u, g] = value.split(":");
  if (!/^\d+$/.test(u!)) return { run_as_username: u };
  return { run_as_user: { value: Number(u) }, ...(g && /^\d+$/.test(g) ? { run_as_group: { value: Number(g) } } : {}) };
}

/** An app or init container body → CRI ContainerConfig (log path relative to the sandbox's log directory). */
export function containerConfig(body: ContainerCreateBody, sandbox: PodSandboxConfig): ContainerConfig {
  const name = body.Labels[LABEL.containerName]!;
  const attempt = Number(body.Labels[LABEL.restartCount] ?? 0);
  const h = body.HostConfig;
  const networkMode = sandbox.linux?.security_context?.namespace_options?.network ?? "POD";
  const split = (e: string) => {
    const eq = e.indexOf("=");
    return eq < 0 ? { key: e, value: "" } : { key: e.slice(0, eq), value: e.slice(eq + 1) };
  };
  return {
    metadata: { name, attempt },
    image: { image: body.Image },
    ...(body.Entrypoint ? { command: body.Entrypoint } : {}),
    ...(body.Cmd ? { args: body.Cmd } : {}),
    ...(body.WorkingDir ? { working_dir: body.WorkingDir } : {}),
    envs: (body.Env ?? []).map(split),
    mounts: (h.Binds ?? []).map((bind) => {
      const [host, path, mode] = bind.split(":");
      return { host_path: host!, container_path: path!, readonly: mode === "ro" };
    }),
    labels: body.Labels,
    log_path: `${name}/${attempt}.log`,
    tty: body.Tty ?? false,
    stdin: body.OpenStdin ?? false,
    stdin_once: body.StdinOnce ?? false,
    linux: {
      resources: {
        cpu_period: h.CpuPeriod ?? 0,
        cpu_quota: h.CpuQuota ?? 0,
        cpu_shares: h.CpuShares ?? 0,
        memory_limit_in_bytes: h.Memory ?? 0,
        oom_score_adj: h.OomScoreAdj ?? 0,
      },
      security_context: {
        privileged: h.Privileged ?? false,
        readonly_rootfs: h.ReadonlyRootfs ?? false,
        capabilities: { add_capabilities: h.CapAdd ?? [], drop_capabilities: h.CapDrop ?? [] },
        supplemental_groups: (h.GroupAdd ?? []).map(Number).filter((n) => Number.isInteger(n)),
        namespace_options: { network: networkMode, ipc: "POD", pid: namespaceMode(h.PidMode, "CONTAINER") },
        ...user(body.User),
      },
    },
  };
}

/** Ids of the images containers use: a container's image_ref is an image id or one of its repo digests. */
function imagesInUse(images: CriImage[], containers: Array<{ image_ref: string }>): Set<string> {
  const refs = new Set(containers.map((c) => c.image_ref));
  return new Set(images.filter((i) => refs.has(i.id) || i.repo_digests.some((d) => refs.has(d))).map((i) => i.id));
}

/** The Runtime port over a runtime.v1 client. */
export function createCriRuntime(client: CriClient, options: CriRuntimeOptions): Runtime {
  const { podLogsDir, clock } = options;
  // Sandbox configs by sandbox id (CreateContainer takes it again); rebuilt from labels after a restart.
  const sandboxes = new Map<string, PodSandboxConfig>();
  // Which ids are sandboxes: the port has one id space, the CRI two.
  const sandboxIds = new Set<string>();
  // The runtime's name for container ids (containerd://…), from its Version answer; the kubelet pings at start-up.
  let runtimeName: string | undefined;
  const version = async () => {
    const v = await client.version();
    runtimeName = v.runtime_name;
    return v;
  };
  const named = <T extends ContainerSummary>(c: T): T => (runtimeName ? { ...c, runtimeName } : c);

  const conflict = (error: unknown) => {
    const e = error as KubeletError;
    if (/reserve|already exists/i.test(e.message)) return new KubeletError("Conflict", e.message, { cause: error });
    return e;
  };

  const configOf = async (sandboxId: string): Promise<PodSandboxConfig> => {
    const known = sandboxes.get(sandboxId);
    if (known) return known;
    const status = await client.podSandboxStatus(sandboxId);
    const config = sandboxConfig(status.labels, status.metadata.attempt, podLogsDir, {
      network: status.labels[SANDBOX_NETWORK],
    });
    sandboxes.set(sandboxId, config);
    return config;
  };

  // Asked by listing, not by a status call that fails: a lookup should not cost an error reply.
  const isSandbox = async (id: string): Promise<boolean> => {
    if (sandboxIds.has(id)) return true;
    if ((await client.listPodSandbox({ id })).length === 0) return false;
    sandboxIds.add(id);
    return true;
  };

  const listAll = async (podUid?: string): Promise<ContainerSummary[]> => {
    const selector = podUid ? { [LABEL.podUid]: podUid } : undefined;
    const [pods, containers] = await Promise.all([
      client.listPodSandbox({ labelSelector: selector }),
      client.listContainers(selector),
    ]);
    for (const s of pods) sandboxIds.add(s.id);
    return [
      ...pods.filter((s) => ours(s.labels)).map(sandboxSummary),
      ...containers.filter((c) => ours(c.labels)).map(containerSummary),
    ].map(named);
  };

  const inspectContainer = async (id: string): Promise<ContainerDetails> => {
    if (await isSandbox(id)) {
      const s = await client.podSandboxStatus(id);
      const summary = named(sandboxSummary(s));
      return {
        ...summary,
        running: summary.state === "running",
        exitCode: 0,
        startedAt: ns(s.created_at),
        oomKilled: false,
        pid: 0,
        ipAddress: s.network?.ip ?? "",
      };
    }
    const c = await client.containerStatus(id);
    const state = CONTAINER_STATES[c.state];
    return named({
      id: c.id,
      name: shimName(c.labels, c.metadata.name, c.metadata.attempt),
      labels: c.labels,
      image: c.image?.image ?? "",
      imageId: c.image_ref,
      state,
      createdAt: c.created_at / 1e6,
      running: state === "running",
      exitCode: c.exit_code,
      startedAt: ns(c.started_at),
      finishedAt: ns(c.finished_at),
      oomKilled: c.reason === "OOMKilled",
      ...(c.reason && c.reason !== "Completed" && c.reason !== "OOMKilled" && c.message ? { error: c.message } : {}),
      pid: 0,
      ...(c.log_path ? { logPath: c.log_path } : {}),
      ipAddress: "",
    });
  };

  return {
    async ping() {
      await version();
    },
    async info(): Promise<RuntimeInfo> {
      const v = await version();
      return {
        name: v.runtime_name,
        type: "remote",
        version: v.runtime_version,
        apiVersion: v.runtime_api_version,
        os: type(),
        kernelVersion: release(),
        cpus: cpus().length,
        memoryBytes: totalmem(),
        hostname: osHostname(),
        // The CRI names no data root: the image filesystem's mount point stands for it.
        dockerRootDir: (await client.imageFsMountpoints().catch(() => []))[0] ?? "",
      };
    },
    listContainers: (listOptions = {}) => listAll(listOptions.podUid),
    inspectContainer,
    async createContainer(body) {
      if (!ours(body.Labels)) {
        throw new KubeletError(
          "RuntimeError",
          `cannot create container ${body.name}: a CRI container needs the pod labels (${LABEL.podUid}, ${LABEL.containerName})`,
        );
      }
      if (body.Labels[LABEL.containerType] === "podsandbox") {
        const attempt = Number(body.Labels[LABEL.restartCount] ?? 0);
        const labels = { ...body.Labels, [SANDBOX_NETWORK]: body.HostConfig.NetworkMode ?? "" };
        const config = sandboxConfig(labels, attempt, podLogsDir, {
          network: body.HostConfig.NetworkMode,
          ipc: body.HostConfig.IpcMode,
          pid: body.HostConfig.PidMode,
          ...(body.Hostname ? { hostname: body.Hostname } : {}),
          ports: body.HostConfig.PortBindings,
        });
        const id = await client.runPodSandbox(config).catch((e) => Promise.reject(conflict(e)));
        sandboxes.set(id, config);
        sandboxIds.add(id);
        return id;
      }
      const sandboxId = body.HostConfig.NetworkMode?.startsWith("container:")
        ? body.HostConfig.NetworkMode.slice("container:".length)
        : undefined;
      if (!sandboxId)
        throw new KubeletError(
          "RuntimeError",
          `cannot create container ${body.name}: a CRI container joins a pod sandbox (network mode container:<sandbox id>)`,
        );
      const sandbox = await configOf(sandboxId);
      return client
        .createContainer(sandboxId, containerConfig(body, sandbox), sandbox)
        .catch((e) => Promise.reject(conflict(e)));
    },
    async startContainer(id) {
      // A sandbox runs from the moment it exists; starting a container twice is not an error (as in Docker).
      if (await isSandbox(id)) return;
      const status = await client.containerStatus(id);
      if (status.state === "CONTAINER_RUNNING") return;
      await client.startContainer(id);
    },
    async stopContainer(id, graceSeconds) {
      try {
        if (await isSandbox(id)) await client.stopPodSandbox(id);
        else await client.stopContainer(id, Math.ceil(graceSeconds));
      } catch (error) {
        if ((error as KubeletError).code !== "NotFound") throw error;
      }
    },
    async removeContainer(id) {
      try {
        if (await isSandbox(id)) {
          await client.removePodSandbox(id);
          sandboxes.delete(id);
          sandboxIds.delete(id);
        } else await client.removeContainer(id);
      } catch (error) {
        if ((error as KubeletError).code !== "NotFound") throw error;
      }
    },
    async imageId(ref) {
      return (await client.imageStatus(ref))?.id;
    },
    async pullImage(ref, auth, signal) {
      try {
        await client.pullImage(
          ref,
          auth && {
            ...(auth.username ? { username: auth.username } : {}),
            ...(auth.password ? { password: auth.password } : {}),
            ...(auth.auth ? { auth: auth.auth } : {}),
            ...(auth.serveraddress ? { server_address: auth.serveraddress } : {}),
            ...(auth.identitytoken ? { identity_token: auth.identitytoken } : {}),
          },
          signal,
        );
      } catch (error) {
        const e = error as KubeletError;
        if (e.code === "RuntimeUnavailable" || signal?.aborted) throw error;
        throw new KubeletError("ImagePullFailed", `cannot pull image "${ref}": ${e.message}`, { cause: error });
      }
    },
    async listImages() {
      const [images, containers] = await Promise.all([client.listImages(), client.listContainers()]);
      const used = imagesInUse(images, containers);
      // The CRI reports no creation time; image GC's minimum age counts from when the kubelet first saw an image.
      return images.map((i) => ({
        id: i.id,
        tags: i.repo_tags,
        sizeBytes: Number(i.size),
        createdAt: 0,
        inUse: used.has(i.id),
      }));
    },
    async removeImage(id) {
      const [images, containers] = await Promise.all([client.listImages(), client.listContainers()]);
      if (imagesInUse(images, containers).has(id))
        throw new KubeletError("Conflict", `cannot remove image ${id}: image is being used by a container`);
      await client.removeImage(id);
    },
    async exec(id, cmd, execOptions = {}) {
      const result = await client.execSync(id, cmd, execOptions.timeoutMs ?? 0, execOptions.signal);
      const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
      return { exitCode: result.exit_code, stdout: text(result.stdout), stderr: text(result.stderr) };
    },
    async *logs(id, logOptions = {}) {
      const status = await client.containerStatus(id);
      if (!status.log_path) return;
      const running = async () =>
        (await client.containerStatus(id).then(
          (s) => s.state,
          () => "CONTAINER_EXITED",
        )) === "CONTAINER_RUNNING";
      yield* readCriLog(status.log_path, { ...logOptions, running });
    },
    async stats(id) {
      const s = await client.containerStats(id);
      const memory = s.memory?.working_set_bytes?.value ?? 0;
      return {
        time: new Date((s.cpu?.timestamp ?? clock.now() * 1e6) / 1e6).toISOString(),
        cpuUsageNanoseconds: s.cpu?.usage_core_nano_seconds?.value ?? 0,
        systemCpuNanoseconds: 0,
        memoryUsageBytes: memory,
        memoryWorkingSetBytes: memory,
        memoryLimitBytes: 0,
        networkRxBytes: 0,
        networkTxBytes: 0,
        pids: 0,
      };
    },
    events: (signal) =>
      relistEvents(
        async (): Promise<RelistEntry[]> =>
          (await listAll()).map((c) => ({ id: c.id, state: c.state, labels: c.labels })),
        { periodMs: options.relistPeriodMs ?? 1000, clock, signal },
      ),
  };
}
