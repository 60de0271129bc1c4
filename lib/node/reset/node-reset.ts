// `kubelet reset`: removes what the kubelet created on this node and nothing else — its pods on the
// runtime (each running container stopped with its pod's grace period, then removed, then the pod's
// sandbox), those pods' QoS cgroups, the pod directories under root_dir (volumes unmounted first), its
// state files there (back-off records) and, on a CRI runtime, the pods' log directories under --pod_logs_dir.
// Containers without the kubelet's labels, images, the config file and the manifests are left alone.
import { ALLOCATION_FILE } from "../state/allocation-file.ts";
import { readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { KubeletError } from "../../api/types.ts";
import { systemClock, type Clock } from "../../clock.ts";
import { LABEL, type Runtime } from "../../container/runtime.ts";
import { stopContainerTimed } from "../../container/timed-stop.ts";
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
  /** Told when a pod's running containers begin to stop, with its grace period (not in a dry run). */
  onPodStopping?(pod: string, graceSeconds: number): void;
  /** Told when they have stopped: how long it took and which of them ignored SIGTERM. */
  onPodStopped?(pod: string, stopped: PodStopped): void;
  /** Pods stopped at once (default 16): each waits its own grace period, as the kubelet's pod workers do. */
  concurrency?: number;
}

/** A pod's containers stopped. */
export interface PodStopped {
  seconds: number;
  /** Containers killed when their grace period ran out, with it. */
  ignoredSigterm: Array<{ container: string; graceSeconds: number }>;
}

export interface NodeResetDeps {
  /** The runtime as this kubelet sees it (scoped to its node). */
  runtime: Runtime;
  volumes: Pick<VolumeManager, "podDirs" | "teardown">;
  /** Where the pods' cgroups may be (one manager per naming scheme: cgroupfs, systemd). */
  cgroups: Array<Pick<CgroupManager, "podUsage" | "removePod">>;
  /** Times the stops (default the system clock). */
  clock?: Clock;
}

/**
 * What the kubelet keeps under root_dir besides pod directories and the lock: with the device plugins' directory
 * (kubelet_internal_checkpoint and the sockets, which plugins make again when the kubelet's kubelet.sock returns)
 * and the pod resources socket.
 */
export const ROOT_DIR_STATE = ["backoff", ALLOCATION_FILE, "device-plugins", "pod-resources"];

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

  const clock = deps.clock ?? systemClock;
  const sandboxes = await runtime.listPodSandboxes();
  const containers = await runtime.listContainers();
  const uids = new Set<string>();
  // Pods in parallel (bounded), each pod's containers together: the whole waits about the longest grace period.
  const ofSandbox = (sandbox: (typeof sandboxes)[number]) =>
    containers.filter((c) => c.podSandboxId === sandbox.id || c.labels[LABEL.podUid] === sandbox.metadata.uid);
  for (const sandbox of sandboxes) uids.add(sandbox.metadata.uid);
  await inParallel(sandboxes, options.concurrency ?? 16, async (sandbox) => {
    const pod = `${sandbox.metadata.namespace}/${sandbox.metadata.name}`;
    await stopPod(pod, ofSandbox(sandbox));
    await step({ kind: "pod sandbox", target: `${pod} (${sandbox.id.slice(0, 12)})`, pod }, async () => {
      await runtime.stopPodSandbox(sandbox.id);
      await runtime.removePodSandbox(sandbox.id);
    });
  });
  // Containers whose sandbox is gone already, by pod.
  const left = containers.filter(
    (c) => !sandboxes.some((s) => s.id === c.podSandboxId || s.metadata.uid === c.labels[LABEL.podUid]),
  );
  const byPod = new Map<string, typeof containers>();
  for (const c of left) byPod.set(podOf(c.labels) ?? "", [...(byPod.get(podOf(c.labels) ?? "") ?? []), c]);
  await inParallel([...byPod], options.concurrency ?? 16, ([pod, own]) => stopPod(pod || undefined, own));

  /** Stops and removes a pod's containers together, telling of the running ones' stop. */
  async function stopPod(pod: string | undefined, own: typeof containers) {
    const running = own.filter((c) => c.state === "CONTAINER_RUNNING");
    const tell = !options.dryRun && pod !== undefined && running.length > 0;
    const began = clock.now();
    if (tell) options.onPodStopping?.(pod, Math.max(...running.map(graceOf)));
    const ignored = (await Promise.all(own.map((c) => removeContainer(c, pod)))).flatMap((c) => c ?? []);
    if (tell) options.onPodStopped?.(pod, { seconds: (clock.now() - began) / 1000, ignoredSigterm: ignored });
  }

  /** Stops (within its grace period) and removes one container; tells whether it ignored SIGTERM. */
  async function removeContainer(c: (typeof containers)[number], pod: string | undefined) {
    if (c.labels[LABEL.podUid]) uids.add(c.labels[LABEL.podUid]);
    let ignored: PodStopped["ignoredSigterm"][number] | undefined;
    await step({ kind: "container", target: c.name, pod }, async () => {
      if (c.state === "CONTAINER_RUNNING") {
        const grace = graceOf(c);
        if ((await stopContainerTimed(runtime, clock, c.id, grace)).ignoredSigterm)
          ignored = { container: c.labels[LABEL.containerName] ?? c.name, graceSeconds: grace };
      }
      await runtime.removeContainer(c.id);
    });
    return ignored;
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

/** A container's grace period, from the label the kubelet set at its creation. */
function graceOf(c: { labels: Record<string, string> }): number {
  const grace = Number(c.labels[LABEL.terminationGracePeriod] ?? DEFAULT_GRACE_SECONDS);
  return Number.isFinite(grace) ? grace : DEFAULT_GRACE_SECONDS;
}

/** Runs `fn` over `items`, at most `limit` at once; rejects with the first failure once all have settled. */
async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  const failures: unknown[] = [];
  const worker = async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift())
      await fn(item).catch((e) => failures.push(e));
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failures.length) throw failures[0];
}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}
