// The topology manager (pkg/kubelet/cm/topologymanager): at admission it asks every hint provider (CPU, memory
// and device managers) for NUMA hints per container or per pod (scope), merges them by policy, rejects a pod
// that cannot be aligned with TopologyAffinityError, and otherwise records each container's affinity and has
// every provider allocate.
import type { Pod, V1Container } from "../../../api/types.ts";
import {
  POLICIES,
  POLICY_NONE,
  mergeByPolicy,
  type NUMAInfo,
  type PolicyOptions,
  type ProviderHints,
  type TopologyHint,
} from "./policy.ts";

/** A manager whose allocations have a NUMA locality (upstream's HintProvider): the device manager plugs in here. */
export interface HintProvider {
  /** Resource name → the container's hints; undefined or {} = no preference. */
  getTopologyHints(pod: Pod, container: V1Container): ProviderHints;
  /** The same for the whole pod (scope pod). */
  getPodTopologyHints(pod: Pod): ProviderHints;
  /** Allocates the container's resources once its affinity is known; throws an AdmissionError or any error. */
  allocate(pod: Pod, container: V1Container): void;
}

/** What providers read back: the affinity decided for a container (upstream's Store). */
export interface TopologyAffinityStore {
  getAffinity(podUid: string, containerName: string): TopologyHint;
}

/** An admission refusal with its reason as `code` (upstream's admission.Error: Type() and Error()). */
export class AdmissionError extends Error {
  readonly admission = true;
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** TopologyAffinityError, worded as upstream. */
export const topologyAffinityError = () =>
  new AdmissionError("TopologyAffinityError", "Resources cannot be allocated with Topology locality");

/** admission.GetPodAdmitResult: an AdmissionError as it is, any other error as UnexpectedAdmissionError. */
export function podAdmitResult(error: unknown): { reason: string; message: string } {
  const e = error as Partial<AdmissionError> | undefined;
  if (e?.admission === true && typeof e.code === "string") return { reason: e.code, message: e.message ?? "" };
  return {
    reason: "UnexpectedAdmissionError",
    message: `Allocate failed due to ${e?.message ?? String(error)}, which is unexpected`,
  };
}

export const SCOPE_CONTAINER = "container";
export const SCOPE_POD = "pod";

export interface TopologyManagerOptions {
  policy: string;
  scope: string;
  /** topologyManagerPolicyOptions: prefer-closest-numa-nodes, max-allowable-numa-nodes. */
  policyOptions: Record<string, string>;
  numa: NUMAInfo;
}

export interface TopologyManager extends TopologyAffinityStore {
  addHintProvider(provider: HintProvider): void;
  /** Admits the pod (allocating through every provider) or says why not. */
  admit(pod: Pod): { reason: string; message: string } | undefined;
  removeContainer(podUid: string, containerName: string): void;
  policyName: string;
}

/** Reads topologyManagerPolicyOptions; errors worded as upstream's NewPolicyOptions. */
export function topologyPolicyOptions(options: Record<string, string>): PolicyOptions {
  const result: PolicyOptions = { preferClosestNUMA: false, maxAllowableNUMANodes: 8 };
  for (const [name, value] of Object.entries(options)) {
    if (name === "prefer-closest-numa-nodes") {
      if (value !== "true" && value !== "false")
        throw new Error(
          `bad value for option "${name}": strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
        );
      result.preferClosestNUMA = value === "true";
    } else if (name === "max-allowable-numa-nodes") {
      const n = Number(value);
      if (!Number.isInteger(n))
        throw new Error(
          `bad value for option "${name}": strconv.Atoi: parsing ${JSON.stringify(value)}: invalid syntax`,
        );
      result.maxAllowableNUMANodes = n;
    } else throw new Error(`unknown Topology Manager Policy option: ${JSON.stringify(name)}`);
  }
  return result;
}

/** The containers in upstream's admit order: init containers (sidecars included), then the app's. */
const containersOf = (pod: Pod) => [...(pod.spec.initContainers ?? []), ...pod.spec.containers];

/** A topology manager; throws at start for an unknown policy or scope, or too many NUMA nodes. */
export function createTopologyManager(options: TopologyManagerOptions): TopologyManager {
  if (!POLICIES.includes(options.policy)) throw new Error(`unknown policy: "${options.policy}"`);
  if (options.scope !== SCOPE_CONTAINER && options.scope !== SCOPE_POD)
    throw new Error(`unknown scope: "${options.scope}"`);
  const opts = topologyPolicyOptions(options.policyOptions);
  if (options.numa.nodes.length > opts.maxAllowableNUMANodes)
    throw new Error(`unsupported on machines with more than ${opts.maxAllowableNUMANodes} NUMA Nodes`);
  const providers: HintProvider[] = [];
  const affinities = new Map<string, Map<string, TopologyHint>>();
  const setAffinity = (pod: Pod, container: string, hint: TopologyHint) => {
    const uid = pod.metadata.uid;
    (affinities.get(uid) ?? affinities.set(uid, new Map()).get(uid)!).set(container, hint);
  };
  const allocate = (pod: Pod, container: V1Container) => {
    for (const provider of providers) provider.allocate(pod, container);
  };
  const merge = (hints: ProviderHints[]) => mergeByPolicy(options.policy, options.numa, hints, opts);
  const admitContainers = (pod: Pod) => {
    if (options.policy === POLICY_NONE) {
      for (const c of containersOf(pod)) {
        setAffinity(pod, c.name, { preferred: false });
        allocate(pod, c);
      }
      return;
    }
    if (options.scope === SCOPE_POD) {
      const { hint, admit } = merge(providers.map((p) => p.getPodTopologyHints(pod)));
      if (!admit) throw topologyAffinityError();
      for (const c of containersOf(pod)) {
        setAffinity(pod, c.name, hint);
        allocate(pod, c);
      }
      return;
    }
    for (const c of containersOf(pod)) {
      const { hint, admit } = merge(providers.map((p) => p.getTopologyHints(pod, c)));
      if (!admit) throw topologyAffinityError();
      setAffinity(pod, c.name, hint);
      allocate(pod, c);
    }
  };
  return {
    policyName: options.policy,
    addHintProvider: (provider) => void providers.push(provider),
    getAffinity: (uid, name) => affinities.get(uid)?.get(name) ?? { preferred: false },
    admit(pod) {
      try {
        admitContainers(pod);
        return undefined;
      } catch (error) {
        return podAdmitResult(error);
      }
    },
    removeContainer(uid, name) {
      affinities.get(uid)?.delete(name);
      if (affinities.get(uid)?.size === 0) affinities.delete(uid);
    },
  };
}
