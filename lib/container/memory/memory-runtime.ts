// The in-memory runtime behind --container_runtime fake (hollow nodes for fleet benchmarks and the
// unit tests' FakeRuntime): sandboxes and containers with Docker-like states and the dockershim's
// names that "run" at once, exit when stopped, and report fixed stats; hooks make containers print
// and exit and commands answer. Nothing runs and no image is pulled.
import type { Clock } from "../../clock.ts";
import { systemClock } from "../../clock.ts";
import {
  LABEL,
  POD_INFRA_CONTAINER_NAME,
  type ContainerDetails,
  type ContainerStats,
  type ContainerSummary,
  type ExecResult,
  type PortForwardStream,
  type ImageSummary,
  type LifecycleEventType,
  type ImageFsInfo,
  type ImageStatus,
  type LinuxResources,
  type LogOptions,
  type MachineInfo,
  type PodSandboxDetails,
  type PodSandboxFilter,
  type PodSandboxSummary,
  type PullOptions,
  type Runtime,
  type RuntimeEvent,
  type RuntimeStatus,
  type RuntimeVersion,
  type StreamOptions,
  type StreamSession,
  runtimeError,
} from "../runtime.ts";
import { scriptedSession, type StreamScript } from "./scripted-session.ts";
import type { ContainerConfig, PodSandboxConfig } from "../cri-types.ts";
import { dockerName, sandboxOf } from "../dockershim-naming.ts";

/** What a fake container does once started: output at times (ms after start), then maybe an exit. */
export interface FakeProgram {
  output?: Array<{ atMs: number; text: string }>;
  /** Exit code once the output is written; undefined = runs until stopped. */
  exitCode?: number;
}

/** A container put in place by seed(): one the kubelet did not create, or one from an earlier run. */
export interface FakeSeed {
  name: string;
  image: string;
  labels: Record<string, string>;
}

export interface FakeContainer extends ContainerDetails {
  /** What it was created from: a sandbox's config, or a container's with its sandbox (none when seeded). */
  sandbox?: PodSandboxConfig;
  config?: ContainerConfig;
  sandboxId?: string;
  logLines: Array<{ time: number; text: string }>;
}

/** The in-memory Runtime. */
export class MemoryRuntime implements Runtime {
  readonly containers = new Map<string, FakeContainer>();
  /** Images present locally; pullImage adds to it. */
  readonly images = new Set<string>(["local/busybox:stable", "registry.k8s.io/pause:3.9"]);
  /** Writable-layer sizes of containers by id (default 4096), listed with `size`. */
  readonly containerSizes = new Map<string, number>();
  /** Sizes and creation times of images by reference (default 1 MB, epoch). */
  readonly imageSizes = new Map<string, number>();
  readonly imageCreated = new Map<string, number>();
  /** Answers exec calls; default: exit 0 with no output. */
  execHandler: (id: string, cmd: string[]) => ExecResult | Promise<ExecResult> = () => ({
    exitCode: 0,
    stdout: "",
    stderr: "",
  });
  /** Runs streamed execs; default: the execHandler's answer, written out. */
  execStreamHandler: (id: string, cmd: string[], options: StreamOptions) => StreamScript = (id, cmd) => async (io) => {
    const result = await this.execHandler(id, cmd);
    if (result.stdout) io.stdout(result.stdout);
    if (result.stderr) io.stderr(result.stderr);
    return result.exitCode;
  };
  /** Runs attaches; default: the stream stays open, silent, until closed. */
  attachHandler: (id: string, options: StreamOptions) => StreamScript = () => async (io) => {
    await new Promise((resolve) => io.closed.addEventListener("abort", resolve));
    return undefined;
  };
  /** Answers port forwards to a ready sandbox; default: nothing listens, as in a pod that serves no port. */
  portForwardHandler: (podSandboxId: string, port: number) => PortForwardStream | Promise<PortForwardStream> = (
    id,
    port,
  ) => {
    throw runtimeError(
      "RuntimeError",
      `failed to connect to localhost:${port} inside the network of pod sandbox ${id.slice(0, 12)}: connection refused`,
    );
  };
  /** The behaviour of a started container, by its config; default: runs silently until stopped. */
  program: (config: ContainerConfig) => FakeProgram | undefined = () => undefined;
  /** The image of every sandbox's pause container: the runtime's own, present once a sandbox ran (it pulls it). */
  podInfraImage = "registry.k8s.io/pause:3.9";
  /** What machineInfo() reports as the runtime's cgroup driver. */
  cgroupDriver = "cgroupfs";
  /** Pulls are instant and report no progress. */
  reportsPullProgress = false;
  /** Where imageFsInfo() says images live. */
  imageFsMountpoint = "/var/lib/docker";
  #seq = 0;
  #listeners = new Set<(e: RuntimeEvent) => void>();
  #listedAsRunning = new Set<string>();
  #logWaiters = new Set<() => void>();

  constructor(readonly clock: Clock = systemClock) {}

  /**
   * A running container exits with `code`. `listedAsRunning`: as dockerd 20.10 does, the listing still
   * shows it running after its die event, until its exit is handled (an inspect waits for that).
   */
  exit(id: string, code: number, options: { oomKilled?: boolean; listedAsRunning?: boolean } = {}): void {
    const c = this.container(id);
    if (!c.running) return;
    if (options.listedAsRunning) this.#listedAsRunning.add(id);
    Object.assign(c, {
      running: false,
      state: "CONTAINER_EXITED",
      exitCode: code,
      oomKilled: options.oomKilled ?? false,
      finishedAt: new Date(this.clock.now()).toISOString(),
      pid: 0,
    });
    this.#emit("ContainerDied", c);
    this.#wakeLogs();
  }

  /** Appends output to a container's log (followers see it). */
  writeLogs(id: string, text: string): void {
    const c = this.container(id);
    for (const line of text.split(/(?<=\n)/)) if (line) c.logLines.push({ time: this.clock.now(), text: line });
    this.#wakeLogs();
  }

  /** Called first by every method of the port; the unit tests' FakeRuntime records and fails calls here. */
  protected called(_method: string, _args: unknown[]): void {}

  /** What a pull does before the image is present; the unit tests' FakeRuntime delays and stalls it here. */
  protected async pulling(_ref: string, _options: PullOptions): Promise<void> {}

  protected container(id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c) throw runtimeError("NotFound", `No such container: ${id}`);
    return c;
  }

  #emit(type: LifecycleEventType, c: FakeContainer): void {
    for (const listener of this.#listeners)
      listener({ type, containerId: c.id, labels: c.labels, time: this.clock.now() });
  }

  #wakeLogs(): void {
    for (const wake of this.#logWaiters) wake();
  }

  protected add(seed: FakeSeed, from: Pick<FakeContainer, "sandbox" | "config" | "sandboxId">): string {
    if ([...this.containers.values()].some((c) => c.name === seed.name))
      throw runtimeError("Conflict", `The container name "/${seed.name}" is already in use`);
    const id = `fake${String(++this.#seq).padStart(60, "0")}`;
    this.containers.set(id, {
      id,
      name: seed.name,
      labels: seed.labels,
      image: seed.image,
      imageId: `sha256:${seed.image}`,
      state: "CONTAINER_CREATED",
      createdAt: this.clock.now(),
      running: false,
      exitCode: 0,
      oomKilled: false,
      pid: 0,
      ipAddress: "",
      ...from,
      logLines: [],
    });
    return id;
  }

  async #play(id: string, program: FakeProgram, startedAt: string): Promise<void> {
    const alive = () => this.containers.get(id)?.running && this.containers.get(id)?.startedAt === startedAt;
    let elapsed = 0;
    for (const step of program.output ?? []) {
      if (step.atMs > elapsed) await this.clock.sleep(step.atMs - elapsed);
      elapsed = Math.max(elapsed, step.atMs);
      if (!alive()) return;
      this.writeLogs(id, step.text);
    }
    if (program.exitCode !== undefined && alive()) this.exit(id, program.exitCode);
  }

  async version(): Promise<RuntimeVersion> {
    this.called("version", []);
    return { runtimeName: "fake", runtimeVersion: "fake", runtimeApiVersion: "1.41" };
  }
  async status(): Promise<RuntimeStatus> {
    this.called("status", []);
    return {
      conditions: [
        { type: "RuntimeReady", status: true, reason: "", message: "" },
        { type: "NetworkReady", status: true, reason: "", message: "" },
      ],
      sandboxImage: this.podInfraImage,
    };
  }
  async machineInfo(): Promise<MachineInfo> {
    this.called("machineInfo", []);
    return {
      os: "Fake OS",
      kernelVersion: "6.0",
      cpus: 2,
      memoryBytes: 2 ** 33,
      hostname: "fake",
      cgroupDriver: this.cgroupDriver,
    };
  }
  /** Sandboxes are pause containers, as in the Docker shim: the same map, told apart by their POD label. */
  #isSandbox(c: FakeContainer): boolean {
    return c.labels[LABEL.containerName] === POD_INFRA_CONTAINER_NAME;
  }
  #ours(c: FakeContainer, podUid?: string): boolean {
    return c.name.startsWith("k8s_") && !!c.labels[LABEL.podUid] && (!podUid || c.labels[LABEL.podUid] === podUid);
  }
  #sandbox(id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c || !this.#isSandbox(c)) throw runtimeError("NotFound", `cannot inspect pod sandbox ${id}: not found`);
    return c;
  }
  #sandboxSummary(c: FakeContainer): PodSandboxSummary {
    return sandboxOf({ ...c, labels: { ...c.labels } });
  }
  async listPodSandboxes(filter: PodSandboxFilter = {}): Promise<PodSandboxSummary[]> {
    this.called("listPodSandboxes", [filter]);
    return [...this.containers.values()]
      .filter((c) => this.#isSandbox(c) && this.#ours(c, filter.podUid))
      .map((c) => this.#sandboxSummary(c))
      .filter((s) => !filter.state || s.state === filter.state);
  }
  async podSandboxStatus(id: string): Promise<PodSandboxDetails> {
    this.called("podSandboxStatus", [id]);
    const c = this.#sandbox(id);
    return { ...this.#sandboxSummary(c), ipAddress: c.ipAddress };
  }
  async stopPodSandbox(id: string): Promise<void> {
    this.called("stopPodSandbox", [id]);
    if (this.containers.get(id)?.running) this.exit(id, 0);
  }
  async removePodSandbox(id: string): Promise<void> {
    this.called("removePodSandbox", [id]);
    this.#remove(id);
  }
  async listContainers(options: { podUid?: string; size?: boolean } = {}): Promise<ContainerSummary[]> {
    this.called("listContainers", [options]);
    return [...this.containers.values()]
      .filter((c) => !this.#isSandbox(c) && this.#ours(c, options.podUid))
      .map(({ id, name, labels, image, imageId, state, createdAt, sandboxId }) => ({
        id,
        name,
        podSandboxId: sandboxId ?? "",
        labels: { ...labels },
        image,
        imageId,
        state: this.#listedAsRunning.has(id) ? "CONTAINER_RUNNING" : state,
        createdAt,
        ...(options.size ? { sizeRwBytes: this.containerSizes.get(id) ?? 4096 } : {}),
      }));
  }
  async inspectContainer(id: string): Promise<ContainerDetails> {
    this.called("inspectContainer", [id]);
    this.#listedAsRunning.delete(id);
    const c = this.container(id);
    if (this.#isSandbox(c)) throw runtimeError("NotFound", `cannot inspect container ${id}: it is a pod sandbox`);
    const { sandbox: _sandbox, config: _config, sandboxId: _sandboxId, logLines: _logs, ...details } = c;
    return structuredClone(details);
  }
  async runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string> {
    this.called("runPodSandbox", runtimeHandler ? [config, runtimeHandler] : [config]);
    const name = dockerName(config, POD_INFRA_CONTAINER_NAME, config.metadata.attempt);
    this.images.add(this.podInfraImage);
    const id = this.add({ name, image: this.podInfraImage, labels: { ...config.labels } }, { sandbox: config });
    this.#emit("ContainerChanged", this.containers.get(id)!);
    this.#start(id);
    return id;
  }
  async createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    this.called("createContainer", [sandboxId, config, sandboxConfig]);
    if (!this.containers.get(sandboxId)?.sandbox)
      throw runtimeError("NotFound", `cannot create container ${config.metadata.name}: no pod sandbox ${sandboxId}`);
    const image = config.image.image;
    if (!this.images.has(image)) throw runtimeError("NotFound", `No such image: ${image}`);
    const name = dockerName(sandboxConfig, config.metadata.name, config.metadata.attempt);
    const id = this.add({ name, image, labels: { ...config.labels } }, { config, sandboxId });
    const r = config.linux?.resources;
    this.containers.get(id)!.resources = {
      cpu_period: r?.cpu_period ?? 0,
      cpu_quota: r?.cpu_quota ?? 0,
      cpu_shares: r?.cpu_shares ?? 0,
      memory_limit_in_bytes: r?.memory_limit_in_bytes ?? 0,
    };
    this.#emit("ContainerChanged", this.containers.get(id)!);
    return id;
  }
  async updateContainerResources(id: string, resources: LinuxResources): Promise<void> {
    this.called("updateContainerResources", [id, resources]);
    this.container(id).resources = { ...resources };
  }
  async startContainer(id: string): Promise<void> {
    this.called("startContainer", [id]);
    this.#start(id);
  }
  #start(id: string): void {
    const c = this.container(id);
    if (c.running) return; // Docker: 304 Not Modified
    const startedAt = new Date(this.clock.now()).toISOString();
    Object.assign(c, {
      running: true,
      state: "CONTAINER_RUNNING",
      startedAt,
      finishedAt: undefined,
      exitCode: 0,
      oomKilled: false,
      pid: 1000 + this.#seq,
    });
    this.#emit("ContainerStarted", c);
    const program = c.config && this.program(c.config);
    if (program) void this.#play(id, program, startedAt);
  }
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    this.called("stopContainer", [id, graceSeconds]);
    // Like `sleep` as PID 1, the fake ignores SIGTERM and is killed when the grace period ends.
    if (this.containers.get(id)?.running) this.exit(id, 137);
  }
  async removeContainer(id: string): Promise<void> {
    this.called("removeContainer", [id]);
    this.#remove(id);
  }
  #remove(id: string): void {
    const c = this.containers.get(id);
    if (!c) return;
    if (c.running) this.exit(id, 137);
    this.containers.delete(id);
    this.#emit("ContainerRemoved", c);
    this.#wakeLogs();
  }
  async imageStatus(ref: string): Promise<ImageStatus | undefined> {
    this.called("imageStatus", [ref]);
    return this.images.has(ref)
      ? { id: `sha256:${ref}`, repoTags: [ref], sizeBytes: this.imageSizes.get(ref) ?? 1_000_000 }
      : undefined;
  }
  async imageFsInfo(): Promise<ImageFsInfo> {
    this.called("imageFsInfo", []);
    const usedBytes = [...this.images].reduce((n, ref) => n + (this.imageSizes.get(ref) ?? 1_000_000), 0);
    return { mountpoint: this.imageFsMountpoint, usedBytes, inodesUsed: this.images.size };
  }
  async pullImage(ref: string, options: PullOptions = {}): Promise<void> {
    this.called("pullImage", [ref, options]);
    await this.pulling(ref, options);
    this.images.add(ref);
  }
  async listImages(): Promise<ImageSummary[]> {
    this.called("listImages", []);
    const used = new Set([...this.containers.values()].map((c) => c.imageId));
    return [...this.images].map((ref) => ({
      id: `sha256:${ref}`,
      tags: [ref],
      sizeBytes: this.imageSizes.get(ref) ?? 1_000_000,
      createdAt: this.imageCreated.get(ref) ?? 0,
      inUse: used.has(`sha256:${ref}`),
    }));
  }
  async removeImage(id: string): Promise<void> {
    this.called("removeImage", [id]);
    const ref = id.replace(/^sha256:/, "");
    if ([...this.containers.values()].some((c) => c.imageId === id))
      throw runtimeError("Conflict", `cannot remove image ${ref}: image is being used by a container`);
    this.images.delete(ref);
  }
  async exec(
    id: string,
    cmd: string[],
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<ExecResult> {
    this.called("exec", [id, cmd]);
    if (this.container(id).running === false) throw runtimeError("Conflict", `Container ${id} is not running`);
    const result = Promise.resolve(this.execHandler(id, cmd));
    if (!options.timeoutMs) return result;
    const timeout = this.clock.sleep(options.timeoutMs).then(() => {
      throw runtimeError(
        "ExecTimeout",
        `cannot exec ${JSON.stringify(cmd)} in container ${id.slice(0, 12)}: no exit within ${options.timeoutMs} ms`,
      );
    });
    return Promise.race([result, timeout]);
  }
  async execStream(id: string, cmd: string[], options: StreamOptions): Promise<StreamSession> {
    this.called("execStream", [id, cmd, options]);
    if (this.container(id).running === false) throw runtimeError("Conflict", `Container ${id} is not running`);
    return scriptedSession(this.execStreamHandler(id, cmd, options));
  }
  async portForward(podSandboxId: string, port: number): Promise<PortForwardStream> {
    this.called("portForward", [podSandboxId, port]);
    const sandbox = await this.podSandboxStatus(podSandboxId);
    if (sandbox.state !== "ready")
      throw runtimeError("Conflict", `cannot forward port ${port}: pod sandbox ${podSandboxId} is not ready`);
    return this.portForwardHandler(podSandboxId, port);
  }
  async attach(id: string, options: StreamOptions): Promise<StreamSession> {
    this.called("attach", [id, options]);
    if (this.container(id).running === false) throw runtimeError("Conflict", `Container ${id} is not running`);
    return scriptedSession(this.attachHandler(id, options));
  }
  async *logs(id: string, options: LogOptions = {}): AsyncIterable<Uint8Array> {
    this.called("logs", [id, options]);
    const encoder = new TextEncoder();
    const c = this.container(id);
    const format = (l: { time: number; text: string }) =>
      encoder.encode(options.timestamps ? `${new Date(l.time).toISOString()} ${l.text}` : l.text);
    const fresh = c.logLines.filter((l) => !options.since || l.time >= options.since * 1000);
    const first = options.tail === undefined ? fresh : fresh.slice(Math.max(0, fresh.length - options.tail));
    let sent = c.logLines.length;
    for (const line of first) yield format(line);
    while (options.follow && !options.signal?.aborted) {
      for (; sent < c.logLines.length && !options.signal?.aborted; sent++) yield format(c.logLines[sent]!);
      if (options.signal?.aborted || !c.running || !this.containers.has(id)) return; // Docker ends a follow when the container stops
      let waiter!: () => void;
      await new Promise<void>((resolve) => {
        waiter = resolve;
        this.#logWaiters.add(waiter);
        options.signal?.addEventListener("abort", waiter, { once: true });
      });
      this.#logWaiters.delete(waiter);
      options.signal?.removeEventListener("abort", waiter);
    }
  }
  async stats(id: string): Promise<ContainerStats> {
    this.called("stats", [id]);
    this.container(id);
    return {
      time: new Date(this.clock.now()).toISOString(),
      cpuUsageNanoseconds: 1e9,
      systemCpuNanoseconds: 0,
      memoryUsageBytes: 2 ** 20,
      memoryWorkingSetBytes: 2 ** 19,
      memoryLimitBytes: 0,
      networkRxBytes: 10,
      networkTxBytes: 20,
      pids: 1,
    };
  }
  async *events(signal: AbortSignal): AsyncIterable<RuntimeEvent> {
    const queue: RuntimeEvent[] = [];
    let wake: (() => void) | undefined;
    const listener = (e: RuntimeEvent) => {
      queue.push(e);
      wake?.();
    };
    this.#listeners.add(listener);
    try {
      while (!signal.aborted) {
        if (queue.length) yield queue.shift()!;
        else
          await new Promise<void>((resolve) => {
            wake = resolve;
            signal.addEventListener("abort", () => resolve(), { once: true });
          });
      }
    } finally {
      this.#listeners.delete(listener);
    }
  }
}
