// Fleet mode for `run` (etcd configured, --register_node on): the node record, pod statuses and
// events written to etcd on the node's lease, by the fleet reporter. The etcd client loads only
// when used, like the etcd source.
import { ephemeralStorageAllocatable } from "./node/cm/ephemeral-storage.ts";
import pkg from "../package.json" with { type: "json" };
import { systemClock } from "./clock.ts";
import type { KubeletConfig } from "./config/config-types.ts";
import { etcdSettings } from "./config/etcd-config.ts";
import type { Runtime } from "./container/runtime.ts";
import type { V1Node } from "./api/types.ts";
import type { Logger } from "./log.ts";
import { nodeAllocatable } from "./node/cm/cgroups.ts";
import { podCapacity } from "./node/cm/pod-capacity.ts";
import { createFleetReporter, type FleetReporterDeps } from "./node/status/fleet-reporter.ts";
import { buildNode, readHostFacts, readinessFrom, type PressureObserver } from "./node/status/node-status.ts";
import type { HealthReport } from "./server/info-server.ts";

/** What the node's record is built from beside the configuration (nodeRecord). */
export interface NodeRecordDeps {
  runtime: Runtime;
  health(): Promise<HealthReport>;
  /** The info server's port once it listens (0 = none). */
  port(): number;
  pressure: PressureObserver;
  /** The device plugins' resources (example.com/widget: "2"), in capacity and allocatable. */
  extendedResources?: () => { capacity: Record<string, string>; allocatable: Record<string, string> };
}

/**
 * The node's record as of now (node/status/node-status.ts), facts about the host read once: what fleet mode writes
 * to etcd and what the API's /api/v1/nodes serves. `previous` keeps the conditions' transition times.
 */
export function nodeRecord(
  config: KubeletConfig,
  node: { name: string; ip: string },
  deps: NodeRecordDeps,
): (previous?: V1Node) => Promise<V1Node> {
  const host = readHostFacts(config.rootDir);
  const reserved = { kube: config.kubeReserved, system: config.systemReserved, evictionHard: config.evictionHard };
  const allocatable = {
    ...nodeAllocatable({ milliCpu: host.cpus * 1000, memoryBytes: host.memoryBytes }, reserved),
    ...(config.localStorageCapacityIsolation
      ? { ephemeralStorageBytes: ephemeralStorageAllocatable(host.ephemeralStorageBytes, reserved) }
      : {}),
  };
  return async (previous) => {
    const [health, runtime] = await Promise.all([deps.health(), deps.runtime.version().catch(() => undefined)]);
    return buildNode({
      name: node.name,
      hostIP: node.ip,
      port: deps.port(),
      kubeletVersion: `v${pkg.version}`,
      host,
      maxPods: podCapacity(config.maxPods, config.podsPerCore, host.cpus),
      labels: config.nodeLabels,
      allocatable,
      ...(deps.extendedResources ? { extended: deps.extendedResources() } : {}),
      runtime,
      readiness: readinessFrom(health.checks),
      pressure: deps.pressure.conditions(),
      now: new Date().toISOString(),
      previous,
    });
  };
}

/**
 * Fleet mode (etcd configured, --register_node on): the node record, pod statuses and events written to etcd on
 * the node's lease. The etcd client loads only when used, like the etcd source.
 */
export async function createFleetMode(
  config: KubeletConfig,
  node: { name: string; ip: string },
  deps: Pick<FleetReporterDeps, "pods" | "podsVersion" | "onPodsChange" | "events"> & NodeRecordDeps & { log: Logger },
): Promise<{ run(signal: AbortSignal): Promise<void>; close(): void } | undefined> {
  if (!config.registerNode || (config.etcdServers.length === 0 && !config.etcdConfig)) return undefined;
  const { createEtcdClient } = await import("./sources/etcd-client.ts");
  const client = createEtcdClient(etcdSettings(config));
  const reporter = createFleetReporter(
    {
      hostname: node.name,
      leaseDurationMs: config.nodeLeaseDuration,
      updateFrequencyMs: config.nodeStatusUpdateFrequency,
      reportFrequencyMs: config.nodeStatusReportFrequency,
      clock: systemClock,
      log: deps.log,
    },
    {
      store: client,
      pods: deps.pods,
      podsVersion: deps.podsVersion,
      onPodsChange: deps.onPodsChange,
      events: deps.events,
      node: nodeRecord(config, node, deps),
    },
  );
  return { run: (signal) => reporter.run(signal), close: () => client.close() };
}
