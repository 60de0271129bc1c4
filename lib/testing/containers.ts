// Builders of an observed pod (its sandboxes and containers) for tests of the pure planners and status.
import { containerFieldHashes, containerHash, podSandboxHash } from "../api/hash.ts";
import type { Pod, V1Container } from "../api/types.ts";
import { containerLinuxResources } from "../container/container-config.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME, type ContainerDetails, type LinuxResources } from "../container/runtime.ts";
import type { Observed } from "../sync/pod-plan.ts";

export interface Instance {
  /** Container name; "POD" is the sandbox. */
  name: string;
  running?: boolean;
  exitCode?: number;
  attempt?: number;
  /** Hash label; the spec's own unless given. */
  hash?: string;
  /** How long it ran before it died, ms (default 1 s). */
  ranMs?: number;
  init?: boolean;
  oomKilled?: boolean;
  /** Docker's error text: the container could not start. */
  error?: string;
  /** The spec it was created from, when not the pod's current one: its hash labels and resources follow it. */
  createdFrom?: V1Container;
  /** The resources it runs with, when not those of the spec it was created from. */
  resources?: LinuxResources;
}

/**
 * The pod `of` as the runtime would report it: instances named "POD" are sandboxes (ready while running), the
 * others containers; ids `<name>-<attempt>`, the labels the kubelet writes (hashes of the current spec unless an
 * instance says otherwise), dead ones finished 5 s before `now`.
 */
export function observedPod(
  of: Pod,
  instances: Instance[],
  { now, networkMode = "none" }: { now: number; networkMode?: string },
): Observed {
  const specs = [...(of.spec.initContainers ?? []), ...of.spec.containers];
  const all = instances.map((i, n) => {
    const sandbox = i.name === POD_INFRA_CONTAINER_NAME;
    const spec = i.createdFrom ?? specs.find((s) => s.name === i.name);
    const running = i.running ?? true;
    const finished = now - 5000;
    return {
      id: `${i.name}-${i.attempt ?? 0}`,
      name: `k8s_${i.name}_web_default_${of.metadata.uid}_${i.attempt ?? 0}`,
      labels: {
        [LABEL.podUid]: of.metadata.uid,
        [LABEL.containerName]: i.name,
        [LABEL.restartCount]: String(i.attempt ?? 0),
        [LABEL.terminationGracePeriod]: "20",
        ...(sandbox
          ? { [LABEL.podHash]: i.hash ?? podSandboxHash(of, networkMode) }
          : {
              [LABEL.containerHash]: i.hash ?? (spec ? containerHash(spec) : "gone"),
              ...(spec ? { [LABEL.fieldHashes]: containerFieldHashes(spec) } : {}),
            }),
        ...(i.init ? { [LABEL.initContainer]: "true" } : {}),
      },
      image: "local/busybox:stable",
      imageId: "sha256:1",
      state: running ? "CONTAINER_RUNNING" : "CONTAINER_EXITED",
      createdAt: now - 100_000 + n,
      running,
      exitCode: running ? 0 : (i.exitCode ?? 0),
      startedAt: new Date(running ? now - 60_000 : finished - (i.ranMs ?? 1000)).toISOString(),
      ...(running ? {} : { finishedAt: new Date(finished).toISOString() }),
      oomKilled: i.oomKilled ?? false,
      ...(i.error ? { error: i.error } : {}),
      pid: running ? 100 + n : 0,
      ipAddress: "",
      ...(!sandbox && (i.resources || spec) ? { resources: i.resources ?? containerLinuxResources(spec!, {}) } : {}),
    } satisfies ContainerDetails;
  });
  const isSandbox = (c: ContainerDetails) => c.labels[LABEL.containerName] === POD_INFRA_CONTAINER_NAME;
  return {
    sandboxes: all.filter(isSandbox).map((c) => ({
      id: c.id,
      metadata: {
        name: of.metadata.name,
        namespace: of.metadata.namespace,
        uid: of.metadata.uid,
        attempt: Number(c.labels[LABEL.restartCount]),
      },
      state: c.running ? "ready" : "notready",
      createdAt: c.createdAt,
      labels: c.labels,
      ipAddress: "",
    })),
    containers: all.filter((c) => !isSandbox(c)),
  };
}
