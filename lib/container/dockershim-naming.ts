// The dockershim's names (pkg/kubelet/dockershim/naming.go): `k8s_<container>_<pod>_<namespace>_<uid>_<attempt>`
// for a container, and a pause container read back as the sandbox it stands for. The Docker adapter and the
// in-memory runtime both name containers this way.
import { LABEL, type PodSandboxSummary } from "./runtime.ts";
import type { PodSandboxConfig } from "./cri-types.ts";

/** `k8s_<container>_<pod>_<namespace>_<uid>_<attempt>`: the dockershim name. */
export function dockerName(sandbox: PodSandboxConfig, container: string, attempt: number): string {
  const { name, namespace, uid } = sandbox.metadata;
  return `k8s_${container}_${name}_${namespace}_${uid}_${attempt}`;
}

/**
 * A pause container → the sandbox it stands for: the pod from its labels, the attempt from its name's last field
 * (the dockershim's parseSandboxName), ready while it runs.
 */
export function sandboxOf(c: {
  id: string;
  name: string;
  labels: Record<string, string>;
  running: boolean;
  createdAt: number;
}): PodSandboxSummary {
  const attempt = Number(/_(\d+)$/.exec(c.name)?.[1] ?? c.labels[LABEL.restartCount] ?? 0);
  return {
    id: c.id,
    metadata: {
      name: c.labels[LABEL.podName] ?? "",
      namespace: c.labels[LABEL.podNamespace] ?? "",
      uid: c.labels[LABEL.podUid] ?? "",
      attempt,
    },
    state: c.running ? "ready" : "notready",
    createdAt: c.createdAt,
    labels: c.labels,
  };
}
