// The observer of the sync: lists the node's kubelet sandboxes and containers (or one pod's) on the Runtime port,
// inspects each and groups them by pod uid (Observed, the input of pod-plan.ts), with each dead container's
// termination message. Nothing here changes the runtime: the executor (pod-executor.ts) does.
import {
  LABEL,
  type ContainerDetails,
  type PodSandboxDetails,
  type Runtime,
  isRuntimeError,
} from "../container/runtime.ts";
import { listedContainers, listedSandboxes } from "../container/shared-listing.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import type { Observed } from "./pod-plan.ts";

export interface PodObserverDeps {
  runtime: Runtime;
  /** Where containers' termination logs are read; absent = no termination messages (`kubelet plan`). */
  volumes?: Pick<VolumeManager, "readTerminationLog">;
  /**
   * A node-wide observation may read the runtime's last listing when current for a reader of this age
   * (shared-listing.ts: none of the kubelet's changes or the runtime's events since it began); absent: it lists.
   */
  listingMaxAgeMs?: number;
}

export interface PodObserver {
  /**
   * Every kubelet sandbox and container (or one pod's), with their statuses, grouped by pod uid. `exited`:
   * sandboxes and containers asked afresh whatever the listing says: those an exit event just reported (dockerd
   * 20.10 lists a container as running until it has handled its exit, after the die event; an inspect waits for
   * that), and containers just resized in place (their state, and so their cached inspection, did not change).
   * A sandbox or container that went between the listing and its inspection is left out; any other runtime
   * error rejects the observation (it is never dropped silently).
   */
  observe(podUid?: string, exited?: ReadonlySet<string>): Promise<Map<string, Observed>>;
}

/** FallbackToLogsOnError takes at most this much of the log's end (the Go kubelet's limits). */
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;

export function createPodObserver(deps: PodObserverDeps): PodObserver {
  const { runtime } = deps;
  const inspected = new Map<string, ContainerDetails | PodSandboxDetails>();

  /** The kubelet's rule: the termination log's content; with FallbackToLogsOnError, a failed container's last log lines. */
  const terminationMessage = async (c: ContainerDetails): Promise<string> => {
    const uid = c.labels[LABEL.podUid]!;
    const name = c.labels[LABEL.containerName]!;
    const written = deps.volumes
      ? await deps.volumes.readTerminationLog(uid, name, Number(c.labels[LABEL.restartCount] ?? 0)).catch(() => "")
      : "";
    if (written || c.labels[LABEL.terminationMessagePolicy] !== "FallbackToLogsOnError" || c.exitCode === 0)
      return written;
    const chunks: Uint8Array[] = [];
    try {
      for await (const chunk of runtime.logs(c.id, { tail: FALLBACK_LOG_LINES })) chunks.push(chunk);
    } catch {
      return "";
    }
    const tail = Buffer.concat(chunks);
    return tail.subarray(Math.max(0, tail.length - FALLBACK_LOG_BYTES)).toString("utf8");
  };

  const observe = async (podUid?: string, exited?: ReadonlySet<string>) => {
    const shared = !podUid && deps.listingMaxAgeMs !== undefined ? deps.listingMaxAgeMs : undefined;
    const [sandboxes, containers] = await Promise.all([
      shared !== undefined ? listedSandboxes(runtime, shared) : runtime.listPodSandboxes(podUid ? { podUid } : {}),
      shared !== undefined ? listedContainers(runtime, shared) : runtime.listContainers(podUid ? { podUid } : {}),
    ]);
    const byPod = new Map<string, Observed>();
    const of = (uid: string) => byPod.get(uid) ?? byPod.set(uid, { sandboxes: [], containers: [] }).get(uid)!;
    const live = new Set<string>();
    /**
     * A status only changes with the state the listing gives, so it is asked once per state; cached under that
     * state only when they agree, so a stale listing cannot pin it. Undefined when it went meanwhile.
     */
    const details = async <T extends ContainerDetails | PodSandboxDetails>(
      id: string,
      listedState: string,
      listedRunning: boolean,
      ask: () => Promise<T>,
      running: (d: T) => boolean,
    ): Promise<T | undefined> => {
      const key = `${id}:${listedState}`;
      live.add(key);
      const fresh = exited?.has(id) ?? false;
      const cached = fresh ? undefined : (inspected.get(key) as T | undefined);
      if (cached) return cached;
      let answer: T;
      try {
        answer = await ask();
      } catch (error) {
        if (isRuntimeError(error, "NotFound")) return undefined;
        throw error;
      }
      if (!fresh || running(answer) === listedRunning) inspected.set(key, answer);
      return answer;
    };
    await Promise.all([
      ...sandboxes.map(async (summary) => {
        const status = await details(
          summary.id,
          summary.state,
          summary.state === "ready",
          () => runtime.podSandboxStatus(summary.id),
          (s) => s.state === "ready",
        );
        if (status) of(summary.metadata.uid).sandboxes.push(status);
      }),
      ...containers.map(async (summary) => {
        const container = await details(
          summary.id,
          summary.state,
          summary.state === "CONTAINER_RUNNING",
          async () => {
            const c = await runtime.inspectContainer(summary.id);
            if (!c.running && c.labels[LABEL.terminationMessagePath])
              c.terminationMessage = await terminationMessage(c);
            return c;
          },
          (c) => c.running,
        );
        const uid = summary.labels[LABEL.podUid];
        if (container && uid) of(uid).containers.push(container);
      }),
    ]);
    if (!podUid) for (const key of inspected.keys()) if (!live.has(key)) inspected.delete(key);
    return byPod;
  };

  return { observe };
}
