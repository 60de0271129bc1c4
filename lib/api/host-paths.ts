// hostPath volumes that hand a container the node itself. Two rules: the root, the kernel's
// interfaces, the host's configuration and the runtime's socket are refused for every source unless
// the operator allows them (--allow_sensitive_host_paths, then a warning); and everything beneath the
// node's system directories (/etc, /usr, /root, /boot, the root dir, the runtime's state and sockets,
// /proc, /sys, /dev…) is refused for pods from a source not in --trusted_sources.
import { posix } from "node:path";
import { ANNOTATION, type FieldIssue, type Pod } from "./types.ts";

/**
 * Sensitive for every source: each one, and every directory above it (which holds it). Only the ones marked
 * as trees are sensitive below too: /etc/ssl/certs or /sys/fs/cgroup are ordinary static-pod mounts.
 */
const SENSITIVE = ["/etc", "/dev", "/sys", "/boot", "/root", "/var/run/docker.sock", "/run/docker.sock"];
const SENSITIVE_TREES = ["/proc", "/var/lib/docker", "/var/lib/kubelet", "/run/containerd", "/var/run/containerd"];

/**
 * Refused with everything beneath them (and every directory above them) for a source not trusted: the host's
 * configuration and programs (cron, sudoers, ssh keys, binaries run by root), the kernel's interfaces, the
 * kubelet's root dir and each runtime's state and socket dirs.
 */
export const SYSTEM_TREES: readonly string[] = [
  "/etc",
  "/root",
  "/boot",
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/proc",
  "/sys",
  "/dev",
  "/var/spool/cron",
  "/var/lib/kubelet",
  "/var/lib/docker",
  "/var/lib/containerd",
  "/var/lib/containers",
  "/var/lib/crio",
  "/run/containerd",
  "/var/run/containerd",
  "/run/docker",
  "/var/run/docker",
  "/run/docker.sock",
  "/var/run/docker.sock",
  "/run/crio",
  "/var/run/crio",
  "/run/systemd",
  "/var/run/systemd",
  "/run/dbus",
  "/var/run/dbus",
];

/** Sources trusted with system paths unless configured otherwise: files in the manifest dir, written by root. */
export const DEFAULT_TRUSTED_SOURCES: readonly string[] = ["file"];

/** What may be mounted from the host, and by whom. */
export interface HostPathPolicy {
  /** --allow_sensitive_host_paths: every rule here becomes a warning, for every source. */
  allowSensitiveHostPaths?: boolean;
  /** --trusted_sources: sources whose pods may mount beneath the system trees ("*" = all); default file. */
  trustedSources?: readonly string[];
  /** Trees refused to untrusted sources besides SYSTEM_TREES: the configured root dir and runtime sockets. */
  protectedHostPaths?: readonly string[];
}

/** `path` without `.`, `..`, doubled or trailing slashes. */
function normalize(path: string): string {
  return posix.normalize(`${path}/`).replace(/\/+$/, "") || "/";
}

/** True when `tree` is `path`, lies beneath it, or holds it. */
function overlaps(path: string, tree: string): boolean {
  const t = normalize(tree);
  return path === "/" || t === path || t.startsWith(`${path}/`) || path.startsWith(`${t}/`);
}

/** True when mounting `path` from the host gives a container control over the node, whatever its source. */
export function isSensitiveHostPath(path: string): boolean {
  const normal = normalize(path);
  if (normal === "/") return true;
  const above = (p: string) => p === normal || p.startsWith(`${normal}/`);
  return SENSITIVE.some(above) || SENSITIVE_TREES.some((t) => above(t) || normal.startsWith(`${t}/`));
}

/** The system tree `path` falls in or holds (the one to name in a refusal), or undefined when it is outside all. */
export function systemTreeOf(path: string, extra: readonly string[] = []): string | undefined {
  const normal = normalize(path);
  return [...SYSTEM_TREES, ...extra].find((tree) => overlaps(normal, tree));
}

/** The trees a configuration adds to SYSTEM_TREES: its root dir and the directories of its runtime sockets. */
export function protectedHostPaths(config: {
  rootDir: string;
  dockerEndpoint?: string;
  containerRuntimeEndpoint?: string;
}): string[] {
  const sockets = [config.dockerEndpoint, config.containerRuntimeEndpoint]
    .filter((e): e is string => !!e && (e.startsWith("unix://") || e.startsWith("/")))
    .map((e) => posix.dirname(e.replace(/^unix:\/\//, "")));
  return [config.rootDir, ...sockets].filter((p) => p.startsWith("/") && normalize(p) !== "/");
}

/** Why the policy refuses a hostPath at `path` to a pod from `source`: an error, or a warning when allowed; undefined: accepted. */
export function hostPathRefusal(
  path: string,
  source: string,
  policy: HostPathPolicy,
): { detail: string; severity: "error" | "warning" } | undefined {
  const allowed = policy.allowSensitiveHostPaths ?? false;
  const severity = allowed ? ("warning" as const) : ("error" as const);
  if (isSensitiveHostPath(path))
    return {
      severity,
      detail: allowed
        ? "mounts a sensitive host path (allowed by --allow_sensitive_host_paths): the container can take over the node"
        : "may not mount a sensitive host path (the node's root, /etc, /proc, /sys, /dev, the Docker socket…): the container could take over the node; mount a narrower path, or start the kubelet with --allow_sensitive_host_paths",
    };
  const trusted = policy.trustedSources ?? DEFAULT_TRUSTED_SOURCES;
  if (trusted.includes("*") || (source !== "" && trusted.includes(source))) return undefined;
  const tree = systemTreeOf(path, policy.protectedHostPaths);
  if (!tree) return undefined;
  const from = source || "unknown";
  const list = trusted.join(",") || "none";
  return {
    severity,
    detail: allowed
      ? `mounts ${tree} or a path in or above it from the ${from} source (allowed by --allow_sensitive_host_paths, not in --trusted_sources=${list}): the container can take over the node`
      : `may not mount ${tree} or a path in or above it from the ${from} source: only pods from --trusted_sources (${list}) may mount the node's system directories; mount a path outside them, or add ${from} to --trusted_sources`,
  };
}

/** An issue per hostPath volume the policy refuses: an error, or a warning when --allow_sensitive_host_paths allows it. */
export function checkHostPathSafety(pod: Pod, policy: HostPathPolicy): FieldIssue[] {
  const source = pod.metadata.annotations?.[ANNOTATION.source] ?? "";
  return (pod.spec.volumes ?? []).flatMap((volume, i) => {
    const path = volume.hostPath?.path;
    if (typeof path !== "string" || !path.startsWith("/")) return [];
    const refusal = hostPathRefusal(path, source, policy);
    return refusal ? [{ path: `spec.volumes[${i}].hostPath.path`, type: "Forbidden", value: path, ...refusal }] : [];
  });
}
