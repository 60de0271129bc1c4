// Server-side printing (meta.k8s.io/v1 Table) of pods with kube-apiserver's columns and its printPod rules
// (pkg/printers/internalversion/printers.go): READY counts sidecars, STATUS is the reason kubectl users know
// (Init:0/1, CrashLoopBackOff, Completed, Terminating), RESTARTS says how long ago the last one was.
import type { Pod } from "../../api/types.ts";

/** The pod columns, wide ones (priority 1) last, as kube-apiserver defines them. */
export const POD_COLUMNS = [
  { name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace.", priority: 0 },
  {
    name: "Ready",
    type: "string",
    format: "",
    description: "The aggregate readiness state of this pod for accepting traffic.",
    priority: 0,
  },
  {
    name: "Status",
    type: "string",
    format: "",
    description: "The aggregate status of the containers in this pod.",
    priority: 0,
  },
  {
    name: "Restarts",
    type: "string",
    format: "",
    description:
      "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    priority: 0,
  },
  {
    name: "Age",
    type: "string",
    format: "",
    description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
    priority: 0,
  },
  {
    name: "IP",
    type: "string",
    format: "",
    description:
      "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    priority: 1,
  },
  {
    name: "Node",
    type: "string",
    format: "",
    description: "NodeName indicates in which node this pod is scheduled.",
    priority: 1,
  },
  {
    name: "Nominated Node",
    type: "string",
    format: "",
    description: "nominatedNodeName is set only when this pod preempts other pods on the node.",
    priority: 1,
  },
  {
    name: "Readiness Gates",
    type: "string",
    format: "",
    description: "If specified, all readiness gates will be evaluated for pod readiness.",
    priority: 1,
  },
];

/** duration.HumanDuration: "5s", "3m20s", "4h5m", "3d4h", "2y10d". */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 8)
    return days % 365 === 0 ? `${Math.floor(days / 365)}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  return `${Math.floor(days / 365)}y`;
}

/** The epoch milliseconds of a timestamp; NaN for none or an unreadable one. */
function timeOf(timestamp: string | Date | undefined): number {
  return timestamp ? new Date(timestamp).getTime() : NaN;
}

/** translateTimestampSince: "<unknown>" for no time (NaN). */
export function since(at: number, now: number): string {
  return Number.isNaN(at) ? "<unknown>" : humanDuration(now - at);
}

/** The RESTARTS cell: the count, and how long ago the last one was when it is known. */
export function restartCell(restarts: number, lastRestart: number, now: number): string {
  return restarts !== 0 && lastRestart > 0 ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
}

type ContainerStatus = NonNullable<NonNullable<Pod["status"]>["containerStatuses"]>[number];

const finishedAt = (s: ContainerStatus) => {
  const at = s.lastState?.terminated?.finishedAt;
  return at ? new Date(at).getTime() : 0;
};

/** What printPod says of a pod that does not depend on the time: RESTARTS and AGE are left as the times they count from. */
export interface PodPrint {
  name: string;
  ready: string;
  reason: string;
  restarts: number;
  /** Epoch ms the last restart finished; 0 for none known. */
  lastRestart: number;
  /** Epoch ms AGE counts from; NaN for none. */
  created: number;
  /** IP NODE NOMINATED NODE READINESS GATES. */
  wide: string[];
}

/** printPod without the clock: the cells' inputs, for podCells and for the rows kept pre-rendered (table-rows.ts). */
export function podPrint(pod: Pod): PodPrint {
  const status = pod.status ?? {};
  const spec = pod.spec;
  let restarts = 0;
  let sidecarRestarts = 0;
  let total = spec.containers.length;
  let ready = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  let reason: string = status.reason || status.phase || "";
  if (status.conditions?.some((c) => c.type === "PodScheduled" && c.reason === "SchedulingGated"))
    reason = "SchedulingGated";
  const inits = new Map((spec.initContainers ?? []).map((c) => [c.name, c]));
  const restartable = (name: string) => inits.get(name)?.restartPolicy === "Always";
  for (const c of spec.initContainers ?? []) if (c.restartPolicy === "Always") total++;

  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (const [i, c] of initStatuses.entries()) {
    restarts += c.restartCount ?? 0;
    lastRestart = Math.max(lastRestart, finishedAt(c));
    if (restartable(c.name)) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = Math.max(lastSidecarRestart, finishedAt(c));
    }
    const terminated = c.state?.terminated;
    const waiting = c.state?.waiting;
    if (terminated && terminated.exitCode === 0) continue;
    if (restartable(c.name) && c.started) {
      if (c.ready) ready++;
      continue;
    }
    if (terminated) {
      reason = terminated.reason
        ? `Init:${terminated.reason}`
        : terminated.signal
          ? `Init:Signal:${terminated.signal}`
          : `Init:ExitCode:${terminated.exitCode}`;
    } else if (waiting?.reason && waiting.reason !== "PodInitializing") {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${spec.initContainers?.length ?? 0}`;
    }
    initializing = true;
    break;
  }

  const initialized = status.conditions?.some((c) => c.type === "Initialized" && c.status === "True") ?? false;
  if (!initializing || initialized) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      lastRestart = Math.max(lastRestart, finishedAt(c));
      const { waiting, terminated, running } = c.state ?? {};
      if (waiting?.reason) reason = waiting.reason;
      else if (terminated?.reason) reason = terminated.reason;
      else if (terminated)
        reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      else if (c.ready && running) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === "Completed" && hasRunning)
      reason = status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? "Running" : "NotReady";
  }
  const terminal = status.phase === "Succeeded" || status.phase === "Failed";
  if (pod.metadata.deletionTimestamp && status.reason === "NodeLost") reason = "Unknown";
  else if (pod.metadata.deletionTimestamp && !terminal) reason = "Terminating";

  const gates = spec.readinessGates ?? [];
  const trueGates = gates.filter(
    (g) => status.conditions?.find((c) => c.type === g.conditionType)?.status === "True",
  ).length;
  return {
    name: pod.metadata.name,
    ready: `${ready}/${total}`,
    reason,
    restarts,
    lastRestart,
    created: timeOf(pod.metadata.creationTimestamp ?? status.startTime),
    wide: [
      status.podIPs?.[0]?.ip || status.podIP || "<none>",
      spec.nodeName || "<none>",
      status.nominatedNodeName || "<none>",
      gates.length ? `${trueGates}/${gates.length}` : "<none>",
    ],
  };
}

/** The cells of printPod: NAME READY STATUS RESTARTS AGE, and with `wide` IP NODE NOMINATED NODE READINESS GATES. */
export function podCells(pod: Pod, now: number, wide: boolean): Array<string | number> {
  const p = podPrint(pod);
  const cells: Array<string | number> = [
    p.name,
    p.ready,
    p.reason,
    restartCell(p.restarts, p.lastRestart, now),
    since(p.created, now),
  ];
  if (wide) cells.push(...p.wide);
  return cells;
}

/** The row conditions printPod sets for finished pods (kubectl hides them unless -a / shows them in -w). */
export function rowConditions(pod: Pod) {
  if (pod.status?.phase === "Succeeded")
    return [{ type: "Completed", status: "True", reason: "Succeeded", message: "The pod has completed successfully." }];
  if (pod.status?.phase === "Failed")
    return [{ type: "Completed", status: "True", reason: "Failed", message: "The pod failed." }];
  return undefined;
}

/** TableOptions.includeObject: None, Metadata (default) or Object. */
export type IncludeObject = "None" | "Metadata" | "Object";

/** The row's object as includeObject asks (undefined for None). */
export function podRowObject(pod: Pod, include: IncludeObject) {
  if (include === "None") return undefined;
  return include === "Object"
    ? pod
    : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: pod.metadata };
}

/** One pod's row, its object as includeObject asks. */
export function podRow(pod: Pod, now: number, include: IncludeObject) {
  const conditions = rowConditions(pod);
  const object = podRowObject(pod, include);
  return {
    cells: podCells(pod, now, true),
    ...(conditions ? { conditions } : {}),
    ...(object ? { object } : {}),
  };
}

/** A meta.k8s.io/v1 Table of pods; `headers` false leaves the columns out (watch events after the first). */
export function podTable(
  pods: Pod[],
  options: { now: number; include: IncludeObject; resourceVersion?: string; headers?: boolean },
) {
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: options.resourceVersion ? { resourceVersion: options.resourceVersion } : {},
    columnDefinitions: options.headers === false ? [] : POD_COLUMNS,
    rows: pods.map((pod) => podRow(pod, options.now, options.include)),
  };
}

/** Whether the Accept header asks for a meta.k8s.io Table (v1 or v1beta1), as kubectl get does. */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => /;\s*as=Table/.test(part) && /;\s*g=meta\.k8s\.io/.test(part));
}
