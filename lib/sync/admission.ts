// Pod admission, the kubelet's admit handlers that apply to a standalone node: none while the node
// shuts down (the node shutdown manager's handler), the pod count
// (--max_pods, the predicate handler's "pods" resource), which sources may ask for the host's
// network, PID and IPC namespaces (--host_*_sources, the capabilities handler), the pod's OS and
// node affinity (the predicate handler), sysctls (the sysctl allowlist) and the security features the
// node lacks (AppArmor, user namespaces, SELinux: refused, never dropped). Pure: the sync loop and
// runonce decide with it and report a rejection as a Failed pod with a Warning event.
import { ANNOTATION, type Pod, type V1PodStatus } from "../api/types.ts";
import { matchesNode } from "./node-affinity.ts";
import type { SysctlAllowlist } from "./sysctls.ts";
import { insufficientResource, insufficientResourceMessage, type Requests } from "./resource-fit.ts";

/** Who may run what on this node. */
export interface AdmissionPolicy {
  /** --max_pods: admitted pods at most. */
  maxPods: number;
  /** --host_network_sources, --host_pid_sources, --host_ipc_sources: source names, "*" = all. */
  hostNetworkSources: string[];
  hostPidSources: string[];
  hostIpcSources: string[];
  /**
   * The node's allocatable cpu and memory (capacity less reserved and the hard memory eviction threshold), and
   * ephemeral-storage with localStorageCapacityIsolation (root_dir's filesystem less reserved and nodefs.available).
   */
  allocatable?: Requests;
  /** The node's name and labels (--node_labels and the well-known ones) for nodeSelector and node affinity. */
  node?: { name: string; labels: Record<string, string> };
  /** The safe sysctls and --allowed_unsafe_sysctls. */
  sysctls?: SysctlAllowlist;
  /** What the host and runtime support: AppArmor, user namespaces (hostUsers: false), SELinux labels. */
  features?: { appArmor: boolean; userNamespaces: boolean; seLinux: boolean };
  /** From systemd-logind's PrepareForShutdown(true) until a cancelling PrepareForShutdown(false). */
  nodeShuttingDown?: () => boolean;
  /**
   * The resource allocator, one admit handler as upstream's topology manager is: it aligns the pod and has every
   * hint provider (devices, then CPUs and memory; node/cm/resource-managers.ts) allocate, or refuses it
   * (TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError, OutOf<resource>). With no resource
   * manager configured it is the device manager's admission alone. Asked last, once every other check passed, so
   * a refused pod holds nothing.
   */
  allocateResources?: (pod: Pod) => { reason: string; message: string } | undefined;
}

/** Why a pod is not admitted: the kubelet's reason (the event's reason too) and message. */
export interface Rejection {
  reason:
    | "OutOfpods"
    | "OutOfcpu"
    | "OutOfmemory"
    | "OutOfephemeral-storage"
    | "CapabilitiesForbidden"
    | "NodeAffinity"
    | "PodOSNotSupported"
    | "SysctlForbidden"
    | "AppArmor"
    | "UserNamespacesUnsupported"
    | "SELinuxUnsupported"
    | "SupplementalGroupsPolicyNotSupported"
    | "NodeShutdown"
    | "TopologyAffinityError"
    | "SMTAlignmentError"
    | "UnexpectedAdmissionError"
    | `OutOf${string}`;
  message: string;
}

/** Reason of a pod refused for lack of room: it may be admitted once an admitted pod leaves. */
export const OUT_OF_PODS = "OutOfpods";

/**
 * Admits `pod` next to `admitted` already-admitted pods (requesting `used` together), or says why not, in the
 * kubelet's words: host namespaces first (a policy answer that waiting cannot change), then what the node cannot
 * run, then a node shutting down, then the pod count and the resource fit.
 */
export function admitPod(pod: Pod, admitted: number, policy: AdmissionPolicy, used?: Requests): Rejection | undefined {
  const source = pod.metadata.annotations[ANNOTATION.source] ?? "";
  const checks = [
    [pod.spec.hostNetwork, policy.hostNetworkSources, "host networking", "host_network_sources"],
    [pod.spec.hostPID, policy.hostPidSources, "host PID", "host_pid_sources"],
    [pod.spec.hostIPC, policy.hostIpcSources, "host IPC", "host_ipc_sources"],
  ] as const;
  for (const [asks, sources, what, flag] of checks)
    if (asks && !sources.includes("*") && !sources.includes(source))
      return {
        reason: "CapabilitiesForbidden",
        message: `pod with UID "${pod.metadata.uid}" specified ${what}, but is disallowed: the ${source || "unknown"} source is not in --${flag} (${sources.join(",") || "empty"})`,
      };
  const refusal = podFitsNode(pod, policy);
  if (refusal) return refusal;
  if (policy.nodeShuttingDown?.())
    return { reason: "NodeShutdown", message: "Pod was rejected as the node is shutting down." };
  if (admitted + 1 > policy.maxPods)
    return {
      reason: OUT_OF_PODS,
      message: `Node didn't have enough resource: pods, requested: 1, used: ${admitted}, capacity: ${policy.maxPods}`,
    };
  const short = policy.allocatable && used && insufficientResource(pod, used, policy.allocatable);
  if (short)
    return {
      reason: `OutOf${short.resource}`,
      message: insufficientResourceMessage(short),
    };
  // Last: the resource allocator holds devices and CPUs, so a pod refused above holds nothing.
  return policy.allocateResources?.(pod) as Rejection | undefined;
}

/** What the node cannot or may not run, in the order of the Go kubelet's admit handlers. */
function podFitsNode(pod: Pod, policy: AdmissionPolicy): Rejection | undefined {
  if (pod.spec.os?.name && pod.spec.os.name !== "linux")
    return { reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS" };
  if (policy.node && !matchesNode(pod, policy.node))
    return {
      reason: "NodeAffinity",
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    };
  const sysctls = policy.sysctls?.check(pod);
  if (sysctls) return { reason: "SysctlForbidden", message: sysctls };
  const features = policy.features;
  if (!features) return undefined;
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const contexts = [pod.spec.securityContext, ...containers.map((c) => c.securityContext)];
  if (!features.appArmor && contexts.some((c) => c?.appArmorProfile && c.appArmorProfile.type !== "Unconfined"))
    return { reason: "AppArmor", message: "Cannot enforce AppArmor: AppArmor is not enabled on the host" };
  if (!features.userNamespaces && pod.spec.hostUsers === false)
    return {
      reason: "UserNamespacesUnsupported",
      message:
        "hostUsers: false needs user namespaces for pods, which this kubelet does not set up on either runtime; remove it",
    };
  // Strict needs a runtime that can leave out the image's /etc/group groups: neither path here can.
  // (A field newer than the API types this project builds with.)
  const groupsPolicy = (pod.spec.securityContext as { supplementalGroupsPolicy?: string } | undefined)
    ?.supplementalGroupsPolicy;
  if (groupsPolicy === "Strict")
    return {
      reason: "SupplementalGroupsPolicyNotSupported",
      message: "SupplementalGroupsPolicy=Strict is not supported in this node",
    };
  if (!features.seLinux && contexts.some((c) => c?.seLinuxOptions))
    return {
      reason: "SELinuxUnsupported",
      message: "seLinuxOptions cannot be applied: this kubelet passes no SELinux labels to the runtime; remove them",
    };
  return undefined;
}

/**
 * The order pods are admitted in, as the kubelet's HandlePodAdditions sorts them: by
 * metadata.creationTimestamp, pods without one after those with, ties in the given order.
 */
export function admissionOrder(pods: Pod[]): Pod[] {
  const created = (pod: Pod) => {
    const time = Date.parse(String(pod.metadata.creationTimestamp ?? ""));
    return Number.isNaN(time) ? Infinity : time;
  };
  return pods
    .map((pod, index) => ({ pod, index, time: created(pod) }))
    .sort((a, b) => (a.time === b.time ? a.index - b.index : a.time < b.time ? -1 : 1))
    .map(({ pod }) => pod);
}

/** A rejected pod's status, as the kubelet's rejectPod writes it. */
export function rejectedStatus(rejection: Rejection, hostIP: string): V1PodStatus {
  return {
    phase: "Failed",
    reason: rejection.reason,
    message: `Pod was rejected: ${rejection.message}`,
    hostIP,
    conditions: [{ type: "PodScheduled", status: "True" }],
  };
}

/** The pod as this node runs and reports it: spec.nodeName is the node's name, as the kubelet's sources default it. */
export function boundToNode(pod: Pod, nodeName: string): Pod {
  return pod.spec.nodeName === nodeName ? pod : { ...pod, spec: { ...pod.spec, nodeName } };
}
