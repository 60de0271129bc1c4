// Where and how pods run on this node, set up once at start: the cgroup driver (the runtime's), the
// QoS cgroups bounded by node allocatable (created here), the oom_score_adj floor, CFS quota settings
// and each pod's resolv.conf. Used by `run` and `runonce` through the assembly; `plan` changes nothing.
import { cpus, totalmem } from "node:os";
import { GUARANTEED_OOM_SCORE_ADJ, POD_INFRA_OOM_SCORE_ADJ } from "../../api/qos.ts";
import { KubeletError } from "../../api/types.ts";
import type { Runtime } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import type { KubeletMetrics } from "../../metrics.ts";
import { cgroupPath, cgroupVersion, createCgroupManager, nodeAllocatable } from "./cgroups.ts";
import { chooseCgroupDriver, hostDefaultDriver, planQosCgroups } from "./cgroup-driver.ts";
import { createDnsConfigurer, type DnsConfigurerOptions } from "../network/dns.ts";
import type { EventRecorder } from "../events/events.ts";
import { oomScoreAdjFloor } from "./oom-score.ts";
import { withReservedSystemCPUs } from "./cpuset.ts";

/** The KubeletConfiguration fields the placement reads (durations in milliseconds, as the config has them). */
export interface PlacementSettings
  extends Pick<DnsConfigurerOptions, "clusterDns" | "clusterDomain" | "resolvConf" | "rootDir"> {
  cgroupDriver: Parameters<typeof chooseCgroupDriver>[0];
  cgroupsPerQos: boolean;
  cgroupRoot: string;
  enforceNodeAllocatable: string[];
  podPidsLimit: number;
  cpuCfsQuota: boolean;
  cpuCfsQuotaPeriod: number;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  evictionHard: Record<string, string>;
  reservedCpus: string;
}

/** What the pod workers are given by the placement: options for every pod, the DNS and cgroup managers. */
export type PodPlacement = Awaited<ReturnType<typeof setUpPodPlacement>>;

/**
 * Where and how pods run on this node: the cgroup driver (Docker's), QoS cgroups bounded by node
 * allocatable, the oom_score_adj floor, CFS quota settings and each pod's resolv.conf.
 */
export async function setUpPodPlacement(
  config: PlacementSettings,
  {
    events,
    log,
    runtime,
    metrics,
    explicit,
  }: {
    events: EventRecorder;
    log: Logger;
    runtime: Runtime;
    /** kubelet_cgroup_manager_duration_seconds. */
    metrics?: Pick<KubeletMetrics, "cgroupManager">;
    /** Whether the setting was given (a flag or the config file), not defaulted. */
    explicit: (key: "cgroupsPerQos" | "enforceNodeAllocatable") => boolean;
  },
) {
  const dns = createDnsConfigurer(
    {
      clusterDns: config.clusterDns,
      clusterDomain: config.clusterDomain,
      resolvConf: config.resolvConf,
      rootDir: config.rootDir,
    },
    { events },
  );
  const oom = await oomScoreAdjFloor();
  if (oom.why)
    log.warn(
      `the kernel refuses negative oom_score_adj here (${oom.why}): containers get at least ${oom.floor} (Guaranteed ${GUARANTEED_OOM_SCORE_ADJ} and pod sandboxes ${POD_INFRA_OOM_SCORE_ADJ} are clamped)`,
    );
  const options = {
    oomScoreAdjMin: oom.floor,
    cfsQuota: config.cpuCfsQuota,
    cfsPeriodUs: config.cpuCfsQuotaPeriod * 1000,
  };
  const version = cgroupVersion();
  // The driver must be the runtime's: pods placed under cgroupfs paths on a systemd runtime fail every create.
  const reported = await runtime.machineInfo().then(
    (info) => info.cgroupDriver,
    () => undefined,
  );
  const { driver, source } = chooseCgroupDriver(config.cgroupDriver, reported, hostDefaultDriver(version));
  const plan = planQosCgroups({
    cgroupsPerQos: config.cgroupsPerQos,
    enforcePods: config.enforceNodeAllocatable.includes("pods"),
    explicit: explicit("cgroupsPerQos") || explicit("enforceNodeAllocatable"),
    version,
    driver,
  });
  if (plan.warning) log.warn(plan.warning);
  if (!plan.qos) return { options, deps: { dns } };
  const cgroups = createCgroupManager({
    driver,
    root: config.cgroupRoot,
    cfsQuota: config.cpuCfsQuota,
    cfsPeriodUs: config.cpuCfsQuotaPeriod * 1000,
    pidsLimit: config.podPidsLimit,
    log: log.child("cgroups"),
    ...(metrics ? { metrics } : {}),
  });
  const capacity = { milliCpu: cpus().length * 1000, memoryBytes: totalmem() };
  const allocatable = plan.enforcePods
    ? nodeAllocatable(capacity, { ...withReservedSystemCPUs(config), evictionHard: config.evictionHard })
    : undefined;
  const kubepods = cgroupPath(config.cgroupRoot, ["kubepods"], driver);
  try {
    await cgroups.init(allocatable);
  } catch (error) {
    throw new KubeletError(
      "CgroupSetupFailed",
      `cannot set up the QoS cgroups under ${kubepods}: ${(error as Error).message}; run as root, or give --cgroups_per_qos=false --enforce_node_allocatable=none to leave pods in the container runtime's default cgroup`,
      { cause: error },
    );
  }
  const ignored = Object.keys({ ...config.kubeReserved, ...config.systemReserved }).filter(
    (name) => name !== "cpu" && name !== "memory",
  );
  if (ignored.length)
    log.warn(`reserved ${[...new Set(ignored)].join(", ")} are not enforced here: only cpu and memory bound kubepods`);
  log.info(
    `pods run under ${kubepods} (cgroup v${cgroups.version}, ${driver} driver, ${source})` +
      (allocatable
        ? `, bounded by node allocatable: cpu ${allocatable.milliCpu}m, memory ${allocatable.memoryBytes} bytes (capacity − kubeReserved − systemReserved − evictionHard memory.available)`
        : ""),
  );
  return { options, deps: { dns, cgroups } };
}
