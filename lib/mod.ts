// The kubelet library's one public file, in pipeline order. Each folder's README.md says what it owns and
// which Go package it mirrors; what each may import is the one table in docs/architecture.md#layers.
//   api/        types.ts (pod model), manifest.ts (text → pods), validation.ts, quantity.ts, duration.ts, expand.ts,
//               hash.ts (pod, container and sandbox hashes), config-objects.ts (ConfigMaps, Secrets), config-refs.ts,
//               pod-uid.ts, pod-hostname.ts, security-validation.ts
//   sources/    file.ts, url.ts, etcd.ts, etcd-client.ts (+ etcd-certificates.ts, etcd-errors.ts), source.ts (the
//               protocol); store.ts, the merge store (config-store.ts: its ConfigMaps and Secrets)
//   sync/       sync-loop.ts (allocation-manager.ts, status-manager.ts, housekeeping.ts), pod-workers.ts (syncing →
//               terminating → terminated), pod-observer.ts, pod-plan.ts (pure; pod-resize.ts, pod-allocation.ts),
//               pod-executor.ts (pod-host.ts, container-lifecycle.ts, container-resize.ts), pod-status.ts, runonce.ts,
//               node-plan.ts (`kubelet plan`); admission.ts (node-affinity.ts, sysctls.ts, resource-fit.ts),
//               active-deadline.ts
//   node/       one folder per Go package: images/ (images.ts, image-gc.ts), volumes/ (volumes.ts, volume-payload.ts,
//               atomic-writer.ts, subpath.ts, fs-group.ts), prober/ (probes.ts, grpc-probe.ts), events/, flowcontrol/
//               (backoff.ts), gc/ (container-gc.ts), eviction/ (eviction.ts, eviction-thresholds.ts, node-signals.ts),
//               stats/ (stats-analyzer.ts, summary.ts, cgroup-stats.ts, usage-sampler.ts), status/ (node-status.ts,
//               fleet-reporter.ts, runtime-outage.ts), cm/ (placement.ts, cgroups.ts), network/ (dns.ts, hosts.ts),
//               logs/, oom/, shutdown/, state/, reset/
//   container/  runtime.ts (the CRI-shaped port), container-config.ts (pod → CRI configs), security-context.ts,
//               node-scoped.ts, unreachable.ts; docker/ (docker.ts + docker-shim.ts: the Docker Engine, the dockershim
//               way), cri/ (cri.ts: runtime.v1), memory/ (--container_runtime fake), pleg/ (relist → events,
//               or the CRI's event stream with a relist behind it)
//   server/     info-server.ts (Hono), push-routes.ts, auth.ts (self-signed.ts), prometheus.ts (exposition.ts),
//               resource-metrics.ts, cadvisor-metrics.ts, configz.ts, listeners.ts; platform/ (serving per JS runtime)
//   wiring      assembly.ts (the one assembly that run, runonce and plan share), kubelet.ts (the three commands over
//               it; node-managers.ts, fleet-mode.ts)
//   config/     flags.ts, values.ts, config-file.ts, config.ts (precedence, the whole-config check), print-config.ts
//   cli/        cli.ts (subcommands, exit codes), fleet.ts (the fleet view); spelling.ts ("did you mean")
export { readManifests, type ManifestContext, type ManifestResult } from "./api/manifest.ts";
export { podSpecHash } from "./api/hash.ts";
export { assignNodeUids, nodeUid } from "./api/pod-uid.ts";
export { validatePod, type ValidationOptions } from "./api/validation.ts";
export { validateConfigObject, type ConfigObject, type ConfigLookup } from "./api/config-objects.ts";
export { podConfigRefs, checkConfigRefs } from "./api/config-refs.ts";
export { createFileSource } from "./sources/file.ts";
export { createUrlSource } from "./sources/url.ts";
export { createEtcdSource, etcdKeyFor } from "./sources/etcd.ts";
export { createEtcdClient, type EtcdClient } from "./sources/etcd-client.ts";
export { etcdSettings, readEtcdConfig } from "./config/etcd-config.ts";
export type { PodSource, SourceSnapshot, StopSource } from "./sources/source.ts";
export { createPodStore, type NotificationMode, type PodStore, type PodStoreOptions } from "./sources/store.ts";
export { createSyncLoop, type SyncLoop, type SyncLoopOptions } from "./sync/sync-loop.ts";
export { computePodActions, type Observed, type PodActions, type PodPlanInput } from "./sync/pod-plan.ts";
export { createPodObserver, type PodObserver } from "./sync/pod-observer.ts";
export { createPodExecutor, type PodExecutor } from "./sync/pod-executor.ts";
export { createPodWorker, nextState, type PodWorker, type PodWorkerState } from "./sync/pod-workers.ts";
export { computePodStatus } from "./sync/pod-status.ts";
export { planNode, type NodePlan } from "./sync/node-plan.ts";
export { runPodsOnce, formatRunOnceReport, type RunOnceReport } from "./sync/runonce.ts";
export { createImageManager, type ImageManager } from "./node/images/images.ts";
export { createProbeManager, runProbe, type ProbeManager } from "./node/prober/probes.ts";
export { createVolumeManager, type VolumeManager } from "./node/volumes/volumes.ts";
export { writeAtomically } from "./node/volumes/atomic-writer.ts";
export { buildNode, noPressure, type PressureObserver } from "./node/status/node-status.ts";
export { createImageGc, type ImageGc } from "./node/images/image-gc.ts";
export { createContainerGc, type ContainerGc } from "./node/gc/container-gc.ts";
export { createEvictionManager, type EvictionManager, type NodeCondition } from "./node/eviction/eviction.ts";
export { parseThresholds, rankForEviction, type Threshold } from "./node/eviction/eviction-thresholds.ts";
export { createStatsAnalyzer, type StatsAnalyzer, type StatsSummary } from "./node/stats/stats-analyzer.ts";
export { createCgroupReader, type CgroupReader, type CgroupStats } from "./node/stats/cgroup-stats.ts";
export { createUsageSampler, type UsageSample } from "./node/stats/usage-sampler.ts";
export { createFleetReporter, fleetKeys, type FleetReporter, type FleetStore } from "./node/status/fleet-reporter.ts";
export { createDockerRuntime, resolveDockerEndpoint } from "./container/docker/docker.ts";
export { LABEL, type PodSandboxDetails, type Runtime } from "./container/runtime.ts";
export type { ContainerConfig, PodSandboxConfig } from "./container/cri-types.ts";
export { scopeRuntimeToNode, NODE_LABEL } from "./container/node-scoped.ts";
export { createInfoServer, type InfoServerDeps } from "./server/info-server.ts";
export { createPrometheusMetrics } from "./server/prometheus.ts";
export { createResourceMetrics } from "./server/resource-metrics.ts";
export { createCadvisorMetrics } from "./server/cadvisor-metrics.ts";
export { kubeletConfiguration } from "./server/configz.ts";
export { assemble, type Assembly, type AssemblyCommand } from "./assembly.ts";
export { runKubelet, runOnce, planOnce } from "./kubelet.ts";
export { ConfigError, resolveConfig } from "./config/config.ts";
export { FLAGS } from "./config/flags.ts";
export { printConfig } from "./config/print-config.ts";
export { parseDuration } from "./api/duration.ts";
export { DEFAULT_CONFIG, type KubeletConfig } from "./config/config-types.ts";
export { main } from "./cli/cli.ts";
export { readFleet, formatFleetTable, type FleetView } from "./cli/fleet.ts";
export type { Pod, PodUpdate, PodOperation, FieldIssue, RejectedPod, SourceName } from "./api/types.ts";
