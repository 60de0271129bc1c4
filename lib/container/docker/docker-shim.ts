// The dockershim's translation: the CRI's PodSandboxConfig and ContainerConfig → Docker Engine
// create bodies. The sandbox is a pause container; names (`k8s_POD_…`, `k8s_<container>_…`) and
// labels are the dockershim's, so containers made by any earlier version are adopted as they are.
import { LABEL, POD_INFRA_CONTAINER_NAME } from "../runtime.ts";
import type { ContainerConfig, PodSandboxConfig } from "../cri-types.ts";
import { dockerName } from "../dockershim-naming.ts";

/**
 * The body of Docker Engine API `POST /containers/create` (the subset the kubelet sets),
 * plus the name. Field names are the Engine API's own.
 */
export interface ContainerCreateBody {
  name: string;
  Image: string;
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
  User?: string;
  Labels: Record<string, string>;
  Tty?: boolean;
  OpenStdin?: boolean;
  StdinOnce?: boolean;
  Hostname?: string;
  ExposedPorts?: Record<string, Record<string, never>>;
  HostConfig: {
    NetworkMode?: string;
    IpcMode?: string;
    PidMode?: string;
    Binds?: string[];
    /** Host devices (a device plugin's DeviceSpecs). */
    Devices?: Array<{ PathOnHost: string; PathInContainer: string; CgroupPermissions: string }>;
    /** CDI devices, resolved by a Docker Engine with CDI enabled (the "cdi" driver). */
    DeviceRequests?: Array<{ Driver: string; DeviceIDs: string[] }>;
    PortBindings?: Record<string, Array<{ HostIp?: string; HostPort: string }>>;
    Memory?: number;
    MemorySwap?: number;
    CpuQuota?: number;
    CpuPeriod?: number;
    CpuShares?: number;
    /** The CPU and memory managers' cpusets ("0-1"). */
    CpusetCpus?: string;
    CpusetMems?: string;
    Privileged?: boolean;
    ReadonlyRootfs?: boolean;
    CapAdd?: string[];
    CapDrop?: string[];
    GroupAdd?: string[];
    /** no-new-privileges, seccomp=…, apparmor=… (the dockershim's security options). */
    SecurityOpt?: string[];
    /** Namespaced sysctls of the sandbox, which its containers share. */
    Sysctls?: Record<string, string>;
    OomScoreAdj?: number;
    /** The pod cgroup: a path (cgroupfs driver) or a slice name (systemd). */
    CgroupParent?: string;
    LogConfig?: { Type: string; Config?: Record<string, string> };
    /** Always "no": restarts are the kubelet's decision, never Docker's. */
    RestartPolicy?: { Name: "no" };
  };
}

/** What the shim itself is configured with (the dockershim's --pod-infra-container-image and network plugin). */
export interface DockerShimOptions {
  /** Image of the pause container that holds a sandbox's namespaces. */
  podInfraImage: string;
  /** Docker network of a sandbox that is not on the host's network ("none", "bridge", a network name). */
  podNetworkMode: string;
  /** containerLogMaxSize and containerLogMaxFiles: the json-file driver's max-size and max-file (10 MiB, 5). */
  logMaxSizeBytes?: number;
  logMaxFiles?: number;
}

/** dockershim's io.kubernetes.docker.type values: what a Docker container stands for in the CRI. */
export const CONTAINER_TYPE = { sandbox: "podsandbox", container: "container" } as const;

/**
 * Seconds the pause container gets to stop (the CRI's StopPodSandbox takes no grace period): the pod's
 * containers have stopped already, and the pause has nothing to flush.
 */
export const SANDBOX_STOP_GRACE_SECONDS = 2;

const DOCKER_SIZE_UNITS = [
  ["g", 2 ** 30],
  ["m", 2 ** 20],
  ["k", 2 ** 10],
] as const;

/** The json-file driver rotating at containerLogMaxSize and keeping containerLogMaxFiles (Docker's units are binary). */
function logConfig(shim: Partial<DockerShimOptions>): NonNullable<ContainerCreateBody["HostConfig"]["LogConfig"]> {
  const bytes = shim.logMaxSizeBytes ?? 10 * 2 ** 20;
  const [unit, scale] = DOCKER_SIZE_UNITS.find(([, scale]) => bytes % scale === 0) ?? ["", 1];
  return {
    Type: "json-file",
    Config: { "max-size": `${bytes / scale}${unit}`, "max-file": String(shim.logMaxFiles ?? 5) },
  };
}

/** A sandbox → its pause container. */
export function sandboxBody(config: PodSandboxConfig, shim: DockerShimOptions): ContainerCreateBody {
  const namespaces = config.linux?.security_context?.namespace_options ?? {};
  const hostNetwork = namespaces.network === "NODE";
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: NonNullable<ContainerCreateBody["HostConfig"]["PortBindings"]> = {};
  for (const port of config.port_mappings ?? []) {
    const key = `${port.container_port}/${(port.protocol ?? "TCP").toLowerCase()}`;
    exposed[key] = {};
    (bindings[key] ??= []).push({ HostIp: port.host_ip ?? "", HostPort: String(port.host_port ?? 0) });
  }
  const resources = config.linux?.resources ?? {};
  return {
    name: dockerName(config, POD_INFRA_CONTAINER_NAME, config.metadata.attempt),
    Image: shim.podInfraImage,
    Labels: { ...config.labels, [LABEL.containerType]: CONTAINER_TYPE.sandbox },
    // Without a network of its own, Docker gives the container no UTS namespace to name.
    ...(hostNetwork || shim.podNetworkMode === "none" || !config.hostname ? {} : { Hostname: config.hostname }),
    ...(Object.keys(exposed).length ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      NetworkMode: hostNetwork ? "host" : shim.podNetworkMode,
      IpcMode: namespaces.ipc === "NODE" ? "host" : "shareable",
      ...(namespaces.pid === "NODE" ? { PidMode: "host" } : {}),
      ...(Object.keys(bindings).length ? { PortBindings: bindings } : {}),
      ...(resources.cpu_shares ? { CpuShares: resources.cpu_shares } : {}),
      ...(resources.oom_score_adj !== undefined ? { OomScoreAdj: resources.oom_score_adj } : {}),
      ...(config.linux?.cgroup_parent ? { CgroupParent: config.linux.cgroup_parent } : {}),
      ...(config.linux?.sysctls && Object.keys(config.linux.sysctls).length ? { Sysctls: config.linux.sysctls } : {}),
      LogConfig: logConfig(shim),
    },
  };
}

/**
 * A container's security options in Docker's words, as the dockershim wrote them: no-new-privileges, seccomp
 * (RuntimeDefault is Docker's own default profile, Localhost the profile's JSON, read by the caller) and AppArmor.
 */
export function securityOpts(config: ContainerConfig, seccompJson?: string): string[] {
  const security = config.linux?.security_context ?? {};
  const options = security.no_new_privs ? ["no-new-privileges"] : [];
  if (security.seccomp?.profile_type === "Unconfined") options.push("seccomp=unconfined");
  if (security.seccomp?.profile_type === "Localhost") options.push(`seccomp=${seccompJson}`);
  if (security.apparmor?.profile_type === "Unconfined") options.push("apparmor=unconfined");
  if (security.apparmor?.profile_type === "Localhost") options.push(`apparmor=${security.apparmor.localhost_ref}`);
  return options;
}

/** An app or init container → a Docker container joined to the pause container's namespaces. */
export function containerBody(
  sandboxId: string,
  config: ContainerConfig,
  sandbox: PodSandboxConfig,
  seccompJson?: string,
  shim: Partial<DockerShimOptions> = {},
): ContainerCreateBody {
  const options = securityOpts(config, seccompJson);
  const resources = config.linux?.resources ?? {};
  const security = config.linux?.security_context ?? {};
  const user = security.run_as_user
    ? `${security.run_as_user.value}${security.run_as_group ? `:${security.run_as_group.value}` : ""}`
    : security.run_as_username;
  const memory = resources.memory_limit_in_bytes;
  const add = security.capabilities?.add_capabilities ?? [];
  const drop = security.capabilities?.drop_capabilities ?? [];
  const groups = security.supplemental_groups ?? [];
  return {
    name: dockerName(sandbox, config.metadata.name, config.metadata.attempt),
    Image: config.image.image,
    ...(config.command ? { Entrypoint: config.command } : {}),
    // A command without args must clear the image's Cmd, not inherit it.
    ...(config.args ? { Cmd: config.args } : config.command ? { Cmd: [] } : {}),
    Env: (config.envs ?? []).map((e) => `${e.key}=${e.value}`),
    ...(config.working_dir ? { WorkingDir: config.working_dir } : {}),
    ...(user ? { User: user } : {}),
    // Docker has no annotations: the dockershim kept them as `annotation.<key>` labels (makeLabels).
    Labels: {
      ...config.labels,
      ...Object.fromEntries(Object.entries(config.annotations ?? {}).map(([k, v]) => [`annotation.${k}`, v])),
      [LABEL.containerType]: CONTAINER_TYPE.container,
    },
    ...(config.tty ? { Tty: true } : {}),
    ...(config.stdin ? { OpenStdin: true, StdinOnce: config.stdin_once ?? false } : {}),
    HostConfig: {
      NetworkMode: `container:${sandboxId}`,
      IpcMode: `container:${sandboxId}`,
      ...(security.namespace_options?.pid === "NODE"
        ? { PidMode: "host" }
        : security.namespace_options?.pid === "POD"
          ? { PidMode: `container:${sandboxId}` }
          : {}),
      Binds: (config.mounts ?? []).map(bind),
      ...(config.devices?.length
        ? {
            Devices: config.devices.map((d) => ({
              PathOnHost: d.host_path,
              PathInContainer: d.container_path,
              CgroupPermissions: d.permissions,
            })),
          }
        : {}),
      ...(config.CDI_devices?.length
        ? { DeviceRequests: [{ Driver: "cdi", DeviceIDs: config.CDI_devices.map((d) => d.name) }] }
        : {}),
      ...(memory ? { Memory: memory, MemorySwap: memory } : {}),
      ...(resources.cpu_quota ? { CpuQuota: resources.cpu_quota, CpuPeriod: resources.cpu_period } : {}),
      ...(resources.cpu_shares !== undefined ? { CpuShares: resources.cpu_shares } : {}),
      ...(resources.cpuset_cpus ? { CpusetCpus: resources.cpuset_cpus } : {}),
      ...(resources.cpuset_mems ? { CpusetMems: resources.cpuset_mems } : {}),
      ...(resources.oom_score_adj !== undefined ? { OomScoreAdj: resources.oom_score_adj } : {}),
      ...(sandbox.linux?.cgroup_parent ? { CgroupParent: sandbox.linux.cgroup_parent } : {}),
      ...(security.privileged ? { Privileged: true } : {}),
      ...(security.readonly_rootfs ? { ReadonlyRootfs: true } : {}),
      ...(add.length ? { CapAdd: add } : {}),
      ...(drop.length ? { CapDrop: drop } : {}),
      ...(groups.length ? { GroupAdd: groups.map(String) } : {}),
      ...(options.length ? { SecurityOpt: options } : {}),
      LogConfig: logConfig(shim),
    },
  };
}

/** A CRI mount → a Docker bind: `host:container[:ro][,rslave|rshared]`, as the dockershim wrote them. */
function bind(m: NonNullable<ContainerConfig["mounts"]>[number]): string {
  const options = [
    ...(m.readonly ? ["ro"] : []),
    ...(m.propagation === "PROPAGATION_HOST_TO_CONTAINER" ? ["rslave"] : []),
    ...(m.propagation === "PROPAGATION_BIDIRECTIONAL" ? ["rshared"] : []),
  ];
  return `${m.host_path}:${m.container_path}${options.length ? `:${options.join(",")}` : ""}`;
}
