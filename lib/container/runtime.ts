// The container runtime port, shaped like the CRI: pod sandboxes and containers created from the
// CRI's own config messages (cri-types.ts). cri.ts passes them to a runtime.v1 runtime as they
// are; docker.ts is the built-in shim (pause container = sandbox, the dockershim's names and
// labels); lib/testing/fake-runtime.ts records them.
// Folder container/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import { KubeletError } from "../api/types.ts";
import type { ContainerConfig, PodSandboxConfig } from "./cri-types.ts";

/** Labels the kubelet sets on its containers (the dockershim names log shippers parse). */
export const LABEL = {
  podName: "io.kubernetes.pod.name",
  podNamespace: "io.kubernetes.pod.namespace",
  podUid: "io.kubernetes.pod.uid",
  containerName: "io.kubernetes.container.name",
  containerHash: "io.kubernetes.container.hash",
  restartCount: "io.kubernetes.container.restartCount",
  /** "podsandbox" for the pause container, "container" for app and init containers. */
  containerType: "io.kubernetes.docker.type",
  /** "true" on init containers. */
  initContainer: "io.kubernetes.container.init",
  terminationGracePeriod: "io.kubernetes.pod.terminationGracePeriod",
  /** The container's terminationMessagePath and terminationMessagePolicy (dockershim's labels). */
  terminationMessagePath: "io.kubernetes.container.terminationMessagePath",
  terminationMessagePolicy: "io.kubernetes.container.terminationMessagePolicy",
  /** JSON of the pod's spec hash and source, so a restarted kubelet can tell what it ran. */
  podHash: "io.kubernetes.pod.hash",
  /** A short hash per field of the container spec (or of the sandbox), so `kubelet plan` can name what changed. */
  fieldHashes: "kubelet.io/field-hashes",
} as const;

/** Container name of the pod infra ("pause") container in names and labels. */
export const POD_INFRA_CONTAINER_NAME = "POD";

/** The CRI's ContainerState: the Docker adapter maps the Engine's states onto it (as the dockershim did). */
export type ContainerState = "CONTAINER_CREATED" | "CONTAINER_RUNNING" | "CONTAINER_EXITED" | "CONTAINER_UNKNOWN";

/** A container as listed: enough to match it to a pod. */
export interface ContainerSummary {
  id: string;
  /** Name without Docker's leading slash, e.g. `k8s_web_nginx_default_<uid>_0`. */
  name: string;
  /** The sandbox it runs in (the CRI's pod_sandbox_id; Docker: the pause container its network mode joins). */
  podSandboxId: string;
  labels: Record<string, string>;
  image: string;
  imageId: string;
  state: ContainerState;
  /** Creation time, ms since the epoch. */
  createdAt: number;
  /** Bytes in the container's writable layer; only when listed with `size` (costly: the daemon walks the layer). */
  sizeRwBytes?: number;
  /**
   * The runtime's name, the scheme of the container's id in pod statuses (`containerd://<id>`, as the Go
   * kubelet's ContainerID.Type); absent means "docker".
   */
  runtimeName?: string;
}

/**
 * A container as inspected: state details for statuses, restarts and back-off. Its sandbox is the listing's only:
 * the CRI's ContainerStatus does not carry it.
 */
export interface ContainerDetails extends Omit<ContainerSummary, "podSandboxId"> {
  running: boolean;
  exitCode: number;
  /** ISO times; undefined when the container never started / has not finished. */
  startedAt?: string;
  finishedAt?: string;
  oomKilled: boolean;
  /** Docker's error text when start failed. */
  error?: string;
  pid: number;
  /** Host path of the container's log file (json-file driver). */
  logPath?: string;
  /** Network settings: IP of the container in its network, "" for none/host. */
  ipAddress: string;
  /** Not the runtime's: the kubelet fills it from the termination log (or the log tail) once the container is dead. */
  terminationMessage?: string;
  /** The resources it runs with, as the runtime reports them (absent when it does not). */
  resources?: LinuxResources;
}

/**
 * The Linux resources a running container can be given without a restart (the CRI's LinuxContainerResources
 * fields that an in-place resize changes; 0 = unset, as the CRI has it).
 */
export interface LinuxResources {
  cpu_period: number;
  cpu_quota: number;
  cpu_shares: number;
  memory_limit_in_bytes: number;
  /** The CPUs and NUMA memory nodes the container may use (the CPU and memory managers'); unset = all, unchanged. */
  cpuset_cpus?: string;
  cpuset_mems?: string;
}

/** Credentials for one registry, as in ~/.docker/config.json. */
export interface RegistryAuth {
  username?: string;
  password?: string;
  auth?: string;
  serveraddress?: string;
  identitytoken?: string;
}

/** One progress message of a pull in figures, where the runtime gives them (Docker's progressDetail): a layer's bytes so far of its total. */
export interface LayerProgress {
  layer?: string;
  status: string;
  current?: number;
  total?: number;
}

/** One progress message of a pull: as the runtime says it, in figures, and the bytes received so far over every layer. */
export interface PullProgress extends LayerProgress {
  /** As the runtime says it, e.g. "3f4d90098f5b: Downloading 1.2MB/4MB". */
  message: string;
  /** Bytes received so far by the whole pull. */
  bytes: number;
}

/**
 * A pull's options, passed as one object through every decorator of the port (so none can drop a
 * field): credentials, cancellation and the progress callback.
 */
export interface PullOptions {
  auth?: RegistryAuth;
  signal?: AbortSignal;
  onProgress?: (progress: PullProgress) => void;
}

/** The CRI's VersionResponse: which runtime answers, for /spec, the node record and container IDs. */
export interface RuntimeVersion {
  /** "docker", or the CRI runtime's own name ("containerd", "cri-o"). */
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** The CRI's RuntimeCondition: RuntimeReady and NetworkReady are the two the kubelet requires. */
export interface RuntimeCondition {
  type: "RuntimeReady" | "NetworkReady" | (string & {});
  status: boolean;
  /** CamelCase, set when status is false (e.g. "DockerDaemonNotReady"). */
  reason: string;
  message: string;
}

/** The CRI's RuntimeStatus: the runtime's own view of its readiness (the kubelet's runtime health). */
export interface RuntimeStatus {
  conditions: RuntimeCondition[];
  /**
   * The image the runtime runs its sandboxes from, when it says (containerd's sandbox_image, read from its
   * verbose Status info; the Docker shim's --network_container_image): image GC keeps it.
   */
  sandboxImage?: string;
}

/**
 * Facts about the machine the runtime runs containers on (for /spec, pod resource fieldRefs and the cgroup
 * driver). Not a CRI call: the Go kubelet reads them from cAdvisor, and the CRI's RuntimeConfig has the cgroup
 * driver only. The Docker shim asks the daemon (which may be another machine's, over tcp); a CRI runtime is
 * always local (unix socket), so its adapter reads this machine.
 */
export interface MachineInfo {
  os: string;
  kernelVersion: string;
  cpus: number;
  memoryBytes: number;
  hostname: string;
  /** The runtime's cgroup driver ("cgroupfs", "systemd"), when it says. */
  cgroupDriver?: string;
}

/** The CRI's Image (ImageStatus): a local image. */
export interface ImageStatus {
  id: string;
  /** repo:tag references ([] for a dangling image). */
  repoTags: string[];
  sizeBytes: number;
  /** The user the image runs as (its USER): a numeric uid, or a name; neither when it names none (root). */
  uid?: number;
  username?: string;
}

/** The CRI's FilesystemUsage of the image filesystem (ImageFsInfo): where images live and what they take. */
export interface ImageFsInfo {
  /** Mount point (Docker: its data root) of the filesystem holding images; image GC and eviction stat it. */
  mountpoint: string;
  usedBytes: number;
  /** Inodes the images use; undefined when the runtime does not say (the Docker Engine has no such figure). */
  inodesUsed?: number;
}

/** The CRI's PodSandboxState, in lower case: a sandbox is ready while its namespaces (the pause container) live. */
export type PodSandboxState = "ready" | "notready";

/** A pod sandbox as listed (the CRI's PodSandbox): the Docker shim's pause container, a CRI runtime's sandbox. */
export interface PodSandboxSummary {
  id: string;
  /** The pod it holds and its attempt (the dockershim name's last field): from the sandbox's metadata. */
  metadata: { name: string; namespace: string; uid: string; attempt: number };
  state: PodSandboxState;
  /** Creation time, ms since the epoch. */
  createdAt: number;
  /** The labels it was run with (the kubelet's io.kubernetes.* labels, its pod and field hashes). */
  labels: Record<string, string>;
}

/** A pod sandbox's status (the CRI's PodSandboxStatus). */
export interface PodSandboxDetails extends PodSandboxSummary {
  /** The pod's IP in the sandbox's network, "" for none/host. */
  ipAddress: string;
  /** As ContainerSummary's: the runtime's name; absent means "docker". */
  runtimeName?: string;
}

/** The CRI's PodSandboxFilter: one pod's sandboxes, or those in one state. */
export interface PodSandboxFilter {
  podUid?: string;
  state?: PodSandboxState;
}

/** A local image, for image garbage collection. */
export interface ImageSummary {
  id: string;
  /** repo:tag references ([] for a dangling image). */
  tags: string[];
  sizeBytes: number;
  /** ms since the epoch. */
  createdAt: number;
  /** Whether any container on the daemon (any state, the kubelet's or not) uses it. */
  inUse: boolean;
}

/** Result of running a command in a container. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** One sample of a container's resource use (Docker stats API, one-shot). */
export interface ContainerStats {
  /** ISO time of the sample. */
  time: string;
  cpuUsageNanoseconds: number;
  /** Cumulative system CPU, for rate computation; 0 when unknown. */
  systemCpuNanoseconds: number;
  memoryUsageBytes: number;
  memoryWorkingSetBytes: number;
  memoryLimitBytes: number;
  networkRxBytes: number;
  networkTxBytes: number;
  pids: number;
}

/**
 * The Go kubelet's PodLifecycleEventType (pkg/kubelet/pleg): a container (or sandbox) started, died (exited,
 * OOM-killed included), was removed, or changed otherwise (created, stopping, paused).
 */
export type LifecycleEventType = "ContainerStarted" | "ContainerDied" | "ContainerRemoved" | "ContainerChanged";

/** A lifecycle event from the runtime: the Docker adapter maps the Engine's events, a CRI runtime's are relisted. */
export interface RuntimeEvent {
  type: LifecycleEventType;
  containerId: string;
  labels: Record<string, string>;
  /** ms since the epoch. */
  time: number;
}

export interface LogOptions {
  follow?: boolean;
  /** Number of lines from the end; undefined = all. */
  tail?: number;
  timestamps?: boolean;
  /** Only lines newer than this, seconds since the epoch. */
  since?: number;
  signal?: AbortSignal;
}

/** A terminal size in characters, as the channel protocol's resize messages carry it. */
export interface TerminalSize {
  width: number;
  height: number;
}

/** Which standard streams a streamed exec or attach connects (at least one), and whether through a TTY. */
export interface StreamOptions {
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
  /** A TTY merges stderr into stdout (`stderr` is then ignored) and takes resizes. */
  tty?: boolean;
}

/** Every flag of `options` set, with stderr off under a TTY (the CRI's rule: a TTY has one output stream). */
export function streamFlags(options: StreamOptions): Required<StreamOptions> {
  const tty = options.tty ?? false;
  return { stdin: !!options.stdin, stdout: !!options.stdout, stderr: !!options.stderr && !tty, tty };
}

/** One piece of a process's output: stream 1 is stdout, 2 stderr. */
export interface OutputChunk {
  stream: 1 | 2;
  data: Uint8Array;
}

/**
 * A streamed exec or attach in progress: the process's stdin, its output in the order it was written,
 * and how it ended. Whoever opened it calls close() when done (or when its client leaves).
 */
export interface StreamSession {
  /** Output until the process (exec) or the container (attach) ends its streams, or close(). */
  output: AsyncIterable<OutputChunk>;
  /** Bytes to the process's stdin; ignored when opened without stdin. */
  write(data: Uint8Array): void;
  /** Closes stdin: the process reads end of file. */
  closeStdin(): void;
  /** Resizes the TTY; ignored without one. */
  resize(size: TerminalSize): void;
  /**
   * Settles once the output ended: the exec'ed command's exit code, or undefined for an attach (the
   * container's streams closed) and for a session closed early. Rejects when the runtime failed the stream.
   */
  exit: Promise<number | undefined>;
  /** Ends the session and releases its connection to the runtime. */
  close(): void;
}

/**
 * One forwarded TCP connection to a port inside a pod's network namespace (the CRI's PortForward, one per
 * connection). Whoever opened it calls close() when done.
 */
export interface PortForwardStream {
  /** Bytes from the pod's port, until it closes its side (or close()). */
  output: AsyncIterable<Uint8Array>;
  /** Bytes to the pod's port; resolves once more can be written. */
  write(data: Uint8Array): Promise<void>;
  /** The client's end of file: the pod's side reads it, and may still answer. */
  closeWrite(): void;
  /** Settles once the connection is over; rejects with why it failed (nothing listening on the port). */
  done: Promise<void>;
  close(): void;
}

/** The streaming calls of the port: exec and attach with live stdin/stdout/stderr (the CRI's Exec and Attach). */
export interface StreamingRuntime {
  /** Starts `cmd` in a running container with its streams connected; NotFound, or Conflict when it is not running. */
  execStream(id: string, cmd: string[], options: StreamOptions): Promise<StreamSession>;
  /** Connects to the streams of a running container's main process. */
  attach(id: string, options: StreamOptions): Promise<StreamSession>;
  /**
   * Connects to `port` on localhost in a ready sandbox's network (the host's for a host-network pod): the CRI's
   * PortForward. NotFound for no such sandbox; the stream's `done` rejects when nothing listens there.
   */
  portForward(podSandboxId: string, port: number): Promise<PortForwardStream>;
}

/**
 * The codes the port's calls fail with (a KubeletError's `code`): RuntimeUnavailable (the runtime does not
 * answer), NotFound (no such sandbox, container or image), Conflict (name in use, or the wrong state),
 * ImagePullFailed, ExecTimeout (an exec outlived its timeout), Aborted (cancelled) and RuntimeError (anything else).
 */
export type RuntimeErrorCode =
  | "RuntimeUnavailable"
  | "NotFound"
  | "Conflict"
  | "ImagePullFailed"
  | "ExecTimeout"
  | "Aborted"
  /** The runtime does not serve the call (a CRI method newer than it, such as GetContainerEvents before containerd 1.7). */
  | "Unimplemented"
  | "RuntimeError";

/** A runtime call's failure, its code one of RuntimeErrorCode. */
export function runtimeError(code: RuntimeErrorCode, message: string, options?: { cause?: unknown }): KubeletError {
  return new KubeletError(code, message, options);
}

/** Whether `error` is a runtime call's failure with `code` (errors are checked by code, never by class). */
export function isRuntimeError(error: unknown, code: RuntimeErrorCode): boolean {
  return (error as { code?: unknown } | null | undefined)?.code === code;
}

/** The runtime port. Implementations fail with runtimeError (see RuntimeErrorCode). */
export interface Runtime extends StreamingRuntime {
  /** The runtime's name and versions (CRI Version); throws RuntimeUnavailable when it does not answer. */
  version(signal?: AbortSignal): Promise<RuntimeVersion>;
  /** RuntimeReady and NetworkReady (CRI Status); throws RuntimeUnavailable when it does not answer. */
  status(signal?: AbortSignal): Promise<RuntimeStatus>;
  /** The machine's facts: see MachineInfo for why this is no CRI call. */
  machineInfo(): Promise<MachineInfo>;
  /**
   * Creates and starts a pod sandbox (Docker: the pause container) and returns its id. Conflict when the pod already
   * has a sandbox of that attempt. `runtimeHandler` is the CRI handler of the pod's RuntimeClass ("" or unset: the default).
   */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  /** Stops a sandbox's processes and tears its network down (its containers must be stopped first); idempotent. */
  stopPodSandbox(id: string): Promise<void>;
  /** Removes a sandbox (force stops it); removing a missing one is not an error. */
  removePodSandbox(id: string): Promise<void>;
  /** One sandbox's status; NotFound when there is no such sandbox. */
  podSandboxStatus(id: string): Promise<PodSandboxDetails>;
  /** The kubelet's own sandboxes, ready and not; filtered by pod uid or state. */
  listPodSandboxes(filter?: PodSandboxFilter): Promise<PodSandboxSummary[]>;
  /**
   * The kubelet's own containers only (name `k8s_…` with a pod uid label; never a sandbox), running and dead; one
   * pod's with `podUid`.
   */
  listContainers(options?: { podUid?: string; size?: boolean }): Promise<ContainerSummary[]>;
  /**
   * The last full listing the runtime holds (its PLEG's relist's, or a reader's), each half present only while
   * nothing can have changed since it began: no change of the kubelet's, no event of the runtime's stream, and, where
   * no stream keeps it current, begun at most `maxAgeMs` ago (shared-listing.ts). Absent where none is kept (Docker).
   */
  lastListing?(maxAgeMs: number): { sandboxes?: PodSandboxSummary[]; containers?: ContainerSummary[] };
  /** One container's details; NotFound for a missing container (and for a sandbox's id). */
  inspectContainer(id: string): Promise<ContainerDetails>;
  /** Creates a container in a sandbox (`sandboxConfig` is the one it was run with) and returns its id. */
  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string>;
  startContainer(id: string): Promise<void>;
  /**
   * SIGTERM (or the image's stop signal), then SIGKILL after `graceSeconds`. Stopping a stopped container is not an
   * error.
   */
  stopContainer(id: string, graceSeconds: number): Promise<void>;
  /** Changes a running container's cpu and memory in place (Docker's container update, the CRI's UpdateContainerResources). */
  updateContainerResources(id: string, resources: LinuxResources): Promise<void>;
  /** Removes a container (force kills a running one). Removing a missing container is not an error. */
  removeContainer(id: string): Promise<void>;
  /** The local image `ref` names (CRI ImageStatus), or undefined when it is not present. */
  imageStatus(ref: string): Promise<ImageStatus | undefined>;
  /** The image filesystem (CRI ImageFsInfo). */
  imageFsInfo(): Promise<ImageFsInfo>;
  /**
   * Pulls an image; `options.onProgress` hears every progress message when the runtime reports any
   * (see reportsPullProgress), so a caller can cancel, through `options.signal`, a pull that stopped
   * moving. Throws ImagePullFailed.
   */
  pullImage(ref: string, options?: PullOptions): Promise<void>;
  /**
   * Whether pullImage reports progress as the pull moves (the Docker Engine does, layer by layer); the
   * CRI's PullImage answers only when done, so a caller cannot tell a slow pull from a stalled one there.
   */
  readonly reportsPullProgress: boolean;
  /** Every local image. */
  listImages(): Promise<ImageSummary[]>;
  /** Removes an image and all its tags; Conflict when a container uses it, missing is not an error. */
  removeImage(id: string): Promise<void>;
  exec(id: string, cmd: string[], options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ExecResult>;
  /**
   * CRI ReopenContainerLog: the runtime starts a new file at the container's log path (the kubelet renamed the
   * old one). Absent on Docker, whose json-file driver rotates its own logs.
   */
  reopenContainerLog?(id: string): Promise<void>;
  /** Container output (stdout and stderr interleaved), demultiplexed. */
  logs(id: string, options?: LogOptions): AsyncIterable<Uint8Array>;
  stats(id: string): Promise<ContainerStats>;
  /** Container events until the signal aborts; the iterator ends (or throws) when the daemon goes away. */
  events(signal: AbortSignal): AsyncIterable<RuntimeEvent>;
}
