// One read of every pod's and container's cgroup (cumulative CPU, memory, limits) and of each pod's
// network namespace, matched to the runtime's last listing: what /stats/summary, /metrics/resource
// and /metrics/cadvisor report. Only files are read here (the cgroup hierarchy and /proc); the
// listing is the resource analyzer's, so a scrape makes no runtime call per container.
import { readlinkSync } from "node:fs";
import type { ContainerSummary, PodSandboxSummary } from "../../container/runtime.ts";
import { LABEL } from "../../container/runtime.ts";
import type { CgroupDetail, CgroupReader, CgroupStats, ContainerCgroup } from "./cgroup-stats.ts";
import { createOpenFiles } from "./open-files.ts";

/** One interface's counters (/proc/<pid>/net/dev). */
export interface InterfaceSample {
  name: string;
  rxBytes: number;
  rxPackets: number;
  rxErrors: number;
  rxDropped: number;
  txBytes: number;
  txPackets: number;
  txErrors: number;
  txDropped: number;
}

export interface ContainerSample {
  /** The runtime's container (a sandbox's pause container: `sandbox` set, the listing's sandbox as summary). */
  id: string;
  /** io.kubernetes.container.name; "POD" for a sandbox. */
  name: string;
  /** The runtime's name for it (Docker: `k8s_…`; containerd: the id). */
  runtimeName: string;
  image: string;
  createdAt: number;
  sandbox: boolean;
  /** Cgroup path below the mount point. */
  cgroup: string;
  stats: CgroupStats;
  /** Bytes in its writable layer at the resource analyzer's last filesystem walk. */
  rootfsBytes?: number;
}

export interface PodSample {
  uid: string;
  name: string;
  namespace: string;
  cgroup: string;
  stats: CgroupStats;
  containers: ContainerSample[];
  /** The pod network namespace's interfaces (lo, veth and docker ones left out, as cAdvisor does). */
  interfaces: InterfaceSample[];
}

export interface UsageSample {
  /** ms since the epoch. */
  time: number;
  /** The root cgroup: the whole machine, as cAdvisor's id="/". */
  root?: CgroupStats;
  pods: PodSample[];
}

/** The runtime objects a sample names: the resource analyzer's last listing. */
export interface RuntimeListing {
  containers: ContainerSummary[];
  sandboxes: PodSandboxSummary[];
  /** Each pod's resources, declared and reported, as one text (by uid): its cgroups' limits are read again when it changes. */
  podResources?: Map<string, string>;
}

/**
 * How long a cgroup's limits are taken from an earlier read at most: they change when a container starts or a pod is
 * resized (both change the key they are read under), and this catches a change made beside the kubelet (`docker
 * update`) within a few scrapes.
 */
export const LIMITS_MAX_AGE_MS = 300_000;

/** A sandbox's first process and the network namespace it is in, found under its pod's listing key. */
interface SandboxNet {
  key: string;
  pid: number;
  namespace: string | undefined;
}

/** Interfaces cAdvisor does not report (its network ignoredDevicePrefixes). */
const IGNORED_INTERFACES = /^(lo|veth|docker|nerdctl)/;

/** /proc/<pid>/net/dev parsed, ignored interfaces left out. */
export function parseNetDev(text: string): InterfaceSample[] {
  return text
    .split("\n")
    .slice(2)
    .flatMap((line) => {
      const match = /^\s*([^:]+):\s*(.*)$/.exec(line);
      if (!match || IGNORED_INTERFACES.test(match[1]!)) return [];
      const f = match[2]!.trim().split(/\s+/).map(Number);
      return [
        {
          name: match[1]!,
          rxBytes: f[0] ?? 0,
          rxPackets: f[1] ?? 0,
          rxErrors: f[2] ?? 0,
          rxDropped: f[3] ?? 0,
          txBytes: f[8] ?? 0,
          txPackets: f[9] ?? 0,
          txErrors: f[10] ?? 0,
          txDropped: f[11] ?? 0,
        },
      ];
    });
}

export function createUsageSampler(deps: {
  reader: CgroupReader;
  podCgroups(): Promise<Map<string, string>>;
  listing(): RuntimeListing;
  now(): number;
  /** Root of /proc (tests). */
  procRoot?: string;
}) {
  const proc = deps.procRoot ?? "/proc";
  /** /proc/<pid>/net/dev of the sandboxes, kept open as the cgroup files are (the kernel writes it afresh per read). */
  const procFiles = createOpenFiles({ limit: 1024 });
  /**
   * Each sandbox cgroup's first process and network namespace, looked up again only when its pod's listing changed
   * (the pause process lives as long as the sandbox is ready), not with a cgroup.procs read and a readlink per pod
   * and sample.
   */
  let sandboxNets = new Map<string, SandboxNet>();
  /**
   * A pod's interfaces, read once per network namespace and sample: pods on the host's network (hostNetwork) share
   * the node's, whose counters a namespace's link names (`net:[<inode>]`) without reading them.
   */
  const interfacesOf = async (
    cgroup: string,
    key: string,
    byNamespace: Map<string, InterfaceSample[]>,
    nets: Map<string, SandboxNet>,
  ): Promise<InterfaceSample[]> => {
    let net = sandboxNets.get(cgroup);
    if (net?.key !== key) {
      // The file kept open names a namespace, not a process: a new process given the old one's pid is not in it.
      if (net) procFiles.forget(`${proc}/${net.pid}/net/dev`);
      const pid = await deps.reader.firstPid(cgroup);
      if (pid === undefined) return [];
      let namespace: string | undefined;
      try {
        namespace = readlinkSync(`${proc}/${pid}/ns/net`);
      } catch {}
      net = { key, pid, namespace };
    }
    const known = net.namespace === undefined ? undefined : byNamespace.get(net.namespace);
    if (known) {
      nets.set(cgroup, net);
      return known;
    }
    // Synchronous, as the cgroup files: the kernel generates it on read (an asynchronous read per pod every 10 s cost
    // more in the thread pool and promises than the read itself). Unreadable, the process went: looked up again.
    const text = procFiles.read(`${proc}/${net.pid}/net/dev`);
    if (!text) return [];
    nets.set(cgroup, net);
    const read = parseNetDev(text);
    if (net.namespace !== undefined) byNamespace.set(net.namespace, read);
    return read;
  };

  /**
   * Each pod cgroup's container cgroups as last found, with the listing's ids and states of the pod they were found
   * for: a pod's container cgroups change only when its containers do, so the directory is read again only then,
   * not for every pod at every collection (110 directory reads every 10 s at 110 pods). A running container or
   * ready sandbox the listing names but the last read did not find (its cgroup made after its state changed) has
   * its pod's directory read again, until it is found.
   */
  let foundCgroups = new Map<string, { key: string; cgroups: Promise<ContainerCgroup[]> }>();
  const containerCgroups = async (cgroup: string, key: string, live: string[]) => {
    const known = foundCgroups.get(cgroup);
    if (known?.key === key) {
      const found = await known.cgroups;
      if (live.every((id) => found.some((c) => c.id === id))) return found;
    }
    return deps.reader.containers(cgroup);
  };
  return {
    /**
     * Reads every pod cgroup the listing knows of, with its containers' (and unless "usage", the root cgroup); below
     * "all", sandboxes' cgroups are not read and their pause containers not listed. Without `network`, no pod's
     * /proc/<pid>/net/dev is read (its interfaces are empty).
     */
    async sample(detail: CgroupDetail = "all", network = true): Promise<UsageSample> {
      const { containers, sandboxes, podResources } = deps.listing();
      const byId = new Map(containers.map((c) => [c.id, c]));
      const sandboxById = new Map(sandboxes.map((s) => [s.id, s]));
      const keys = new Map<string, string>();
      /** Each pod's running containers and ready sandboxes: those with a cgroup to find. */
      const live = new Map<string, string[]>();
      const listed = (uid: string | undefined, id: string, state: string, running: boolean) => {
        if (uid === undefined) return;
        keys.set(uid, `${keys.get(uid) ?? ""}${id}:${state} `);
        if (running) live.set(uid, [...(live.get(uid) ?? []), id]);
      };
      for (const c of containers) listed(c.labels[LABEL.podUid], c.id, c.state, c.state === "CONTAINER_RUNNING");
      for (const s of sandboxes) listed(s.metadata.uid, s.id, s.state, s.state === "ready");
      const time = deps.now();
      const period = Math.floor(time / LIMITS_MAX_AGE_MS);
      const root = detail !== "usage" ? deps.reader.read("/", detail) : Promise.resolve(undefined);
      const next = new Map<string, { key: string; cgroups: Promise<ContainerCgroup[]> }>();
      const namespaces = new Map<string, InterfaceSample[]>();
      const nets = new Map<string, SandboxNet>();
      const pods = await Promise.all(
        [...(await deps.podCgroups())].map(async ([uid, cgroup]): Promise<PodSample | undefined> => {
          const key = keys.get(uid) ?? "";
          const cgroups = containerCgroups(cgroup, key, live.get(uid) ?? []);
          next.set(cgroup, { key, cgroups });
          // The pod's and its containers' limits are read again when a container of the pod starts or changes state,
          // when the pod's resources change (an in-place resize) and once per LIMITS_MAX_AGE_MS.
          const limitsKey = `${key}|${podResources?.get(uid) ?? ""}|${period}`;
          const [stats, found] = await Promise.all([deps.reader.read(cgroup, detail, limitsKey), cgroups]);
          if (!stats) return undefined;
          let name = "";
          let namespace = "";
          let podNetwork: Promise<InterfaceSample[]> = Promise.resolve([]);
          const samples = await Promise.all(
            found.map(async ({ id, path }): Promise<ContainerSample | undefined> => {
              const container = byId.get(id);
              const sandbox = sandboxById.get(id);
              if (!container && !sandbox) return undefined;
              if (sandbox) {
                name = sandbox.metadata.name;
                namespace = sandbox.metadata.namespace;
                // Read only for whoever shows networks (/stats/summary, /metrics/cadvisor), not eviction's ranking.
                if (network) podNetwork = interfacesOf(path, key, namespaces, nets);
                // The pause container's own usage is cAdvisor's POD series alone: below "all" (the summary,
                // /metrics/resource) its cgroup only names the pod and holds its network.
                if (detail !== "all") return undefined;
              }
              // A container's process count is not shown (the summary's process_stats is the pod's).
              const cstats = await deps.reader.read(path, detail === "summary" ? "limits" : detail, limitsKey);
              if (!cstats) return undefined;
              if (sandbox) {
                return {
                  id,
                  name: "POD",
                  runtimeName: (container?.name ?? id) || id,
                  image: container?.image ?? "",
                  createdAt: sandbox.createdAt,
                  sandbox: true,
                  cgroup: path,
                  stats: cstats,
                };
              }
              name ||= container!.labels[LABEL.podName] ?? "";
              namespace ||= container!.labels[LABEL.podNamespace] ?? "";
              return {
                id,
                name: container!.labels[LABEL.containerName] ?? "",
                runtimeName: container!.runtimeName ? id : container!.name,
                image: container!.image,
                createdAt: container!.createdAt,
                sandbox: false,
                cgroup: path,
                stats: cstats,
              };
            }),
          );
          if (!name) return undefined;
          return {
            uid,
            name,
            namespace,
            cgroup,
            stats,
            containers: samples.filter((s): s is ContainerSample => !!s),
            interfaces: await podNetwork,
          };
        }),
      );
      deps.reader.sweep();
      foundCgroups = next;
      if (network) {
        sandboxNets = nets;
        procFiles.sweep();
      }
      return { time, root: await root, pods: pods.filter((p): p is PodSample => !!p) };
    },
  };
}

export type UsageSampler = ReturnType<typeof createUsageSampler>;
