// Security profiles and runAsNonRoot: the Go kubelet's choices and messages, case by case.
import { describe, expect, test } from "bun:test";
import { imageUser, noNewPrivileges, seccompProfile, verifyRunAsNonRoot } from "./security-context.ts";
import { testPod } from "../testing/pods.ts";
import type { V1Container } from "../api/types.ts";

const settings = { seccompRoot: "/var/lib/kubelet/seccomp" };
const app = (securityContext: V1Container["securityContext"] = {}): V1Container => ({
  name: "app",
  image: "busybox",
  securityContext,
});

describe("seccompProfile", () => {
  test("a pod naming none is Unconfined, or RuntimeDefault with seccompDefault", () => {
    const pod = testPod("web");
    expect(seccompProfile(pod, app(), settings)).toEqual({ profile_type: "Unconfined" });
    expect(seccompProfile(pod, app(), { ...settings, seccompDefault: true })).toEqual({
      profile_type: "RuntimeDefault",
    });
  });

  test("the container's profile wins over the pod's; Localhost is a file under the seccomp root", () => {
    const pod = testPod("web", { securityContext: { seccompProfile: { type: "RuntimeDefault" } } });
    expect(seccompProfile(pod, app(), settings)).toEqual({ profile_type: "RuntimeDefault" });
    expect(
      seccompProfile(pod, app({ seccompProfile: { type: "Localhost", localhostProfile: "p/audit.json" } }), settings),
    ).toEqual({ profile_type: "Localhost", localhost_ref: "/var/lib/kubelet/seccomp/p/audit.json" });
    expect(seccompProfile(pod, app({ seccompProfile: { type: "Unconfined" } }), settings)).toEqual({
      profile_type: "Unconfined",
    });
  });
});

test("allowPrivilegeEscalation: false sets no_new_privs; true or unset does not", () => {
  expect(noNewPrivileges(app({ allowPrivilegeEscalation: false }))).toBe(true);
  expect(noNewPrivileges(app({ allowPrivilegeEscalation: true }))).toBe(false);
  expect(noNewPrivileges(app())).toBe(false);
});

describe("verifyRunAsNonRoot", () => {
  const pod = testPod("web", { securityContext: { runAsNonRoot: true } });
  const which = `(pod: "web_default(${pod.metadata.uid})", container: app)`;
  const refusal = (container: V1Container, image: { uid?: number; username?: string }) => {
    try {
      verifyRunAsNonRoot(pod, container, image);
      return undefined;
    } catch (error) {
      return `${(error as { code: string }).code}: ${(error as Error).message}`;
    }
  };

  test("an image without a user, or with uid 0, runs as root and is refused", () => {
    const message = `CreateContainerConfigError: container has runAsNonRoot and image will run as root ${which}`;
    expect(refusal(app(), {})).toBe(message);
    expect(refusal(app(), { uid: 0 })).toBe(message);
  });

  test("a named image user cannot be verified and is refused; a numeric non-root one is admitted", () => {
    expect(refusal(app(), { username: "nginx" })).toBe(
      `CreateContainerConfigError: container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root ${which}`,
    );
    expect(refusal(app(), { uid: 101 })).toBeUndefined();
  });

  test("runAsUser decides over the image: 0 breaks the policy, any other uid passes", () => {
    expect(refusal(app({ runAsUser: 0 }), { uid: 1000 })).toBe(
      `CreateContainerConfigError: container's runAsUser breaks non-root policy ${which}`,
    );
    expect(refusal(app({ runAsUser: 1000 }), {})).toBeUndefined();
  });

  test("a container's runAsNonRoot: false overrides the pod's true", () => {
    expect(refusal(app({ runAsNonRoot: false }), {})).toBeUndefined();
  });
});

test("an image's USER is parsed as the dockershim did: uid, name, group dropped, empty", () => {
  expect(imageUser("1000:1000")).toEqual({ uid: 1000 });
  expect(imageUser("nginx:nginx")).toEqual({ username: "nginx" });
  expect(imageUser("")).toEqual({});
  expect(imageUser(undefined)).toEqual({});
});
