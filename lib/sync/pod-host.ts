// A pod's host setup before its sandbox or containers are created: volumes, pod cgroup, resolv.conf, node capacity.
import { KubeletError, type Pod } from "../api/types.ts";
import type { ConfigLookup } from "../api/config-objects.ts";
import type { PodContext, VolumeMount } from "../container/container-config.ts";
import type { Runtime } from "../container/runtime.ts";
import type { SeccompSettings } from "../container/security-context.ts";
import type { CgroupManager } from "../node/cm/cgroups.ts";
import type { DnsConfigurer } from "../node/network/dns.ts";
import type { VolumeManager } from "../node/volumes/volumes.ts";

export interface PodHostOptions {
  hostname: string;
  hostIP: string;
  networkMode: string;
  /** --pod_logs_dir, where a CRI runtime writes container logs; see PodContext. */
  podLogsDir?: string;
  allowPrivileged: boolean;
  /** See PodContext: the oom_score_adj floor and the CFS quota settings. */
  oomScoreAdjMin?: number;
  cfsQuota?: boolean;
  cfsPeriodUs?: number;
  /** seccompDefault and the root of Localhost seccomp profiles. */
  seccomp?: SeccompSettings;
}

export interface PodHostDeps {
  runtime: Pick<Runtime, "machineInfo">;
  volumes: Pick<VolumeManager, "version" | "setup">;
  /** ConfigMaps and Secrets for env, envFrom and volumes. */
  configs: ConfigLookup;
  /** Pod cgroups (cgroupsPerQOS); absent = Docker's default cgroup. */
  cgroups?: Pick<CgroupManager, "ensurePod">;
  /** Pod resolv.conf files; absent = Docker's own resolv.conf. */
  dns?: Pick<DnsConfigurer, "resolvConfFor" | "clusterDomain">;
  /** The CPU and memory managers' cpusets for a container (node/cm resource managers); absent = unpinned. */
  cpusets?: (podUid: string, containerName: string) => { cpus?: string; mems?: string };
}

export interface PodHost {
  /**
   * Prepares the node for a pod: mounts its volumes, creates its pod cgroup and writes its resolv.conf (its
   * /etc/hosts follows with the pod's IP); returns the context its sandbox and containers are configured from
   * (podIP still empty: the sandbox gives it).
   */
  prepare(pod: Pod): Promise<PodContext>;
  /** Sets a pod's volumes up, and rewrites them whenever what they hold changed (a ConfigMap edit, a label). */
  mountVolumes(pod: Pod): Promise<{ hash: string; paths: Map<string, VolumeMount> }>;
  /** The node's cpus and memory, asked of the runtime until it answers once. */
  nodeInfo(): Promise<PodContext["node"]>;
  /** Forgets a removed pod's mounted volumes. */
  forget(podUid: string): void;
}

/** The pods' host setup; the context it returns configures their sandboxes and containers (container-config.ts). */
export function createPodHost(options: PodHostOptions, deps: PodHostDeps): PodHost {
  const volumeCache = new Map<string, { hash: string; paths: Map<string, VolumeMount> }>();
  let node: PodContext["node"] | undefined;

  // Only an answer is cached: a failed machineInfo() (Docker restarting) fails this sync, and the next asks again,
  // so no pod's resource fieldRefs are computed from a made-up node.
  const nodeInfo = async () => {
    if (!node) {
      const info = await deps.runtime.machineInfo().catch((error: KubeletError) => {
        throw new KubeletError(error.code ?? "RuntimeError", `cannot read the node's capacity: ${error.message}`, {
          cause: error,
        });
      });
      node = { cpus: info.cpus, memoryBytes: info.memoryBytes };
    }
    return node;
  };

  const mountVolumes = async (pod: Pod) => {
    const hash = deps.volumes.version(pod);
    let volumes = volumeCache.get(pod.metadata.uid);
    if (!volumes || volumes.hash !== hash) {
      volumes = { hash, paths: await deps.volumes.setup(pod, await nodeInfo()) };
      volumeCache.set(pod.metadata.uid, volumes);
    }
    return volumes;
  };

  return {
    async prepare(pod) {
      const volumes = await mountVolumes(pod);
      return {
        nodeName: options.hostname,
        hostIP: options.hostIP,
        podIP: "",
        networkMode: options.networkMode,
        ...(options.podLogsDir ? { podLogsDir: options.podLogsDir } : {}),
        allowPrivileged: options.allowPrivileged,
        volumePaths: volumes.paths,
        node: await nodeInfo(),
        configs: deps.configs,
        ...(deps.cgroups ? { cgroupParent: await deps.cgroups.ensurePod(pod) } : {}),
        ...(deps.dns
          ? {
              resolvConfPath: await deps.dns.resolvConfFor(pod),
              clusterDomain: deps.dns.clusterDomain,
            }
          : {}),
        oomScoreAdjMin: options.oomScoreAdjMin,
        cfsQuota: options.cfsQuota,
        cfsPeriodUs: options.cfsPeriodUs,
        ...(options.seccomp ? { seccomp: options.seccomp } : {}),
        ...(deps.cpusets ? { cpusets: (name: string) => deps.cpusets!(pod.metadata.uid, name) } : {}),
      };
    },
    mountVolumes,
    nodeInfo,
    forget: (podUid) => void volumeCache.delete(podUid),
  };
}
