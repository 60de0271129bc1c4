// Pure: a pod and one of its containers → the Docker create body, with the dockershim names and
// labels, Kubernetes `$(VAR)` expansion, downward-API env, resources and security settings.
import { LABEL, POD_INFRA_CONTAINER_NAME, type ContainerCreateBody } from "./runtime.ts";
import { expand } from "../api/expand.ts";
import { containerFieldHashes, containerHash, podSandboxHash, sandboxFieldHashes } from "../api/hash.ts";
import { containerOomScoreAdj, POD_INFRA_OOM_SCORE_ADJ } from "../api/qos.ts";
import { milliCpu, parseQuantity } from "../api/quantity.ts";
import { KubeletError, ANNOTATION, type Pod, type V1Container } from "../api/types.ts";
import { configBytes, type ConfigKind, type ConfigLookup } from "../api/config-objects.ts";
import { isEnvVarName } from "../api/validation.ts";

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
  pauseImage: string;
  allowPrivileged: boolean;
  volumePaths: Map<string, VolumeMount>;
  node: { cpus: number; memoryBytes: number };
  /** ConfigMaps and Secrets for env and envFrom. */
  configs: ConfigLookup;
  /** HostConfig.CgroupParent of every container of the pod (its pod cgroup); unset = Docker's default. */
  cgroupParent?: string;
  /** The lowest oom_score_adj the kernel lets the runtime set here (0 where negative values are refused). */
  oomScoreAdjMin?: number;
  /** cpuCFSQuota and cpuCFSQuotaPeriod (µs); quota on by default with a 100 ms period. */
  cfsQuota?: boolean;
  cfsPeriodUs?: number;
  /** The pod's resolv.conf on the host, mounted at /etc/resolv.conf of its containers. */
  resolvConfPath?: string;
}

/** `k8s_<container>_<pod>_<namespace>_<uid>_<attempt>`, the dockershim name. */
export function containerName(pod: Pod, container: string, attempt: number): string {
  return `k8s_${container}_${pod.metadata.name}_${pod.metadata.namespace}_${pod.metadata.uid}_${attempt}`;
}

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

const LOG_CONFIG = { Type: "json-file", Config: { "max-size": "10m", "max-file": "2" } };

/** The pod infra container: owns the network and IPC namespaces and every host port of the pod. */
export function buildPauseContainer(pod: Pod, ctx: PodContext): ContainerCreateBody {
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, Array<{ HostIp?: string; HostPort: string }>> = {};
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const port of c.ports ?? []) {
      if (!port.hostPort || pod.spec.hostNetwork) continue;
      const key = `${port.containerPort}/${(port.protocol ?? "TCP").toLowerCase()}`;
      exposed[key] = {};
      (bindings[key] ??= []).push({ HostIp: port.hostIP ?? "", HostPort: String(port.hostPort) });
    }
  }
  const hostNetwork = pod.spec.hostNetwork === true;
  return {
    name: containerName(pod, POD_INFRA_CONTAINER_NAME, 0),
    Image: ctx.pauseImage,
    Labels: {
      ...podLabels(pod),
      [LABEL.containerName]: POD_INFRA_CONTAINER_NAME,
      [LABEL.containerType]: "podsandbox",
      [LABEL.podHash]: podSandboxHash(pod, ctx.networkMode),
      [LABEL.fieldHashes]: sandboxFieldHashes(pod, ctx.networkMode),
    },
    ...(hostNetwork || ctx.networkMode === "none" ? {} : { Hostname: pod.spec.hostname ?? pod.metadata.name }),
    ...(Object.keys(exposed).length ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      NetworkMode: hostNetwork ? "host" : ctx.networkMode,
      IpcMode: pod.spec.hostIPC ? "host" : "shareable",
      ...(pod.spec.hostPID ? { PidMode: "host" } : {}),
      ...(Object.keys(bindings).length ? { PortBindings: bindings } : {}),
      CpuShares: 2,
      OomScoreAdj: Math.max(ctx.oomScoreAdjMin ?? -1000, POD_INFRA_OOM_SCORE_ADJ),
      ...(ctx.cgroupParent ? { CgroupParent: ctx.cgroupParent } : {}),
      LogConfig: LOG_CONFIG,
    },
  };
}

/** An app or init container, joined to the pause container's namespaces. */
export function buildContainer(
  pod: Pod,
  container: V1Container,
  ctx: PodContext & { pauseId: string; attempt: number; init: boolean },
): ContainerCreateBody {
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
  const user = security.runAsUser ?? podSecurity.runAsUser;
  const group = security.runAsGroup ?? podSecurity.runAsGroup;
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const memory = limits.memory !== undefined ? Math.round(parseQuantity(limits.memory)!) : undefined;
  const cpuLimit = limits.cpu !== undefined ? milliCpu(limits.cpu)! : undefined;
  const cpuRequest = requests.cpu !== undefined ? milliCpu(requests.cpu)! : cpuLimit;
  const capability = (name: string) => name.replace(/^CAP_/i, "").toUpperCase();
  const period = ctx.cfsPeriodUs ?? 100_000;
  return {
    name: containerName(pod, container.name, ctx.attempt),
    Image: container.image!,
    ...(container.command ? { Entrypoint: container.command.map((a) => expand(a, lookup)) } : {}),
    ...(container.args ? { Cmd: container.args.map((a) => expand(a, lookup)) } : container.command ? { Cmd: [] } : {}),
    Env: [...env].map(([name, value]) => `${name}=${value}`),
    ...(container.workingDir ? { WorkingDir: container.workingDir } : {}),
    ...(user !== undefined ? { User: group !== undefined ? `${user}:${group}` : String(user) } : {}),
    Labels: {
      ...podLabels(pod),
      [LABEL.containerName]: container.name,
      [LABEL.containerType]: "container",
      [LABEL.containerHash]: containerHash(container),
      [LABEL.fieldHashes]: containerFieldHashes(container),
      [LABEL.restartCount]: String(ctx.attempt),
      ...(ctx.init ? { [LABEL.initContainer]: "true" } : {}),
    },
    ...(container.tty ? { Tty: true } : {}),
    ...(container.stdin ? { OpenStdin: true, StdinOnce: container.stdinOnce ?? false } : {}),
    HostConfig: {
      NetworkMode: `container:${ctx.pauseId}`,
      IpcMode: `container:${ctx.pauseId}`,
      ...(pod.spec.hostPID ? { PidMode: "host" } : {}),
      Binds: [
        ...binds(container, ctx.volumePaths),
        ...(ctx.resolvConfPath && !mountsAt(container, "/etc/resolv.conf")
          ? [`${ctx.resolvConfPath}:/etc/resolv.conf:ro`]
          : []),
      ],
      ...(memory !== undefined ? { Memory: memory, MemorySwap: memory } : {}),
      ...(cpuLimit !== undefined && ctx.cfsQuota !== false
        ? { CpuQuota: Math.max(1000, Math.floor((cpuLimit * period) / 1000)), CpuPeriod: period }
        : {}),
      CpuShares: Math.max(2, Math.floor(((cpuRequest ?? 0) * 1024) / 1000)),
      OomScoreAdj: Math.max(ctx.oomScoreAdjMin ?? -1000, containerOomScoreAdj(pod, container, ctx.node.memoryBytes)),
      ...(ctx.cgroupParent ? { CgroupParent: ctx.cgroupParent } : {}),
      ...(security.privileged ? { Privileged: true } : {}),
      ...(security.readOnlyRootFilesystem ? { ReadonlyRootfs: true } : {}),
      ...(security.capabilities?.add?.length ? { CapAdd: security.capabilities.add.map(capability) } : {}),
      ...(security.capabilities?.drop?.length ? { CapDrop: security.capabilities.drop.map(capability) } : {}),
      ...(podSecurity.supplementalGroups?.length ? { GroupAdd: podSecurity.supplementalGroups.map(String) } : {}),
      LogConfig: LOG_CONFIG,
    },
  };
}

function mountsAt(container: V1Container, path: string): boolean {
  return (container.volumeMounts ?? []).some((m) => m.mountPath === path);
}

function binds(container: V1Container, volumes: Map<string, VolumeMount>): string[] {
  return (container.volumeMounts ?? []).map((mount) => {
    const volume = volumes.get(mount.name);
    if (!volume)
      throw new KubeletError("VolumeSetupFailed", `container ${container.name}: volume "${mount.name}" was not set up`);
    const host = mount.subPath ? `${volume.hostPath}/${mount.subPath}` : volume.hostPath;
    return `${host}:${mount.mountPath}${mount.readOnly ? ":ro" : ""}`;
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
    if (from?.fieldRef) value = fieldValue(pod, from.fieldRef.fieldPath, ctx);
    else if (from?.resourceFieldRef) value = resourceFieldValue(container, from.resourceFieldRef, ctx.node);
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

function fieldValue(pod: Pod, path: string, ctx: PodContext): string {
  const keyed = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(path);
  if (keyed) return (keyed[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations)?.[keyed[2]!] ?? "";
  switch (path) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace;
    case "metadata.uid":
      return pod.metadata.uid;
    case "spec.nodeName":
      return ctx.nodeName;
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "default";
    case "status.hostIP":
      return ctx.hostIP;
    case "status.podIP":
    case "status.podIPs":
      return ctx.podIP;
    default:
      throw new KubeletError("InvalidValue", `unsupported fieldRef ${path}`);
  }
}

/** A resourceFieldRef's value (env or downward API file): the container's figure, or the node's for a missing limit. */
export function resourceFieldValue(
  container: V1Container,
  ref: { resource: string; divisor?: string | number },
  node: PodContext["node"],
): string {
  const [kind, name] = ref.resource.split(".") as ["limits" | "requests", "cpu" | "memory"];
  const raw = container.resources?.[kind]?.[name];
  const value =
    raw !== undefined ? parseQuantity(raw)! : kind === "limits" ? (name === "cpu" ? node.cpus : node.memoryBytes) : 0;
  const divisor = ref.divisor !== undefined ? parseQuantity(ref.divisor) || 1 : 1;
  return String(Math.ceil(value / divisor));
}
