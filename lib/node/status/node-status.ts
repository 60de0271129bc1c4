// The node's own record (the Node object the modern kubelet's syncNodeStatus posts): identity,
// capacity, nodeInfo, addresses and the Ready / pressure conditions, built from facts gathered once
// (readHostFacts) plus what changes (runtime version, health, pressure). Pure apart from readHostFacts.
import { readFileSync, statfsSync } from "node:fs";
import { cpus, hostname as osHostname, release, totalmem } from "node:os";
import type { RuntimeStatus, RuntimeVersion } from "../../container/runtime.ts";
import type { V1Node, V1NodeCondition } from "../../api/types.ts";

/** Facts about the machine that do not change while the kubelet runs. */
export interface HostFacts {
  hostname: string;
  cpus: number;
  memoryBytes: number;
  /** Size of the filesystem holding --root_dir; 0 when unknown. */
  ephemeralStorageBytes: number;
  kernelVersion: string;
  osImage: string;
  /** Go's GOARCH spelling: amd64, arm64… */
  architecture: string;
  machineID: string;
  bootID: string;
}

/** One pressure condition as an eviction manager sees it. */
export interface PressureCondition {
  type: "MemoryPressure" | "DiskPressure" | "PIDPressure";
  pressure: boolean;
  reason: string;
  message: string;
}

/** Where the pressure conditions come from; the eviction manager implements it. */
export interface PressureObserver {
  conditions(): PressureCondition[];
}

/** No eviction manager: no pressure, in the real kubelet's wording for that state. */
export const noPressure: PressureObserver = {
  conditions: () => [
    {
      type: "MemoryPressure",
      pressure: false,
      reason: "KubeletHasSufficientMemory",
      message: "kubelet has sufficient memory available",
    },
    {
      type: "DiskPressure",
      pressure: false,
      reason: "KubeletHasNoDiskPressure",
      message: "kubelet has no disk pressure",
    },
    {
      type: "PIDPressure",
      pressure: false,
      reason: "KubeletHasSufficientPID",
      message: "kubelet has sufficient PID available",
    },
  ],
};

/** Whether the node can run pods: the /healthz checks for Docker and the sync loop. */
export interface Readiness {
  ready: boolean;
  /** Why not, e.g. "container runtime is down: …"; empty when ready. */
  message: string;
}

/** One /healthz check; `why` words its failure in the node's Ready condition when the check's name does not. */
export interface HealthCheck {
  name: string;
  ok: boolean;
  message: string;
  why?: string;
}

/** Name of the /healthz check of the container runtime, whichever it is. */
export const RUNTIME_CHECK = "runtime";

/** Ready from the /healthz checks: the runtime answers and is ready ("runtime"), the sync loop is not stuck ("syncloop"). */
export function readinessFrom(checks: HealthCheck[]): Readiness {
  const why: Record<string, string> = {
    [RUNTIME_CHECK]: "container runtime is down",
    syncloop: "sync loop is not healthy",
    pleg: "PLEG is not healthy",
    shutdown: "node is shutting down",
  };
  const failing = checks.filter((c) => !c.ok && why[c.name]);
  return {
    ready: failing.length === 0,
    message: failing.map((c) => `${c.why ?? why[c.name]}: ${c.message}`).join("; "),
  };
}

/**
 * The runtime's check from its CRI Status (a failed call is the check failing with its message): the Go kubelet
 * requires RuntimeReady, then NetworkReady, and words a false one as `container runtime network not ready:
 * NetworkReady=false reason:…`.
 */
export function runtimeCheck(status: RuntimeStatus): HealthCheck {
  for (const [type, why] of [
    ["RuntimeReady", "container runtime not ready"],
    ["NetworkReady", "container runtime network not ready"],
  ] as const) {
    const c = status.conditions.find((c) => c.type === type);
    if (!c) return { name: RUNTIME_CHECK, ok: false, why, message: `${type} condition is missing` };
    if (!c.status)
      return { name: RUNTIME_CHECK, ok: false, why, message: `${type}=false reason:${c.reason} message:${c.message}` };
  }
  return { name: RUNTIME_CHECK, ok: true, message: "ok" };
}

export interface NodeInput {
  name: string;
  hostIP: string;
  /** Info server port (daemonEndpoints.kubeletEndpoint). */
  port: number;
  kubeletVersion: string;
  host: HostFacts;
  /** --max_pods */
  maxPods: number;
  /** --node_labels */
  labels?: Record<string, string>;
  /** Capacity less kubeReserved, systemReserved and the hard eviction threshold (node/cgroups.ts). */
  allocatable: { milliCpu: number; memoryBytes: number; ephemeralStorageBytes?: number };
  /** Extended resources from device plugins: a gone plugin's devices stay in capacity, not in allocatable. */
  extended?: { capacity: Record<string, string>; allocatable: Record<string, string> };
  /** undefined when the runtime did not answer. */
  runtime?: RuntimeVersion;
  readiness: Readiness;
  pressure: PressureCondition[];
  /** ISO time of this heartbeat. */
  now: string;
  /** The record built last time: conditions keep their lastTransitionTime while unchanged. */
  previous?: V1Node;
}

/** The Node record for /registry/nodes/<name>. */
export function buildNode(input: NodeInput): V1Node {
  const { host } = input;
  const capacity: Record<string, string> = {
    cpu: String(host.cpus),
    memory: `${Math.floor(host.memoryBytes / 1024)}Ki`,
    pods: String(input.maxPods),
  };
  if (host.ephemeralStorageBytes > 0)
    capacity["ephemeral-storage"] = `${Math.floor(host.ephemeralStorageBytes / 1024)}Ki`;
  const milliCpu = input.allocatable.milliCpu;
  const allocatable = {
    ...capacity,
    cpu: milliCpu % 1000 === 0 ? String(milliCpu / 1000) : `${milliCpu}m`,
    memory: `${Math.floor(input.allocatable.memoryBytes / 1024)}Ki`,
    ...(input.allocatable.ephemeralStorageBytes !== undefined && capacity["ephemeral-storage"]
      ? { "ephemeral-storage": `${Math.floor(input.allocatable.ephemeralStorageBytes / 1024)}Ki` }
      : {}),
    ...input.extended?.allocatable,
  };
  Object.assign(capacity, input.extended?.capacity);
  const before = new Map((input.previous?.status?.conditions ?? []).map((c) => [c.type, c]));
  const condition = (type: string, status: "True" | "False", reason: string, message: string): V1NodeCondition => {
    const last = before.get(type);
    return {
      type,
      status,
      lastHeartbeatTime: input.now,
      lastTransitionTime: last?.status === status && last.lastTransitionTime ? last.lastTransitionTime : input.now,
      reason,
      message,
    };
  };
  const conditions = [
    ...input.pressure.map((p) => condition(p.type, p.pressure ? "True" : "False", p.reason, p.message)),
    input.readiness.ready
      ? condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
      : condition("Ready", "False", "KubeletNotReady", input.readiness.message),
  ];
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: input.name,
      labels: {
        ...input.labels,
        "kubernetes.io/hostname": input.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": host.architecture,
      },
      creationTimestamp: input.previous?.metadata?.creationTimestamp ?? input.now,
    },
    spec: {},
    status: {
      capacity,
      allocatable,
      conditions,
      addresses: [
        { type: "InternalIP", address: input.hostIP },
        { type: "Hostname", address: host.hostname },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: input.port } },
      nodeInfo: {
        machineID: host.machineID,
        systemUUID: "",
        bootID: host.bootID,
        kernelVersion: host.kernelVersion,
        osImage: host.osImage,
        containerRuntimeVersion: input.runtime
          ? `${input.runtime.runtimeName}://${input.runtime.runtimeVersion}`
          : "docker://unknown",
        kubeletVersion: input.kubeletVersion,
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: host.architecture,
      },
    },
  };
}

/** The record without heartbeat times: two records with the same signature need no write. */
export function nodeSignature(node: V1Node): string {
  return JSON.stringify({
    ...node,
    status: {
      ...node.status,
      conditions: node.status?.conditions?.map(({ lastHeartbeatTime: _, ...rest }) => rest),
    },
  });
}

/** Reads the machine's facts once (os-release, machine-id, boot id, the size of `rootDir`'s filesystem). */
export function readHostFacts(rootDir: string): HostFacts {
  const text = (path: string) => {
    try {
      return readFileSync(path, "utf8").trim();
    } catch {
      return "";
    }
  };
  const osRelease = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text("/etc/os-release"))?.[1] ?? "Linux";
  let ephemeralStorageBytes = 0;
  try {
    const fs = statfsSync(rootDir);
    ephemeralStorageBytes = fs.blocks * fs.bsize;
  } catch {
    // an unreadable root dir is reported by prepareRootDir, not here
  }
  return {
    hostname: osHostname(),
    cpus: cpus().length,
    memoryBytes: totalmem(),
    ephemeralStorageBytes,
    kernelVersion: release(),
    osImage: osRelease,
    architecture: goArch(process.arch),
    machineID: text("/etc/machine-id"),
    bootID: text("/proc/sys/kernel/random/boot_id"),
  };
}

/** Node.js process.arch → the GOARCH the kubernetes.io/arch label carries. */
export function goArch(arch: string): string {
  return (
    ({ x64: "amd64", ia32: "386", arm: "arm", arm64: "arm64", ppc64: "ppc64le", s390x: "s390x" } as const)[
      arch as "x64"
    ] ?? arch
  );
}
