// `kubelet runonce`: start every pod once, poll with growing delays (1, 2, 4, 8 s) until each runs
// (or completed, for Never/OnFailure pods), fails for good (a sandbox image no registry can give counts), or time
// runs out, saying how long it keeps trying. Kills nothing else.
import type { Clock } from "../clock.ts";
import type { Runtime, RuntimeVersion } from "../container/runtime.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { ImageManager } from "../node/images/images.ts";
import type { Logger } from "../log.ts";
import { computePodStatus, type Waiting } from "./pod-status.ts";
import { createPodExecutor, type PodExecutorDeps, type PodExecutorOptions } from "./pod-executor.ts";
import { createPodObserver } from "./pod-observer.ts";
import { noneObserved, type ProbeFailure } from "./pod-plan.ts";
import { podKey, type Pod, type V1PodStatus } from "../api/types.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";
import { sumRequests } from "./resource-fit.ts";
import { admissionOrder, admitPod, boundToNode, rejectedStatus, type AdmissionPolicy } from "./admission.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import type { RunOnceProgress } from "./runonce-progress.ts";
import { lastingPullFailure } from "../container/pull-failure.ts";

export interface RunOnceDeps {
  runtime: Runtime;
  images: ImageManager;
  volumes: VolumeManager;
  configs: ConfigLookup;
  clock: Clock;
  log: Logger;
  events: EventRecorder;
  options: PodExecutorOptions;
  cgroups?: PodExecutorDeps["cgroups"];
  dns?: PodExecutorDeps["dns"];
  /** --max_pods and the host-namespace sources, applied as the kubelet's runOnce does; absent = admit all. */
  admission?: AdmissionPolicy;
}

export interface PodOutcome {
  pod: Pod;
  ok: boolean;
  status: V1PodStatus;
  /** Why it did not make it. */
  reason?: string;
}

export interface RunOnceReport {
  ok: boolean;
  pods: PodOutcome[];
  elapsedMs: number;
  /** The runtime's answer to the version call that began the run. */
  runtimeVersion: RuntimeVersion;
}

/** Waiting reasons that retrying within runonce will not fix. */
const TERMINAL = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "ErrImageNeverPull",
  "InvalidImageName",
  "CreateContainerError",
  "CreateContainerConfigError",
  "RunContainerError",
  "CrashLoopBackOff",
  "PostStartHookError",
]);

/**
 * The pods' latest sandbox failures (the FailedCreatePodSandBox events, `Failed to create pod sandbox: …`) recorded
 * since `since`, by pod uid: a sandbox that cannot be created leaves the containers waiting as ContainerCreating.
 */
function sandboxFailures(events: EventRecorder, since: number): Map<string, string> {
  const found = new Map<string, string>();
  for (const e of events.list())
    if (e.reason === "FailedCreatePodSandBox" && Date.parse(e.lastTimestamp) >= since)
      found.set(e.involvedObject.uid, e.message);
  return found;
}

export async function runPodsOnce(
  wanted: Pod[],
  deps: RunOnceDeps,
  options: { timeoutMs: number; signal: AbortSignal; progress?: Pick<RunOnceProgress, "pods"> },
): Promise<RunOnceReport> {
  const { clock, runtime } = deps;
  const began = clock.now();
  const observer = createPodObserver({ runtime, volumes: deps.volumes });
  const executor = createPodExecutor(deps.options, {
    runtime,
    images: deps.images,
    volumes: deps.volumes,
    configs: deps.configs,
    clock,
    log: deps.log,
    events: deps.events,
    cgroups: deps.cgroups,
    dns: deps.dns,
  });
  const outcomes = new Map<string, PodOutcome>();
  const waiting = new Map<string, Map<string, Waiting>>();
  const podIPs = new Map<string, string>();
  const noFailures = new Map<string, ProbeFailure>();
  const pods = admissionOrder(wanted).map((pod) => boundToNode(pod, deps.options.hostname));
  let pending: Pod[] = [];
  for (const pod of pods) {
    const rejection = deps.admission && admitPod(pod, pending.length, deps.admission, sumRequests(pending));
    if (!rejection) {
      pending.push(pod);
      continue;
    }
    deps.events.record(pod, "Warning", rejection.reason, rejection.message);
    const status = rejectedStatus(rejection, deps.options.hostIP);
    outcomes.set(pod.metadata.uid, { pod, ok: false, status, reason: `${rejection.reason}: ${rejection.message}` });
  }
  // The version (for the report) and the first look at the node are asked at once: neither waits on the other.
  const [runtimeVersion, firstObserved] = await Promise.all([
    runtime.version(),
    pending.length > 0 ? observer.observe() : undefined,
  ]);
  /** Each pending pod's latest sandbox failure, and the ones already told to the operator. */
  const lastFailure = new Map<string, string>();
  const told = new Set<string>();
  const left = () => Math.max(0, Math.ceil((options.timeoutMs - (clock.now() - began)) / 1000));
  for (let round = 0; pending.length > 0; round++) {
    const roundBegan = clock.now();
    const observed = (round === 0 && firstObserved) || (await observer.observe());
    await Promise.all(
      pending.map(async (pod) => {
        const result = await executor.syncPod(pod, observed.get(pod.metadata.uid) ?? noneObserved(), noFailures);
        waiting.set(pod.metadata.uid, result.waiting);
        podIPs.set(pod.metadata.uid, result.podIP);
      }),
    );
    const after = await observer.observe();
    for (const [uid, message] of sandboxFailures(deps.events, roundBegan)) lastFailure.set(uid, message);
    const timedOut = clock.now() - began >= options.timeoutMs || options.signal.aborted;
    pending = pending.filter((pod) => {
      const seen = after.get(pod.metadata.uid) ?? noneObserved();
      const status = computePodStatus({
        pod,
        sandboxes: seen.sandboxes,
        containers: seen.containers,
        waiting: waiting.get(pod.metadata.uid) ?? new Map(),
        isReady: () => true,
        isStarted: () => true,
        hostIP: deps.options.hostIP,
        podIP: podIPs.get(pod.metadata.uid) ?? "",
        firstSeen: began,
        now: clock.now(),
      });
      const statuses = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
      const stuck = statuses.find((s) => s.state?.waiting && TERMINAL.has(s.state.waiting.reason ?? ""));
      const running = status.phase === "Running" && (status.containerStatuses ?? []).every((s) => s.state?.running);
      // A sandbox whose image's registry does not resolve, or lacks the image, fails the same way until the timeout.
      const failure = lastFailure.get(pod.metadata.uid);
      const lasting = failure !== undefined && lastingPullFailure(failure) !== undefined;
      const lastError = failure ? `; last error: FailedCreatePodSandBox: ${failure}` : "";
      if (running || status.phase === "Succeeded") outcomes.set(pod.metadata.uid, { pod, ok: true, status });
      else if (stuck || status.phase === "Failed" || lasting || timedOut) {
        const reason = stuck
          ? `${stuck.name}: ${stuck.state!.waiting!.reason}: ${stuck.state!.waiting!.message ?? ""}`
          : status.phase === "Failed"
            ? "the pod failed"
            : lasting
              ? `FailedCreatePodSandBox: ${failure} (not retried: it cannot clear by itself)`
              : options.signal.aborted
                ? `not running when interrupted after ${Math.round((clock.now() - began) / 1000)}s${lastError}`
                : `not running after ${Math.round(options.timeoutMs / 1000)}s${lastError}`;
        outcomes.set(pod.metadata.uid, { pod, ok: false, status, reason });
      } else {
        if (failure && !told.has(`${pod.metadata.uid}\0${failure}`)) {
          told.add(`${pod.metadata.uid}\0${failure}`);
          deps.log.warn(
            `pod ${podKey(pod)}: ${failure}; runonce keeps trying for ${left()}s more (--runonce_timeout ${Math.round(options.timeoutMs / 1000)}s)`,
          );
        }
        return true;
      }
      return false;
    });
    options.progress?.pods(
      `${outcomes.size}/${pods.length} pods settled${pending.length ? `, waiting for ${pending.map(podKey).join(", ")} (giving up in ${left()}s)` : ""}`,
    );
    if (pending.length === 0) break;
    await clock
      .sleep(Math.min(1000 * 2 ** round, 8000, Math.max(0, options.timeoutMs - (clock.now() - began))), options.signal)
      .catch(() => {});
  }
  const ordered = pods.map((pod) => outcomes.get(pod.metadata.uid)!);
  return { ok: ordered.every((o) => o.ok), pods: ordered, elapsedMs: clock.now() - began, runtimeVersion };
}

/** The runtime that ran the pods, a table of pods and container states, then a verdict line. */
export function formatRunOnceReport(report: RunOnceReport, runtime?: string): string {
  const rows = [["POD", "CONTAINER", "STATE", "RESTARTS", "REASON"]];
  for (const { pod, status } of report.pods) {
    for (const c of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
      const state = c.state?.running
        ? "Running"
        : c.state?.terminated
          ? `Terminated(${c.state.terminated.exitCode})`
          : "Waiting";
      const reason = c.state?.waiting
        ? `${c.state.waiting.reason}${c.state.waiting.message ? `: ${c.state.waiting.message}` : ""}`
        : (c.state?.terminated?.reason ?? "");
      rows.push([podKey(pod), c.name, state, String(c.restartCount), reason.replace(/\s+/g, " ").slice(0, 160)]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const table = rows
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
  const failed = report.pods.filter((o) => !o.ok);
  const seconds = (report.elapsedMs / 1000).toFixed(1);
  const verdict =
    failed.length === 0
      ? `${report.pods.length} pods running or completed (${seconds}s)`
      : `${failed.length} of ${report.pods.length} pods did not start (${seconds}s):\n${failed.map((o) => `  ${podKey(o.pod)}: ${o.reason}`).join("\n")}`;
  return `${runtime ? `RUNTIME ${runtime}\n` : ""}${table}\n${verdict}`;
}
