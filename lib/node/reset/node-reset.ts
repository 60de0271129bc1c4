// `kubelet reset`: removes what the kubelet created on this node and nothing else — its pods on the
// runtime (each running container stopped with its pod's grace period, then removed, then the pod's
// sandbox), those pods' QoS cgroups, the pod directories under root_dir (volumes unmounted first), its
// state files there (back-off records) and, on a CRI runtime, the pods' log directories under --pod_logs_dir.
// Containers without the kubelet's labels, images, the config file and the manifests are left alone.
import { ALLOCATION_FILE } from "../state/allocation-file.ts";
import { readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { KubeletError } from "../../api/types.ts";
import { LABEL, type Runtime } from "../../container/runtime.ts";
import type { CgroupManager } from "../cm/cgroups.ts";
import type { VolumeManager } from "../volumes/volumes.ts";

/** One removal, done or (in a dry run) to be done. */
export interface ResetStep {
  kind: "container" | "pod sandbox" | "pod cgroup" | "pod directory" | "pod log directory" | "state";
  /** The container or sandbox name, or the path. */
  target: string;
  /** `namespace/name` of the pod it belonged to, when known. */
  pod?: string;
}

export interface NodeResetOptions {
  rootDir: string;
  /** Where a CRI runtime writes container logs (`<dir>/<namespace>_<pod>_<uid>/`). */
  podLogsDir: string;
  /** The lock file, kept until the end (the caller holds it) and then removed. */
  lockFile: string;
  dryRun: boolean;
  /** Told each step as it is taken (in a dry run: as it would be). */
  onStep?(step: ResetStep): void;
}

export interface NodeResetDeps {
  /** The runtime as this kubelet sees it (scoped to its node). */
  runtime: Runtime;
  volumes: Pick<VolumeManager, "podDirs" | "teardown">;
  /** Where the pods' cgroups may be (one manager per naming scheme: cgroupfs, systemd). */
  cgroups: Array<Pick<CgroupManager, "podUsage" | "removePod">>;
}

/** What the kubelet keeps under root_dir besides pod directories and the lock. */
export const ROOT_DIR_STATE = ["backoff", ALLOCATION_FILE];

const DEFAULT_GRACE_SECONDS = 30;

/** Removes (or, in a dry run, lists) every pod and state file of this kubelet; resolves to the steps taken. */
export async function resetNode(options: NodeResetOptions, deps: NodeResetDeps): Promise<ResetStep[]> {
  const { runtime } = deps;
  const steps: ResetStep[] = [];
  const step = async (taken: ResetStep, action: () => Promise<unknown>) => {
    steps.push(taken);
    options.onStep?.(taken);
    if (!options.dryRun) await action();
  };
  const podOf = (labels: Record<string, string>) =>
    labels[LABEL.podNamespace] && labels[LABEL.podName]
      ? `${labels[LABEL.podNamespace]}/${labels[LABEL.podName]}`
      : undefined;

  const sandboxes = await runtime.listPodSandboxes();
  const containers = await runtime.listContainers();
  const uids = new Set<string>();
  // Pods one at a time, their containers together: each stop waits at most its pod's grace period.
  for (const sandbox of sandboxes) {
    uids.add(sandbox.metadata.uid);
    const pod = `${sandbox.metadata.namespace}/${sandbox.metadata.name}`;
    const own = containers.filter(
      (c) => c.podSandboxId === sandbox.id || c.labels[LABEL.podUid] === sandbox.metadata.uid,
    );
    await Promise.all(own.map((c) => removeContainer(c, pod)));
    await step({ kind: "pod sandbox", target: `${pod} (${sandbox.id.slice(0, 12)})`, pod }, async () => {
      await runtime.stopPodSandbox(sandbox.id);
      await runtime.removePodSandbox(sandbox.id);
    });
  }
  // Containers whose sandbox is gone already.
  const left = containers.filter(
    (c) => !sandboxes.some((s) => s.id === c.podSandboxId || s.metadata.uid === c.labels[LABEL.podUid]),
  );
  await Promise.all(left.map((c) => removeContainer(c, podOf(c.labels))));

  async function removeContainer(c: (typeof containers)[number], pod: string | undefined) {
    if (c.labels[LABEL.podUid]) uids.add(c.labels[LABEL.podUid]);
    await step({ kind: "container", target: c.name, pod }, async () => {
      if (c.state === "CONTAINER_RUNNING") {
        const grace = Number(c.labels[LABEL.terminationGracePeriod] ?? DEFAULT_GRACE_SECONDS);
        await runtime.stopContainer(c.id, Number.isFinite(grace) ? grace : DEFAULT_GRACE_SECONDS);
      }
      await runtime.removeContainer(c.id);
    });
  }

  const podDirs = await deps.volumes.podDirs();
  for (const uid of [...uids, ...podDirs.filter((u) => !uids.has(u))])
    for (const cgroups of deps.cgroups)
      if (await cgroups.podUsage(uid))
        await step({ kind: "pod cgroup", target: `pod${uid}` }, async () => {
          if (!(await cgroups.removePod(uid)))
            throw new KubeletError("CgroupBusy", `cannot remove the cgroup of pod ${uid}: processes still run in it`);
        });
  for (const uid of podDirs) {
    uids.add(uid);
    await step({ kind: "pod directory", target: join(options.rootDir, "pods", uid) }, () => deps.volumes.teardown(uid));
  }
  for (const name of await entries(options.podLogsDir)) {
    const uid = name.slice(name.lastIndexOf("_") + 1);
    if (!uids.has(uid)) continue;
    const path = join(options.podLogsDir, name);
    await step({ kind: "pod log directory", target: path }, () => rm(path, { recursive: true, force: true }));
  }
  const present = new Set(await entries(options.rootDir));
  for (const name of ROOT_DIR_STATE.filter((n) => present.has(n))) {
    const path = join(options.rootDir, name);
    await step({ kind: "state", target: path }, () => rm(path, { recursive: true, force: true }));
  }
  if (!options.dryRun) {
    await rm(`${options.lockFile}.request`, { force: true });
    await rm(options.lockFile, { force: true });
    // root_dir itself and its pods/ go only when nothing else is in them (root_dir may be shared).
    await rmdir(join(options.rootDir, "pods")).catch(() => {});
    await rmdir(options.rootDir).catch(() => {});
  }
  return steps;
}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}
