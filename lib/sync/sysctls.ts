// Pure: which pod sysctls this node allows, as the Go kubelet's pkg/kubelet/sysctl allowlist decides: the
// safe set always, namespaced sysctls named by --allowed_unsafe_sysctls (exact or `prefix*`), net.* never
// for a host-network pod nor IPC ones for a host-IPC pod. A refusal is the SysctlForbidden admission.
import { KubeletError, type Pod } from "../api/types.ts";

type Namespace = "ipc" | "net";

/** The sysctls every pod may set (the Go kubelet's SafeSysctlAllowlist). */
export const SAFE_SYSCTLS = [
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
  "net.ipv4.tcp_rmem",
  "net.ipv4.tcp_wmem",
];

const IPC_SYSCTLS = new Set([
  "kernel.sem",
  "kernel.shmall",
  "kernel.shmmax",
  "kernel.shmmni",
  "kernel.shm_rmid_forced",
  "kernel.msgmax",
  "kernel.msgmnb",
  "kernel.msgmni",
]);

/** The namespace a sysctl lives in, or undefined for a node-wide one (pkg/kubelet/sysctl NamespacedBy). */
function namespaceOf(name: string): Namespace | undefined {
  if (IPC_SYSCTLS.has(name) || name.startsWith("fs.mqueue.")) return "ipc";
  if (name.startsWith("net.")) return "net";
  return undefined;
}

/** `net/ipv4/ip_forward` and `net.ipv4.ip_forward` are one sysctl (utilsysctl.NormalizeName). */
const normalize = (name: string) => (name.includes("/") && !name.startsWith("/") ? name.replaceAll("/", ".") : name);

/** The node's allowlist: the safe set plus `unsafe`, each checked to be namespaced (NewAllowlist). */
export interface SysctlAllowlist {
  /** Why the pod's sysctls are forbidden here (the admission message), or undefined. */
  check(pod: Pod): string | undefined;
}

/** Builds the allowlist; an unsafe pattern that names no namespaced sysctl is a configuration error. */
export function createSysctlAllowlist(unsafe: string[]): SysctlAllowlist {
  const exact = new Map<string, Namespace>();
  const prefixes = new Map<string, Namespace>();
  for (const pattern of [...SAFE_SYSCTLS, ...unsafe]) {
    const prefix = pattern.endsWith("*");
    const name = normalize(prefix ? pattern.slice(0, -1) : pattern);
    const namespace = namespaceOf(name);
    if (!namespace)
      throw new KubeletError(
        "InvalidConfig",
        `--allowed_unsafe_sysctls: the sysctls "${pattern}" are not known to be namespaced; only net.*, fs.mqueue.*, kernel.sem, kernel.shm* and kernel.msg* can be set per pod`,
      );
    if (name.includes("*"))
      throw new KubeletError("InvalidConfig", `--allowed_unsafe_sysctls: sysctl "${pattern}" may only end in *`);
    (prefix ? prefixes : exact).set(name, namespace);
  }
  const validate = (raw: string, hostNet: boolean, hostIpc: boolean): string | undefined => {
    const name = normalize(raw);
    const namespace = exact.get(name) ?? [...prefixes].find(([p]) => name.startsWith(p))?.[1];
    if (!namespace) return `"${name}" not allowlisted`;
    if ((namespace === "net" && hostNet) || (namespace === "ipc" && hostIpc))
      return `"${name}" not allowed with host ${namespace} enabled`;
    return undefined;
  };
  return {
    check(pod) {
      for (const sysctl of pod.spec.securityContext?.sysctls ?? []) {
        const why = validate(sysctl.name, pod.spec.hostNetwork ?? false, pod.spec.hostIPC ?? false);
        if (why) return `forbidden sysctl: ${why}`;
      }
      return undefined;
    },
  };
}
