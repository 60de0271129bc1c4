// hostPath volumes that hand a container the node itself: the root, the kernel's interfaces, the
// host's configuration and the container runtime's socket. Refused unless the operator allows
// them (--allow_sensitive_host_paths), and then still reported as a warning.
import { posix } from "node:path";
import type { FieldIssue, Pod } from "./types.ts";

/**
 * Sensitive paths: each one, and every directory above it (which holds it). Only the ones marked
 * as trees are sensitive below too: /etc/ssl/certs or /sys/fs/cgroup are ordinary static-pod mounts.
 */
const SENSITIVE = ["/etc", "/dev", "/sys", "/boot", "/root", "/var/run/docker.sock", "/run/docker.sock"];
const SENSITIVE_TREES = ["/proc", "/var/lib/docker", "/var/lib/kubelet", "/run/containerd", "/var/run/containerd"];

/** True when mounting `path` from the host gives a container control over the node. */
export function isSensitiveHostPath(path: string): boolean {
  const normal = posix.normalize(`${path}/`).replace(/\/+$/, "") || "/";
  if (normal === "/") return true;
  const above = (p: string) => p === normal || p.startsWith(`${normal}/`);
  return SENSITIVE.some(above) || SENSITIVE_TREES.some((t) => above(t) || normal.startsWith(`${t}/`));
}

/** An issue per hostPath volume at a sensitive path: an error, or a warning when allowed. */
export function checkHostPathSafety(pod: Pod, allowed: boolean): FieldIssue[] {
  return (pod.spec.volumes ?? []).flatMap((volume, i) => {
    const path = volume.hostPath?.path;
    if (typeof path !== "string" || !path.startsWith("/") || !isSensitiveHostPath(path)) return [];
    return [
      {
        path: `spec.volumes[${i}].hostPath.path`,
        type: "Forbidden",
        value: path,
        detail: allowed
          ? "mounts a sensitive host path (allowed by --allow_sensitive_host_paths): the container can take over the node"
          : "may not mount a sensitive host path (the node's root, /etc, /proc, /sys, /dev, the Docker socket…): the container could take over the node; mount a narrower path, or start the kubelet with --allow_sensitive_host_paths",
        severity: allowed ? ("warning" as const) : ("error" as const),
      },
    ];
  });
}
