// Pure: a pod and one of its containers → the CRI's PodSandboxConfig and ContainerConfig, as the
// Go kubelet's kuberuntime generates them (generatePodSandboxConfig, generateContainerConfig): the
// dockershim labels, Kubernetes `$(VAR)` expansion, downward-API env, resources, security settings.
// Either runtime adapter takes these as they are (docker-shim.ts turns them into Docker bodies).
import { join } from "node:path";
import { LABEL, POD_INFRA_CONTAINER_NAME, type LinuxResources } from "./runtime.ts";
import type { ContainerConfig, NamespaceMode, PodSandboxConfig } from "./cri-types.ts";
import { expand } from "../api/expand.ts";
import { podFieldValue, resourceFieldValue, type NodeCapacity } from "../api/downward.ts";
import { containerFieldHashes, containerHash, podSandboxHash, sandboxFieldHashes } from "../api/hash.ts";
import { containerOomScoreAdj, POD_INFRA_OOM_SCORE_ADJ } from "../api/qos.ts";
import { milliCpu, parseQuantity } from "../api/quantity.ts";
import { KubeletError, ANNOTATION, type Pod, type V1Container } from "../api/types.ts";
import { configBytes, type ConfigKind, type ConfigLookup } from "../api/config-objects.ts";
import { isEnvVarName } from "../api/validation.ts";
import { sandboxHostname } from "../api/pod-hostname.ts";
import {
  appArmorProfile,
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  noNewPrivileges,
  sandboxSeccompProfile,
  seccompProfile,
  verifyRunAsNonRoot,
  type ImageUser,
  type SeccompSettings,
} from "./security-context.ts";

/** A volume as the containers of a pod see it: where it is on the host. */
export interface VolumeMount {
  hostPath: string;
}

/** What a container's configuration depends on besides the pod itself. */
export interface PodContext {
  nodeName: string;
  hostIP: string;
  /** The pause container's IP ("" for network none; hostIP for host network). */
  podIP: string;
  /** --pod_network_mode. */
  networkMode: string;
  /** --pod_logs_dir: each sandbox logs under `<dir>/<namespace>_<pod>_<uid>` (a CRI runtime writes there). */
  podLogsDir?: string;
  allowPrivileged: boolean;
  volumePaths: Map<string, VolumeMount>;
  node: NodeCapacity;
  /** ConfigMaps and Secrets for env and envFrom. */
  configs: ConfigLookup;
  /** The pod cgroup, parent of all its containers; unset = the runtime's default. */
  cgroupParent?: string;
  /** The lowest oom_score_adj the kernel lets the runtime set here (0 where negative values are refused). */
  oomScoreAdjMin?: number;
  /** cpuCFSQuota and cpuCFSQuotaPeriod (µs); quota on by default with a 100 ms period. */
  cfsQuota?: boolean;
  cfsPeriodUs?: number;
  /** The pod's resolv.conf on the host, mounted at /etc/resolv.conf of its containers. */
  resolvConfPath?: string;
  /** The pod's managed hosts file on the host, mounted at /etc/hosts of its containers. */
  hostsPath?: string;
  /** --cluster_domain, for a subdomain's FQDN (setHostnameAsFQDN). */
  clusterDomain?: string;
  /** seccompDefault and the root of Localhost profiles (unset: off, under the default root dir). */
  seccomp?: SeccompSettings;
  /** The CPU and memory managers' cpusets for a container of this pod (cpuset_cpus, cpuset_mems); unset = all. */
  cpusets?: (containerName: string) => { cpus?: string; mems?: string };
}

const DEFAULT_SECCOMP: SeccompSettings = { seccompRoot: "/var/lib/kubelet/seccomp" };

/** The pod's labels on its sandbox and every container (the dockershim's io.kubernetes.* keys). */
function podLabels(pod: Pod): Record<string, string> {
  return {
    ...(pod.metadata.labels ?? {}),
    [LABEL.podName]: pod.metadata.name,
    [LABEL.podNamespace]: pod.metadata.namespace,
    [LABEL.podUid]: pod.metadata.uid,
    [LABEL.terminationGracePeriod]: String(pod.spec.terminationGracePeriodSeconds ?? 30),
    [ANNOTATION.source]: pod.metadata.annotations[ANNOTATION.source] ?? "",
  };
}

const hostOr = (host: boolean | undefined, otherwise: NamespaceMode): NamespaceMode => (host ? "NODE" : otherwise);

/** The pod's namespaces as the CRI names them: the pod's own, or the node's with hostNetwork/IPC/PID. */
function namespaceOptions(pod: Pod) {
  return {
    network: hostOr(pod.spec.hostNetwork, "POD"),
    ipc: hostOr(pod.spec.hostIPC, "POD"),
    pid: hostOr(pod.spec.hostPID, pod.spec.shareProcessNamespace ? "POD" : "CONTAINER"),
  };
}

/** The groups every container of the pod joins: fsGroup first, then supplementalGroups (as the Go kubelet). */
function supplementalGroups(pod: Pod): number[] {
  const security = pod.spec.securityContext ?? {};
  return [...(security.fsGroup !== undefined ? [security.fsGroup] : []), ...(security.supplementalGroups ?? [])];
}

/**
 * The pod sandbox (the pause container on Docker): owns the network and IPC namespaces and every host port of the
 * pod. `attempt` counts the pod's sandboxes (a new one after the last died).
 */
export function podSandboxConfig(pod: Pod, ctx: PodContext, attempt: number): PodSandboxConfig {
  const { name, namespace, uid } = pod.metadata;
  const ports: NonNullable<PodSandboxConfig["port_mappings"]> = [];
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const port of c.ports ?? []) {
      if (!port.hostPort || pod.spec.hostNetwork) continue;
      ports.push({
        protocol: (port.protocol ?? "TCP") as "TCP",
        container_port: port.containerPort,
        host_port: port.hostPort,
        host_ip: port.hostIP ?? "",
      });
    }
  }
  return {
    metadata: { name, namespace, uid, attempt },
    // A host-network pod must leave it empty: the runtime cannot set a hostname without a private UTS namespace.
    hostname: pod.spec.hostNetwork ? "" : sandboxHostname(pod, ctx.clusterDomain ?? ""),
    ...(ctx.podLogsDir ? { log_directory: join(ctx.podLogsDir, `${namespace}_${name}_${uid}`) } : {}),
    port_mappings: ports,
    labels: {
      ...podLabels(pod),
      [LABEL.containerName]: POD_INFRA_CONTAINER_NAME,
      [LABEL.podHash]: podSandboxHash(pod, ctx.networkMode),
      [LABEL.fieldHashes]: sandboxFieldHashes(pod, ctx.networkMode),
      [LABEL.restartCount]: String(attempt),
    },
    linux: {
      ...(ctx.cgroupParent ? { cgroup_parent: ctx.cgroupParent } : {}),
      security_context: {
        namespace_options: namespaceOptions(pod),
        supplemental_groups: supplementalGroups(pod),
        seccomp: sandboxSeccompProfile(pod, ctx.seccomp ?? DEFAULT_SECCOMP),
      },
      ...(pod.spec.securityContext?.sysctls?.length
        ? { sysctls: Object.fromEntries(pod.spec.securityContext.sysctls.map((s) => [s.name, s.value])) }
        : {}),
      // The Go kubelet's sandbox shares and the infra container's oom_score_adj, above the kernel's floor here.
      resources: { cpu_shares: 2, oom_score_adj: Math.max(ctx.oomScoreAdjMin ?? -1000, POD_INFRA_OOM_SCORE_ADJ) },
    },
  };
}

/** The CRI runtime handler of the pod's runtimeClassName ("" without one: the runtime's default). */
export function runtimeHandler(pod: Pod, handlers: Record<string, string> = {}): string {
  const name = pod.spec.runtimeClassName;
  return name ? (handlers[name] ?? name) : "";
}

/** What an app or init container's config depends on besides its pod. */
export interface ContainerContext extends PodContext {
  attempt: number;
  init: boolean;
  /** Host file backing the container's terminationMessagePath. */
  terminationLog?: string;
  /** Host paths of the mounts with a subPath or subPathExpr, by mountPath, prepared by node/subpath.ts. */
  subPaths?: Map<string, string>;
  /** The user the container's image runs as, for runAsNonRoot (unset: root, so runAsNonRoot fails closed). */
  imageUser?: ImageUser;
  /** What the device plugins' Allocate answers give the container (the device manager's run options). */
  devices?: ContainerDeviceOptions;
}

/** A container's devices, mounts, envs, annotations and CDI device names from its device plugins. */
export interface ContainerDeviceOptions {
  envs: Array<{ key: string; value: string }>;
  mounts: Array<{ container_path: string; host_path: string; readonly: boolean }>;
  devices: Array<{ container_path: string; host_path: string; permissions: string }>;
  annotations: Record<string, string>;
  cdiDevices: string[];
}

/** An app or init container of the pod, created in its sandbox. */
export function containerConfig(pod: Pod, container: V1Container, ctx: ContainerContext): ContainerConfig {
  const env = resolveEnv(pod, container, ctx);
  const lookup = (name: string) => env.get(name);
  const security = container.securityContext ?? {};
  const podSecurity = pod.spec.securityContext ?? {};
  if (security.privileged && !ctx.allowPrivileged) {
    throw new KubeletError(
      "Forbidden",
      `container ${container.name}: privileged mode is disallowed (start the kubelet with --allow_privileged)`,
    );
  }
  verifyRunAsNonRoot(pod, container, ctx.imageUser ?? {});
  const apparmor = appArmorProfile(pod, container);
  const user = security.runAsUser ?? podSecurity.runAsUser;
  const group = security.runAsGroup ?? podSecurity.runAsGroup;
  const capability = (name: string) => name.replace(/^CAP_/i, "").toUpperCase();
  return {
    metadata: { name: container.name, attempt: ctx.attempt },
    image: { image: container.image! },
    ...(container.command ? { command: container.command.map((a) => expand(a, lookup)) } : {}),
    ...(container.args ? { args: container.args.map((a) => expand(a, lookup)) } : {}),
    ...(container.workingDir ? { working_dir: container.workingDir } : {}),
    // The plugins' envs and mounts come first, so the container's own settings win (GenerateRunContainerOptions).
    envs: [...(ctx.devices?.envs ?? []), ...[...env].map(([key, value]) => ({ key, value }))],
    ...(ctx.devices?.devices.length ? { devices: ctx.devices.devices } : {}),
    ...(ctx.devices?.cdiDevices.length ? { CDI_devices: ctx.devices.cdiDevices.map((name) => ({ name })) } : {}),
    ...(ctx.devices && Object.keys(ctx.devices.annotations).length ? { annotations: ctx.devices.annotations } : {}),
    mounts: [
      ...(ctx.devices?.mounts ?? []),
      ...mounts(container, ctx.volumePaths, ctx.subPaths ?? new Map(), security.privileged ?? false),
      ...(ctx.terminationLog && container.terminationMessagePath
        ? [{ host_path: ctx.terminationLog, container_path: container.terminationMessagePath }]
        : []),
      ...(ctx.resolvConfPath && !mountsAt(container, "/etc/resolv.conf")
        ? [{ host_path: ctx.resolvConfPath, container_path: "/etc/resolv.conf", readonly: true }]
        : []),
      ...(ctx.hostsPath && !mountsAt(container, "/etc/hosts")
        ? [{ host_path: ctx.hostsPath, container_path: "/etc/hosts" }]
        : []),
    ],
    labels: {
      ...podLabels(pod),
      [LABEL.containerName]: container.name,
      [LABEL.containerHash]: containerHash(container),
      [LABEL.fieldHashes]: containerFieldHashes(container),
      [LABEL.restartCount]: String(ctx.attempt),
      ...(ctx.init ? { [LABEL.initContainer]: "true" } : {}),
      ...(container.terminationMessagePath
        ? {
            [LABEL.terminationMessagePath]: container.terminationMessagePath,
            [LABEL.terminationMessagePolicy]: container.terminationMessagePolicy ?? "File",
          }
        : {}),
    },
    // Relative to the sandbox's log_directory, as the Go kubelet lays the files out.
    log_path: `${container.name}/${ctx.attempt}.log`,
    tty: container.tty ?? false,
    stdin: container.stdin ?? false,
    stdin_once: container.stdin ? (container.stdinOnce ?? false) : false,
    linux: {
      resources: {
        ...containerLinuxResources(container, ctx),
        ...containerCpusets(ctx.cpusets?.(container.name)),
        oom_score_adj: Math.max(
          ctx.oomScoreAdjMin ?? -1000,
          containerOomScoreAdj(pod, container, ctx.node.memoryBytes),
        ),
      },
      security_context: {
        privileged: security.privileged ?? false,
        readonly_rootfs: security.readOnlyRootFilesystem ?? false,
        capabilities: {
          add_capabilities: (security.capabilities?.add ?? []).map(capability),
          drop_capabilities: (security.capabilities?.drop ?? []).map(capability),
        },
        supplemental_groups: supplementalGroups(pod),
        namespace_options: namespaceOptions(pod),
        no_new_privs: noNewPrivileges(container),
        masked_paths: DEFAULT_MASKED_PATHS,
        readonly_paths: DEFAULT_READONLY_PATHS,
        seccomp: seccompProfile(pod, container, ctx.seccomp ?? DEFAULT_SECCOMP),
        ...(apparmor ? { apparmor } : {}),
        ...(user !== undefined ? { run_as_user: { value: user } } : {}),
        // A group alone is not applied: the runtime sets a group only with a user (the CRI's rule).
        ...(user !== undefined && group !== undefined ? { run_as_group: { value: group } } : {}),
      },
    },
  };
}

function mountsAt(container: V1Container, path: string): boolean {
  return (container.volumeMounts ?? []).some((m) => m.mountPath === path);
}

const PROPAGATION = {
  None: "PROPAGATION_PRIVATE",
  HostToContainer: "PROPAGATION_HOST_TO_CONTAINER",
  Bidirectional: "PROPAGATION_BIDIRECTIONAL",
} as const;

function mounts(
  container: V1Container,
  volumes: Map<string, VolumeMount>,
  subPaths: Map<string, string>,
  privileged: boolean,
): NonNullable<ContainerConfig["mounts"]> {
  return (container.volumeMounts ?? []).map((mount) => {
    const volume = volumes.get(mount.name);
    if (!volume)
      throw new KubeletError("VolumeSetupFailed", `container ${container.name}: volume "${mount.name}" was not set up`);
    if (mount.subPath || mount.subPathExpr) {
      if (!subPaths.has(mount.mountPath))
        throw new KubeletError(
          "VolumeSetupFailed",
          `container ${container.name}: subPath of "${mount.name}" was not prepared`,
        );
    }
    const propagation = mount.mountPropagation as keyof typeof PROPAGATION | undefined;
    // The API server's rule, kept here for manifests that never met one.
    if (propagation === "Bidirectional" && !privileged)
      throw new KubeletError(
        "CreateContainerConfigError",
        `container ${container.name}: volumeMount "${mount.name}": Bidirectional mount propagation is available only to privileged containers`,
      );
    if (mount.recursiveReadOnly === "Enabled")
      throw new KubeletError(
        "CreateContainerConfigError",
        `failed to resolve recursive read-only mode: volume "${mount.name}" requested recursive read-only mode, but it is not supported by the runtime`,
      );
    return {
      host_path: subPaths.get(mount.mountPath) ?? volume.hostPath,
      container_path: mount.mountPath,
      ...(mount.readOnly ? { readonly: true } : {}),
      ...(propagation && propagation !== "None" ? { propagation: PROPAGATION[propagation] } : {}),
    };
  });
}

/**
 * The container's environment in order: envFrom first, then env (which may reference earlier entries
 * with `$(NAME)`). A missing ConfigMap, Secret or key that is not optional throws
 * KubeletError("CreateContainerConfigError") with the kubelet's message.
 */
export function resolveEnv(pod: Pod, container: V1Container, ctx: PodContext): Map<string, string> {
  const env = new Map<string, string>();
  const namespace = pod.metadata.namespace;
  const lookup = (kind: ConfigKind, name: string, optional: boolean | undefined) => {
    const object = ctx.configs.get(kind, namespace, name);
    if (!object && !optional)
      throw new KubeletError(
        "CreateContainerConfigError",
        `${kind === "ConfigMap" ? "configmap" : "secret"} "${name}" not found`,
      );
    return object && configBytes(object);
  };
  for (const source of container.envFrom ?? []) {
    const [kind, ref] = source.configMapRef
      ? (["ConfigMap", source.configMapRef] as const)
      : (["Secret", source.secretRef!] as const);
    // Keys that are no valid variable names are skipped, as Kubernetes does (`validate` warns about them).
    for (const [key, value] of lookup(kind, ref.name ?? "", ref.optional) ?? [])
      if (isEnvVarName(`${source.prefix ?? ""}${key}`)) env.set(`${source.prefix ?? ""}${key}`, value.toString("utf8"));
  }
  for (const variable of container.env ?? []) {
    let value: string;
    const from = variable.valueFrom;
    const keyRef = from?.configMapKeyRef ?? from?.secretKeyRef;
    if (from?.fieldRef) {
      const field = podFieldValue(pod, from.fieldRef.fieldPath, ctx);
      if (field === undefined)
        throw new KubeletError("InvalidValue", `unsupported fieldRef ${from.fieldRef.fieldPath}`);
      value = field;
    } else if (from?.resourceFieldRef) value = resourceFieldValue(container, from.resourceFieldRef, ctx.node);
    else if (keyRef) {
      const kind = from!.configMapKeyRef ? "ConfigMap" : "Secret";
      const bytes = lookup(kind, keyRef.name ?? "", keyRef.optional)?.get(keyRef.key);
      if (bytes === undefined) {
        if (keyRef.optional) continue;
        throw new KubeletError(
          "CreateContainerConfigError",
          `couldn't find key ${keyRef.key} in ${kind} ${namespace}/${keyRef.name}`,
        );
      }
      value = bytes.toString("utf8");
    } else value = expand(variable.value ?? "", (name) => env.get(name));
    env.set(variable.name, value);
  }
  return env;
}

/** The cpusets of a container as CRI fields, only those the managers set (the Go kubelet's PreCreateContainer). */
function containerCpusets(sets: { cpus?: string; mems?: string } | undefined): Partial<LinuxResources> {
  return { ...(sets?.cpus ? { cpuset_cpus: sets.cpus } : {}), ...(sets?.mems ? { cpuset_mems: sets.mems } : {}) };
}

/**
 * A container's cpu and memory as the runtime applies them (the Go kubelet's generateLinuxContainerResources):
 * the CFS quota from the cpu limit, shares from the cpu request (the limit when unset), the memory limit in bytes.
 */
export function containerLinuxResources(
  container: V1Container,
  ctx: Pick<PodContext, "cfsQuota" | "cfsPeriodUs">,
): LinuxResources {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const memory = limits.memory !== undefined ? Math.round(parseQuantity(limits.memory)!) : 0;
  const cpuLimit = limits.cpu !== undefined ? milliCpu(limits.cpu)! : undefined;
  const cpuRequest = requests.cpu !== undefined ? milliCpu(requests.cpu)! : cpuLimit;
  const period = ctx.cfsPeriodUs ?? 100_000;
  const quota = cpuLimit !== undefined && ctx.cfsQuota !== false;
  return {
    cpu_period: quota ? period : 0,
    cpu_quota: quota ? Math.max(1000, Math.floor((cpuLimit! * period) / 1000)) : 0,
    cpu_shares: Math.max(2, Math.floor(((cpuRequest ?? 0) * 1024) / 1000)),
    memory_limit_in_bytes: memory,
  };
}
