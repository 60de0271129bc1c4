// The Runtime port on a CRI runtime (containerd, CRI-O) through runtime.v1: sandbox and container
// configs pass through as they are, logs are the CRI log files read by the kubelet, and events come
// from the runtime's GetContainerEvents with a relist behind it (pleg/evented.ts), or from relisting alone where the
// runtime does not serve the stream (pleg/generic.ts). Sandbox and container calls map 1:1 onto the CRI's own.
import { hostname as osHostname, cpus, release, totalmem, type } from "node:os";
import { KubeletError } from "../../api/types.ts";
import type { Clock } from "../../clock.ts";
import { batched } from "../batched.ts";
import { readCriLog } from "./cri-logs.ts";
import { openPortForwardStream } from "./cri-port-forward.ts";
import { openChannelStream } from "./cri-streaming.ts";
import { openSpdyStream } from "./cri-spdy-stream.ts";
import type { CriClient, CriContainer, CriContainerStats, PodSandbox, CriImage } from "../cri-types.ts";
import type { RelistEntry } from "../pleg/generic.ts";
import { eventedEvents, GENERIC_RELIST_PERIOD_MS, type EventedPlegOptions } from "../pleg/evented.ts";
import { streamedEntry } from "./cri-events.ts";
import { createRelistEntries } from "./cri-relist.ts";
import { createSharedListing } from "../shared-listing.ts";
import { keepingListing, staleOnEvents } from "../kept-listing.ts";
import { measuredCall, RUNTIME_OPERATIONS } from "../instrumented.ts";
import type { KubeletMetrics } from "../../metrics.ts";
import {
  LABEL,
  type ContainerDetails,
  type ContainerSummary,
  type LinuxResources,
  type PodSandboxSummary,
  type Runtime,
  type StreamOptions,
  type StreamSession,
  streamFlags,
  isRuntimeError,
  runtimeError,
} from "../runtime.ts";
import { withOfflineHint } from "../pull-failure.ts";

export interface CriRuntimeOptions {
  /** The generic PLEG's relist period (the Go kubelet's: 1 s), used while there is no event stream. */
  relistPeriodMs?: number;
  /** The relist behind a working event stream (the Go kubelet's Evented PLEG: 300 s). */
  eventedRelistPeriodMs?: number;
  clock: Clock;
  /** Where the PLEG says the event stream broke, came back, or is not served. */
  log?: { info(message: string): void; warn(message: string): void };
  /** kubelet_pleg_relist_duration_seconds / _interval_seconds. */
  relisted?(durationSeconds: number, intervalSeconds: number | undefined): void;
  /** kubelet_evented_pleg_connection_success_count / _error_count / _latency_seconds. */
  eventStream?: { connected(): void; failed(): void; latency(seconds: number): void };
  /** The PLEG's health behind /healthz's "pleg" check (pleg/health.ts). */
  plegHealth?: EventedPlegOptions["health"];
  /**
   * kubelet_runtime_operations_*: the relist's two lists are counted as upstream counts its generic PLEG's GetPods
   * (list_podsandbox, list_containers), though they pass beside the instrumented Runtime port.
   */
  runtimeOperation?: KubeletMetrics["runtimeOperation"];
}

const silent = { info() {}, warn() {} };

const ns = (time: number) => (time > 0 ? new Date(time / 1e6).toISOString() : undefined);

/** Whether labels mark something the kubelet made (the same test Docker mode applies). */
const ours = (labels: Record<string, string>) => !!labels[LABEL.podUid] && !!labels[LABEL.containerName];

/** The dockershim name, so every layer above sees the same `k8s_…` names on either runtime. */
function shimName(labels: Record<string, string>, container: string, attempt: number): string {
  return `k8s_${container}_${labels[LABEL.podName]}_${labels[LABEL.podNamespace]}_${labels[LABEL.podUid]}_${attempt}`;
}

function sandboxSummary(s: PodSandbox): PodSandboxSummary {
  return {
    id: s.id,
    metadata: { ...s.metadata },
    state: s.state === "SANDBOX_READY" ? "ready" : "notready",
    createdAt: s.created_at / 1e6,
    labels: s.labels,
  };
}

function containerSummary(c: CriContainer): ContainerSummary {
  return {
    id: c.id,
    podSandboxId: c.pod_sandbox_id,
    name: shimName(c.labels, c.metadata.name, c.metadata.attempt),
    labels: c.labels,
    image: c.image?.image ?? "",
    imageId: c.image_ref,
    state: c.state,
    createdAt: c.created_at / 1e6,
  };
}

/** Ids of the images containers use: a container's image_ref is an image id or one of its repo digests. */
function imagesInUse(images: CriImage[], containers: Array<{ image_ref: string }>): Set<string> {
  const refs = new Set(containers.map((c) => c.image_ref));
  return new Set(images.filter((i) => refs.has(i.id) || i.repo_digests.some((d) => refs.has(d))).map((i) => i.id));
}

/**
 * Exec or attach through the streaming server: over SPDY when stdin is open, since only SPDY lets the kubelet close
 * stdin alone (containerd's server speaks no v5.channel.k8s.io, and `kubectl cp` into a pod needs tar to read end of
 * file); over WebSocket otherwise.
 */
function openStream(
  url: string,
  flags: Required<StreamOptions>,
  options: { kind: "exec" | "attach"; action: string },
): Promise<StreamSession> {
  return flags.stdin ? openSpdyStream(url, { ...options, streams: flags }) : openChannelStream(url, options);
}

/** The sandbox image a runtime's verbose Status info names: containerd's CRI config JSON under "config". */
export function sandboxImageOf(info: Record<string, string>): string | undefined {
  try {
    const image = (JSON.parse(info.config ?? "{}") as { sandboxImage?: unknown }).sandboxImage;
    return typeof image === "string" && image ? image : undefined;
  } catch {
    return undefined; // not JSON: a runtime that reports its config otherwise names no sandbox image here
  }
}

/** The Runtime port over a runtime.v1 client. */
export function createCriRuntime(client: CriClient, options: CriRuntimeOptions): Runtime {
  const { clock } = options;

  const conflict = (error: unknown) => {
    const e = error as KubeletError;
    if (/reserve|already exists/i.test(e.message)) return runtimeError("Conflict", e.message, { cause: error });
    return e;
  };
  /** containerd's `failed to get sandbox image "…": …` (its own sandbox_image could not be pulled) names the operator doc. */
  const sandboxImageHint = (error: unknown) => {
    const e = error as KubeletError;
    if (!/failed to get sandbox image/.test(e.message ?? "")) return e;
    return new KubeletError(e.code, withOfflineHint(e.message), { cause: error });
  };
  const notFoundIsDone = (error: unknown) => {
    if (!isRuntimeError(error, "NotFound")) throw error;
  };

  const relistEntries = createRelistEntries(ours);
  const relistCall = <T>(operation: string, call: () => Promise<T>) =>
    options.runtimeOperation ? measuredCall(options.runtimeOperation, operation, call) : call();

  // Every full list (the relist's, a reader's) is kept for the node's other readers while nothing changed since
  // (shared-listing.ts); an item the list decoder hands back unchanged keeps the summary made of it.
  const shared = createSharedListing(clock);
  const summarized = <T extends { labels: Record<string, string> }, S>(make: (item: T) => S) => {
    const made = new WeakMap<T, S>();
    return (items: T[]) =>
      items.filter((i) => ours(i.labels)).map((i) => made.get(i) ?? (made.set(i, make(i)), made.get(i)!));
  };
  const containerSummaries = summarized(containerSummary);
  const sandboxSummaries = summarized(sandboxSummary);

  const listPodSandboxes: Runtime["listPodSandboxes"] = async (filter = {}) =>
    sandboxSummaries(
      await client.listPodSandbox({
        ...(filter.podUid ? { labelSelector: { [LABEL.podUid]: filter.podUid } } : {}),
        ...(filter.state ? { state: filter.state === "ready" ? "SANDBOX_READY" : "SANDBOX_NOTREADY" } : {}),
      }),
    );

  // The stats analyzer asks every running container's stats at once: one ListContainerStats answers them all
  // (one container alone is asked by id, so a single lookup does not list the node).
  const containerStats = batched(
    async (ids: string[]) =>
      new Map(
        (await client.listContainerStats(ids.length === 1 ? { id: ids[0] } : {})).map(
          (s): [string, CriContainerStats] => [s.attributes?.id ?? "", s],
        ),
      ),
    (id) => runtimeError("NotFound", `cannot ListContainerStats: no stats for container ${id.slice(0, 12)}`),
  );

  // Asked once: the runtime's name prefixes container IDs in statuses; a failed call is asked again.
  let name: Promise<string> | undefined;
  const runtimeName = () =>
    (name ??= client.version().then(
      (v) => v.runtime_name,
      (error) => {
        name = undefined;
        throw error;
      },
    ));

  const inspectContainer = async (id: string): Promise<ContainerDetails> => {
    const c = await client.containerStatus(id);
    const state = c.state;
    return {
      id: c.id,
      runtimeName: await runtimeName(),
      name: shimName(c.labels, c.metadata.name, c.metadata.attempt),
      labels: c.labels,
      image: c.image?.image ?? "",
      imageId: c.image_ref,
      state,
      createdAt: c.created_at / 1e6,
      running: state === "CONTAINER_RUNNING",
      exitCode: c.exit_code,
      startedAt: ns(c.started_at),
      finishedAt: ns(c.finished_at),
      oomKilled: c.reason === "OOMKilled",
      ...(c.reason && c.reason !== "Completed" && c.reason !== "OOMKilled" && c.message ? { error: c.message } : {}),
      pid: 0,
      ...(c.log_path ? { logPath: c.log_path } : {}),
      ipAddress: "",
      ...(c.resources?.linux ? { resources: linuxResources(c.resources.linux) } : {}),
    };
  };

  return keepingListing(shared, {
    async version(signal) {
      const v = await client.version(signal);
      name ??= Promise.resolve(v.runtime_name);
      return {
        runtimeName: v.runtime_name,
        runtimeVersion: v.runtime_version,
        runtimeApiVersion: v.runtime_api_version,
      };
    },
    async status(signal) {
      const status = await client.status(signal);
      const sandboxImage = sandboxImageOf(status.info);
      return { conditions: status.conditions.map((c) => ({ ...c })), ...(sandboxImage ? { sandboxImage } : {}) };
    },
    // A CRI runtime is reached over a unix socket: the machine it runs containers on is this one.
    async machineInfo() {
      return {
        os: type(),
        kernelVersion: release(),
        cpus: cpus().length,
        memoryBytes: totalmem(),
        hostname: osHostname(),
      };
    },
    runPodSandbox: (config, runtimeHandler) =>
      client.runPodSandbox(config, runtimeHandler).catch((e) => Promise.reject(sandboxImageHint(conflict(e)))),
    stopPodSandbox: (id) => client.stopPodSandbox(id).catch(notFoundIsDone),
    removePodSandbox: (id) => client.removePodSandbox(id).catch(notFoundIsDone),
    async podSandboxStatus(id) {
      const s = await client.podSandboxStatus(id);
      return { ...sandboxSummary(s), ipAddress: s.network?.ip ?? "", runtimeName: await runtimeName() };
    },
    listPodSandboxes,
    async listContainers(listOptions = {}) {
      const { podUid } = listOptions;
      const containers = containerSummaries(
        await client.listContainers(podUid ? { [LABEL.podUid]: podUid } : undefined),
      );
      if (!listOptions.size) return containers;
      // A listed CRI container carries no size: its writable layer's usage comes with its stats, as the Go kubelet's
      // CRI stats provider reads it (containerd refreshes it every stats_collect_period, 10 s by default).
      const stats = await client.listContainerStats({});
      const used = new Map(stats.map((s) => [s.attributes?.id ?? "", s.writable_layer?.used_bytes?.value]));
      return containers.map((c) => {
        const bytes = used.get(c.id);
        return bytes === undefined ? c : { ...c, sizeRwBytes: Number(bytes) };
      });
    },
    inspectContainer,
    reopenContainerLog: (id) => client.reopenContainerLog(id),
    createContainer: (sandboxId, config, sandboxConfig) =>
      client.createContainer(sandboxId, config, sandboxConfig).catch((e) => Promise.reject(conflict(e))),
    async startContainer(id) {
      try {
        await client.startContainer(id);
      } catch (error) {
        // Starting a container twice is not an error (as in Docker); asked only when the start failed.
        if ((await client.containerStatus(id).catch(() => undefined))?.state === "CONTAINER_RUNNING") return;
        throw error;
      }
    },
    stopContainer: (id, graceSeconds) => client.stopContainer(id, Math.ceil(graceSeconds)).catch(notFoundIsDone),
    updateContainerResources: (id, resources) => client.updateContainerResources(id, resources),
    removeContainer: (id) => client.removeContainer(id).catch(notFoundIsDone),
    async imageStatus(ref) {
      const image = await client.imageStatus(ref);
      return (
        image && {
          id: image.id,
          repoTags: image.repo_tags,
          sizeBytes: Number(image.size),
          ...(image.uid ? { uid: Number(image.uid.value) } : image.username ? { username: image.username } : {}),
        }
      );
    },
    async imageFsInfo() {
      const [fs] = await client.imageFsInfo();
      if (!fs?.fs_id?.mountpoint)
        throw runtimeError("RuntimeError", `cannot read the image filesystem: ${client.endpoint} reports none`);
      return {
        mountpoint: fs.fs_id.mountpoint,
        usedBytes: Number(fs.used_bytes?.value ?? 0),
        ...(fs.inodes_used ? { inodesUsed: Number(fs.inodes_used.value) } : {}),
      };
    },
    // PullImage reports nothing until it is done: no progress, so no progress deadline (as the Go kubelet).
    reportsPullProgress: false,
    async pullImage(ref, { auth, signal } = {}) {
      try {
        await client.pullImage(ref, {
          ...(auth && {
            auth: {
              ...(auth.username ? { username: auth.username } : {}),
              ...(auth.password ? { password: auth.password } : {}),
              ...(auth.auth ? { auth: auth.auth } : {}),
              ...(auth.serveraddress ? { server_address: auth.serveraddress } : {}),
              ...(auth.identitytoken ? { identity_token: auth.identitytoken } : {}),
            },
          }),
          ...(signal && { signal }),
        });
      } catch (error) {
        const e = error as KubeletError;
        if (e.code === "RuntimeUnavailable" || signal?.aborted) throw error;
        throw runtimeError("ImagePullFailed", `cannot pull image "${ref}": ${e.message}`, { cause: error });
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
        throw runtimeError("Conflict", `cannot remove image ${id}: image is being used by a container`);
      await client.removeImage(id);
    },
    async exec(id, cmd, execOptions = {}) {
      const result = await client.execSync(id, cmd, execOptions.timeoutMs ?? 0, execOptions.signal);
      const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
      return { exitCode: result.exit_code, stdout: text(result.stdout), stderr: text(result.stderr) };
    },
    async execStream(id, cmd, streams) {
      const flags = streamFlags(streams);
      const url = await client.exec(id, cmd, flags);
      return openStream(url, flags, {
        kind: "exec",
        action: `exec ${JSON.stringify(cmd)} in container ${id.slice(0, 12)}`,
      });
    },
    async attach(id, streams) {
      const flags = streamFlags(streams);
      const url = await client.attach(id, flags);
      return openStream(url, flags, { kind: "attach", action: `attach to container ${id.slice(0, 12)}` });
    },
    async portForward(podSandboxId, port) {
      const url = await client.portForward(podSandboxId, [port]);
      return openPortForwardStream(url, { action: `forward port ${port} of pod sandbox ${podSandboxId.slice(0, 12)}` });
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
      const s = await containerStats(id);
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
    // The relist reads the client's items straight (no summaries): an unchanged node's relist builds nothing new
    // (cri-relist.ts). The stream tells of sandboxes by their id as well, so both sources fill one table.
    events: (signal) =>
      eventedEvents(
        async (): Promise<RelistEntry[]> => {
          const token = shared.begin();
          const [sandboxes, containers] = await Promise.all([
            relistCall(RUNTIME_OPERATIONS.listPodSandboxes, () => client.listPodSandbox()),
            relistCall(RUNTIME_OPERATIONS.listContainers, () => client.listContainers()),
          ]);
          shared.recordSandboxes(token, () => sandboxSummaries(sandboxes));
          shared.recordContainers(token, () => containerSummaries(containers));
          return relistEntries(sandboxes, containers);
        },
        async function* (streamSignal, opened) {
          const open = () => {
            shared.streaming(true);
            opened();
          };
          for await (const event of staleOnEvents(shared, client.containerEvents(streamSignal, open))) {
            const entry = streamedEntry(event, ours);
            if (entry) yield entry;
          }
        },
        {
          clock,
          signal,
          relistPeriodMs: options.relistPeriodMs ?? GENERIC_RELIST_PERIOD_MS,
          ...(options.eventedRelistPeriodMs ? { eventedRelistPeriodMs: options.eventedRelistPeriodMs } : {}),
          log: options.log ?? silent,
          relisted: options.relisted,
          connected: options.eventStream?.connected,
          connectionFailed: options.eventStream?.failed,
          eventLatency: options.eventStream?.latency,
          ...(options.plegHealth ? { health: options.plegHealth } : {}),
        },
      ),
  });
}

/** The resize-relevant fields of the CRI's LinuxContainerResources. */
const linuxResources = (r: LinuxResources): LinuxResources => ({
  cpu_period: r.cpu_period,
  cpu_quota: r.cpu_quota,
  cpu_shares: r.cpu_shares,
  memory_limit_in_bytes: r.memory_limit_in_bytes,
});
