// Pure checks of a pod's security settings with Kubernetes' field paths and wording (the API server's
// ValidatePodSecurityContext, ValidateSeccompProfileField, procMount and allowPrivilegeEscalation rules):
// what would otherwise fail only when a container is created.
import type { Pod, V1Container } from "./types.ts";

type ErrorFn = (path: string, type: string, value?: unknown, detail?: string) => void;

const PROFILE_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"];

function checkProfile(profile: { type?: string; localhostProfile?: string } | undefined, path: string, error: ErrorFn) {
  if (!profile) return;
  if (!PROFILE_TYPES.includes(profile.type ?? ""))
    error(
      `${path}.type`,
      "Unsupported value",
      profile.type,
      'supported values: "Localhost", "RuntimeDefault", "Unconfined"',
    );
  else if (profile.type === "Localhost" && !profile.localhostProfile)
    error(`${path}.localhostProfile`, "Required value", undefined, "must be set when seccomp type is Localhost");
  else if (profile.type !== "Localhost" && profile.localhostProfile !== undefined)
    error(
      `${path}.localhostProfile`,
      "Invalid value",
      profile.localhostProfile,
      "can only be set when type is Localhost",
    );
  else if (profile.localhostProfile?.split("/").includes(".."))
    error(`${path}.localhostProfile`, "Invalid value", profile.localhostProfile, "must not contain '..'");
}

/** The pod's and each container's security fields. */
export function checkSecurity(pod: Pod, error: ErrorFn): void {
  const podSecurity = pod.spec.securityContext;
  checkProfile(podSecurity?.seccompProfile, "spec.securityContext.seccompProfile", error);
  checkProfile(podSecurity?.appArmorProfile, "spec.securityContext.appArmorProfile", error);
  for (const [i, sysctl] of (podSecurity?.sysctls ?? []).entries())
    if (!/^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/.test(sysctl.name))
      error(
        `spec.securityContext.sysctls[${i}].name`,
        "Invalid value",
        sysctl.name,
        "must be a sysctl name such as net.ipv4.tcp_syncookies",
      );
  if (podSecurity?.fsGroupChangePolicy && !["OnRootMismatch", "Always"].includes(podSecurity.fsGroupChangePolicy))
    error(
      "spec.securityContext.fsGroupChangePolicy",
      "Unsupported value",
      podSecurity.fsGroupChangePolicy,
      'supported values: "OnRootMismatch", "Always"',
    );
  const each = (containers: V1Container[] | undefined, kind: string) => {
    for (const [i, c] of (containers ?? []).entries()) {
      const path = `spec.${kind}[${i}].securityContext`;
      const security = c.securityContext;
      checkProfile(security?.seccompProfile, `${path}.seccompProfile`, error);
      checkProfile(security?.appArmorProfile, `${path}.appArmorProfile`, error);
      if (security?.procMount && !["Default", "Unmasked"].includes(security.procMount))
        error(`${path}.procMount`, "Unsupported value", security.procMount, 'supported values: "Default", "Unmasked"');
      else if (security?.procMount === "Unmasked" && pod.spec.hostUsers !== false)
        error(`${path}.procMount`, "Invalid value", "Unmasked", "`hostUsers` must be false to use `Unmasked`");
      if (security?.allowPrivilegeEscalation === false && security.privileged)
        error(
          `${path}`,
          "Invalid value",
          undefined,
          "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
        );
    }
  };
  each(pod.spec.initContainers, "initContainers");
  each(pod.spec.containers, "containers");
}
