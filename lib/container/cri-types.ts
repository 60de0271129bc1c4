// runtime.v1 messages in plain data, with the CRI's own snake_case names (the gRPC client passes
// them as they are): only the fields the kubelet sets or reads. See cri-proto.ts.
import type { LinuxResources, StreamOptions } from "./runtime.ts";

export type NamespaceMode = "POD" | "CONTAINER" | "NODE" | "TARGET";
export type SandboxState = "SANDBOX_READY" | "SANDBOX_NOTREADY";
export type CriContainerState = "CONTAINER_CREATED" | "CONTAINER_RUNNING" | "CONTAINER_EXITED" | "CONTAINER_UNKNOWN";

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
}

/** A seccomp or AppArmor profile (runtime.v1 SecurityProfile); Localhost names a file (seccomp) or a loaded profile. */
export interface SecurityProfile {
  profile_type: "RuntimeDefault" | "Unconfined" | "Localhost";
  localhost_ref?: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  log_directory?: string;
  dns_config?: { servers?: string[]; searches?: string[]; options?: string[] };
  port_mappings?: Array<{
    protocol?: "TCP" | "UDP" | "SCTP";
    container_port: number;
    host_port?: number;
    host_ip?: string;
  }>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: {
    cgroup_parent?: string;
    security_context?: {
      namespace_options?: NamespaceOption;
      privileged?: boolean;
      supplemental_groups?: number[];
      seccomp?: SecurityProfile;
    };
    sysctls?: Record<string, string>;
    /** The sandbox's own share and oom_score_adj (the Docker shim applies them to the pause container). */
    resources?: { cpu_shares?: number; oom_score_adj?: number };
  };
}

export interface CriMount {
  container_path: string;
  host_path: string;
  readonly?: boolean;
  propagation?: "PROPAGATION_PRIVATE" | "PROPAGATION_HOST_TO_CONTAINER" | "PROPAGATION_BIDIRECTIONAL";
}

export interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string };
  command?: string[];
  args?: string[];
  working_dir?: string;
  envs?: Array<{ key: string; value: string }>;
  mounts?: CriMount[];
  /** Host devices (a device plugin's DeviceSpecs): path in the container, on the host, cgroup permissions "rwm". */
  devices?: Array<{ container_path: string; host_path: string; permissions: string }>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  log_path?: string;
  stdin?: boolean;
  stdin_once?: boolean;
  tty?: boolean;
  linux?: {
    resources?: {
      cpu_period?: number;
      cpu_quota?: number;
      cpu_shares?: number;
      memory_limit_in_bytes?: number;
      oom_score_adj?: number;
      memory_swap_limit_in_bytes?: number;
      cpuset_cpus?: string;
      cpuset_mems?: string;
      /** cgroup v2 files → values (memory.oom.group, memory.high): the kubelet's unified map. */
      unified?: Record<string, string>;
    };
    security_context?: {
      capabilities?: { add_capabilities?: string[]; drop_capabilities?: string[] };
      privileged?: boolean;
      namespace_options?: NamespaceOption;
      run_as_user?: { value: number };
      run_as_username?: string;
      run_as_group?: { value: number };
      readonly_rootfs?: boolean;
      supplemental_groups?: number[];
      no_new_privs?: boolean;
      masked_paths?: string[];
      readonly_paths?: string[];
      seccomp?: SecurityProfile;
      apparmor?: SecurityProfile;
    };
  };
  /** Fully qualified CDI device names (vendor.com/class=name) the runtime resolves from its CDI specs. */
  CDI_devices?: Array<{ name: string }>;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: SandboxState;
  /** Nanoseconds since the epoch. */
  created_at: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface PodSandboxStatus extends PodSandbox {
  network?: { ip: string } | null;
}

export interface CriContainer {
  id: string;
  pod_sandbox_id: string;
  metadata: { name: string; attempt: number };
  image: { image: string } | null;
  image_ref: string;
  state: CriContainerState;
  created_at: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The CRI's ContainerEventType: what happened to the container (or sandbox) an event names. */
export type CriContainerEventType =
  | "CONTAINER_CREATED_EVENT"
  | "CONTAINER_STARTED_EVENT"
  | "CONTAINER_STOPPED_EVENT"
  | "CONTAINER_DELETED_EVENT";

/** One ContainerEventResponse of GetContainerEvents: the container's (or sandbox's) event and its pod's statuses. */
export interface CriContainerEvent {
  container_id: string;
  container_event_type: CriContainerEventType;
  /** Nanoseconds since the epoch. */
  created_at: number;
  pod_sandbox_status: PodSandboxStatus | null;
  containers_statuses: CriContainerStatus[];
}

export interface CriContainerStatus {
  id: string;
  metadata: { name: string; attempt: number };
  state: CriContainerState;
  created_at: number;
  started_at: number;
  finished_at: number;
  exit_code: number;
  image: { image: string } | null;
  image_ref: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  log_path: string;
  /** The resources it runs with, when the runtime reports them (containerd 1.7 and later). */
  resources?: { linux?: LinuxResources | null } | null;
}

export interface CriImage {
  id: string;
  repo_tags: string[];
  repo_digests: string[];
  size: number;
  uid?: { value: number } | null;
  username?: string;
}

export interface CriContainerStats {
  attributes: { id: string } | null;
  cpu: { timestamp: number; usage_core_nano_seconds: { value: number } | null } | null;
  memory: { timestamp: number; working_set_bytes: { value: number } | null } | null;
  writable_layer: { used_bytes: { value: number } | null } | null;
}

export interface CriRuntimeStatus {
  conditions: Array<{ type: string; status: boolean; reason: string; message: string }>;
  /** The verbose answer's extra information: containerd puts its CRI plugin's config (JSON) under "config". */
  info: Record<string, string>;
}

export interface CriFilesystemUsage {
  fs_id: { mountpoint: string } | null;
  used_bytes: { value: number } | null;
  inodes_used: { value: number } | null;
}

export interface CriAuth {
  username?: string;
  password?: string;
  auth?: string;
  server_address?: string;
  identity_token?: string;
}

/** The CRI's RuntimeService and ImageService as promises: what the gRPC client offers. */
export interface CriClient {
  /** The socket(s) it talks to, for messages. */
  readonly endpoint: string;
  version(
    signal?: AbortSignal,
  ): Promise<{ runtime_name: string; runtime_version: string; runtime_api_version: string }>;
  status(signal?: AbortSignal): Promise<CriRuntimeStatus>;
  /** Runs a sandbox with the runtime handler (a RuntimeClass's; "" the runtime's default). */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  podSandboxStatus(id: string): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: {
    id?: string;
    state?: SandboxState;
    labelSelector?: Record<string, string>;
  }): Promise<PodSandbox[]>;
  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string>;
  startContainer(id: string): Promise<void>;
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  removeContainer(id: string): Promise<void>;
  listContainers(labelSelector?: Record<string, string>): Promise<CriContainer[]>;
  containerStatus(id: string): Promise<CriContainerStatus>;
  updateContainerResources(id: string, linux: LinuxResources): Promise<void>;
  /** Runs a command; past `timeoutMs` (0: none) rejects with ExecTimeout. */
  execSync(
    id: string,
    cmd: string[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<{ stdout: Uint8Array; stderr: Uint8Array; exit_code: number }>;
  /** Exec: the URL of the runtime's streaming server to run `cmd` at (one use, within minutes). */
  exec(id: string, cmd: string[], streams: Required<StreamOptions>): Promise<string>;
  /** Attach: the streaming server's URL for the container's own streams. */
  attach(id: string, streams: Required<StreamOptions>): Promise<string>;
  /** The streaming server URL of a port forward to `ports` of a sandbox (one connection per port). */
  portForward(podSandboxId: string, ports: number[]): Promise<string>;
  /** Stats of the containers that match (of one container when `id` is given), in one call. */
  listContainerStats(filter?: { id?: string }): Promise<CriContainerStats[]>;
  /** ReopenContainerLog: the runtime writes the container's output to a new file at its log path. */
  reopenContainerLog(id: string): Promise<void>;
  /**
   * GetContainerEvents: the runtime's container events until the signal aborts (`opened` is told once the stream is
   * open); fails with Unimplemented where the runtime does not serve it (containerd before 1.7), and with
   * RuntimeUnavailable when the stream breaks or ends.
   */
  containerEvents(signal: AbortSignal, opened?: () => void): AsyncIterable<CriContainerEvent>;
  /** The image, or undefined when it is not present. */
  imageStatus(image: string): Promise<CriImage | undefined>;
  /** Options as one object, as the port's pullImage takes them. */
  pullImage(image: string, options?: { auth?: CriAuth; signal?: AbortSignal }): Promise<string>;
  listImages(): Promise<CriImage[]>;
  /** Removes an image by id or reference; a missing one is not an error (the CRI's rule). */
  removeImage(image: string): Promise<void>;
  /** Usage of the filesystems holding images (the image filesystems). */
  imageFsInfo(): Promise<CriFilesystemUsage[]>;
  close(): void;
}
