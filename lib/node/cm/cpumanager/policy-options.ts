// cpuManagerPolicyOptions (pkg/kubelet/cm/cpumanager/policy_options.go): the options this kubelet implements,
// parsed and checked against the machine and the topology manager policy, with upstream's errors.
import type { CPUTopology } from "../topology.ts";

export const FULL_PCPUS_ONLY = "full-pcpus-only";
export const DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa";
export const ALIGN_BY_SOCKET = "align-by-socket";
const KNOWN = [FULL_PCPUS_ONLY, DISTRIBUTE_CPUS_ACROSS_NUMA, ALIGN_BY_SOCKET];

export interface StaticPolicyOptions {
  fullPhysicalCPUsOnly: boolean;
  distributeCPUsAcrossNUMA: boolean;
  alignBySocket: boolean;
}

/** NewStaticPolicyOptions: each option a boolean; an option upstream has and this kubelet lacks is refused. */
export function staticPolicyOptions(options: Record<string, string>): StaticPolicyOptions {
  const result: StaticPolicyOptions = {
    fullPhysicalCPUsOnly: false,
    distributeCPUsAcrossNUMA: false,
    alignBySocket: false,
  };
  for (const [name, value] of Object.entries(options)) {
    if (!KNOWN.includes(name))
      throw new Error(
        `unknown CPU Manager Policy option: ${JSON.stringify(name)} (this kubelet implements ${KNOWN.join(", ")})`,
      );
    if (value !== "true" && value !== "false")
      throw new Error(
        `bad value for option ${JSON.stringify(name)}: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
      );
    const on = value === "true";
    if (name === FULL_PCPUS_ONLY) result.fullPhysicalCPUsOnly = on;
    else if (name === DISTRIBUTE_CPUS_ACROSS_NUMA) result.distributeCPUsAcrossNUMA = on;
    else result.alignBySocket = on;
  }
  return result;
}

/** ValidateStaticPolicyOptions: align-by-socket needs NUMA nodes no larger than sockets and no single-numa-node. */
export function validateStaticPolicyOptions(
  opts: StaticPolicyOptions,
  topo: CPUTopology,
  topologyPolicy: string,
): void {
  if (!opts.alignBySocket) return;
  if (topologyPolicy === "single-numa-node")
    throw new Error(
      `Topolgy manager single-numa-node policy is incompatible with CPUManager ${ALIGN_BY_SOCKET} policy option`,
    );
  if (topo.numSockets > topo.numNUMANodes)
    throw new Error(
      "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA",
    );
}
