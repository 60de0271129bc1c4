// Pure: a pod's and a container's security settings → the CRI's security profiles and checks, as the Go
// kubelet's kuberuntime security_context.go and helpers.go (getSeccompProfile, verifyRunAsNonRoot) and
// pkg/securitycontext (AddNoNewPrivileges, the default masked and read-only /proc paths) decide them.
import { join } from "node:path";
import type { SecurityProfile } from "./cri-types.ts";
import { KubeletError, type Pod, type V1Container } from "../api/types.ts";

/** The node's seccomp settings: KubeletConfiguration seccompDefault and the profile root (`<root_dir>/seccomp`). */
export interface SeccompSettings {
  seccompDefault?: boolean;
  seccompRoot: string;
}

/** The user an image runs as when the pod names none: a numeric uid, or a name the kubelet cannot check. */
export interface ImageUser {
  uid?: number;
  username?: string;
}

interface FieldProfile {
  type?: string;
  localhostProfile?: string;
}

/**
 * The seccomp profile of a container: its own, else the pod's, else RuntimeDefault with seccompDefault and
 * Unconfined without (getSeccompProfile). Localhost profiles are files under the seccomp root.
 */
export function seccompProfile(pod: Pod, container: V1Container, settings: SeccompSettings): SecurityProfile {
  const field: FieldProfile | undefined =
    container.securityContext?.seccompProfile ?? pod.spec.securityContext?.seccompProfile;
  return profileOf(field, settings.seccompDefault ? "RuntimeDefault" : "Unconfined", (name) =>
    join(settings.seccompRoot, name),
  );
}

/** The pod sandbox's seccomp profile: the pod-level field only (generatePodSandboxLinuxConfig). */
export function sandboxSeccompProfile(pod: Pod, settings: SeccompSettings): SecurityProfile {
  return profileOf(
    pod.spec.securityContext?.seccompProfile,
    settings.seccompDefault ? "RuntimeDefault" : "Unconfined",
    (name) => join(settings.seccompRoot, name),
  );
}

/** The AppArmor profile of a container: its own, else the pod's; undefined when neither names one. */
export function appArmorProfile(pod: Pod, container: V1Container): SecurityProfile | undefined {
  const field: FieldProfile | undefined =
    container.securityContext?.appArmorProfile ?? pod.spec.securityContext?.appArmorProfile;
  // AppArmor Localhost profiles are names of profiles loaded in the kernel, not files.
  return field && profileOf(field, "RuntimeDefault", (name) => name);
}

function profileOf(
  field: FieldProfile | undefined,
  fallback: SecurityProfile["profile_type"],
  localhost: (name: string) => string,
): SecurityProfile {
  if (!field?.type) return { profile_type: fallback };
  if (field.type === "RuntimeDefault") return { profile_type: "RuntimeDefault" };
  if (field.type === "Localhost") {
    if (!field.localhostProfile)
      throw new KubeletError(
        "CreateContainerConfigError",
        "localhostProfile must be set if seccompProfile type is Localhost.",
      );
    return { profile_type: "Localhost", localhost_ref: localhost(field.localhostProfile) };
  }
  return { profile_type: "Unconfined" };
}

/** allowPrivilegeEscalation: false → no_new_privs (AddNoNewPrivileges); unset leaves it off. */
export function noNewPrivileges(container: V1Container): boolean {
  return container.securityContext?.allowPrivilegeEscalation === false;
}

/** /proc paths a non-privileged container cannot read (procMount Default), as pkg/securitycontext lists them. */
export const DEFAULT_MASKED_PATHS = [
  "/proc/asound",
  "/proc/acpi",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/sys/firmware",
  "/sys/devices/virtual/powercap",
];

/** /proc paths a non-privileged container sees read-only (procMount Default). */
export const DEFAULT_READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

/**
 * runAsNonRoot against the effective user, the Go kubelet's verifyRunAsNonRoot: runAsUser when set, else the
 * image's user (root when the image names none; a non-numeric name cannot be verified). Throws
 * CreateContainerConfigError with the Go kubelet's messages.
 */
export function verifyRunAsNonRoot(pod: Pod, container: V1Container, image: ImageUser): void {
  const nonRoot = container.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot;
  if (!nonRoot) return;
  const { name, namespace, uid } = pod.metadata;
  const which = `(pod: "${name}_${namespace}(${uid})", container: ${container.name})`;
  const runAsUser = container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  if (runAsUser !== undefined) {
    if (runAsUser === 0)
      throw new KubeletError("CreateContainerConfigError", `container's runAsUser breaks non-root policy ${which}`);
    return;
  }
  if (image.uid === undefined && image.username)
    throw new KubeletError(
      "CreateContainerConfigError",
      `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${which}`,
    );
  if ((image.uid ?? 0) === 0)
    throw new KubeletError(
      "CreateContainerConfigError",
      `container has runAsNonRoot and image will run as root ${which}`,
    );
}

/** An image's USER (`uid`, `uid:gid`, `name`, `name:group`) → the user part, as the dockershim's getUserFromImageUser. */
export function imageUser(user: string | undefined): ImageUser {
  const part = (user ?? "").split(":")[0]!;
  if (!part) return {};
  return /^\d+$/.test(part) ? { uid: Number(part) } : { username: part };
}
