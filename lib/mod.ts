// The kubelet library's one public file, in pipeline order (each folder is a layer; its main
// file's header says what it owns and may import):
//   api/        types.ts (pod model), manifest.ts (text → pods), validation.ts, quantity.ts, expand.ts,
//               hash.ts (pod, container and sandbox hashes), config-objects.ts (ConfigMaps, Secrets),
//               config-refs.ts (what a pod reads of them), pod-uid.ts (UIDs with the node in them),
//               security-validation.ts (seccomp, AppArmor, procMount and sysctl field checks)
//   sources/    file.ts, url.ts, etcd.ts, etcd-client.ts (+ etcd-certificates.ts: TLS files re-read on rotation;
//               etcd-errors.ts: refusals named), source.ts (the protocol); store.ts, the merge store
//               (config-store.ts: its ConfigMaps and Secrets)
//   sync/       sync-loop.ts (triggers, one record per pod), pod-workers.ts (a worker per pod: syncing →
//               terminating → terminated), pod-observer.ts (the node as seen), pod-plan.ts (pure: one pod's
//               plan; pod-resize.ts: in-place resize; pod-allocation.ts: whether a resize is allocated, Deferred or Infeasible), pod-executor.ts (carries a plan out), pod-status.ts, runonce.ts (runonce-progress.ts: its
//               display), node-plan.ts (`kubelet plan`); admission.ts (node-affinity.ts, sysctls.ts,
//               resource-fit.ts: who may run here), active-deadline.ts (activeDeadlineSeconds)
//   node/       images.ts, volumes.ts (atomic-writer.ts, volume-payload.ts), probes.ts (grpc-probe.ts),
//               events.ts, backoff.ts, runtime-outage.ts (one line while the runtime is away); image-gc.ts,
//               container-gc.ts, eviction.ts (eviction-thresholds.ts, node-signals.ts), stats-analyzer.ts
//               (cgroup-stats.ts: one cgroup's files, usage-sampler.ts: every pod's and container's), oom-watcher.ts (keeping the node alive); node-status.ts and fleet-reporter.ts (fleet mode: the
//               node record, pod statuses, events); placement.ts (cgroups, DNS and oom floor set up for the pods at start);
//               dns.ts + hosts.ts (a pod's resolv.conf and /etc/hosts), subpath.ts, fs-group.ts
//   container/  runtime.ts (the CRI-shaped port), container-config.ts (pod → CRI configs), docker.ts +
//               docker-shim.ts (Docker Engine, the dockershim way), cri.ts (runtime.v1), node-scoped.ts,
//               security-context.ts (seccomp, AppArmor, no_new_privs, runAsNonRoot), seccomp-profile.ts,
//               unreachable.ts (a socket that does not answer, with its fix)
//   server/     info-server.ts (Hono), push-routes.ts, auth.ts (self-signed.ts: the generated serving
//               certificate), prometheus.ts (exposition.ts: the text format), resource-metrics.ts and
//               cadvisor-metrics.ts (/metrics/resource, /metrics/cadvisor), configz.ts, listeners.ts (bound
//               before anything starts); platform/ adapters (node-websocket.ts: WebSocket upgrades on
//               node:https, client-certificate.ts)
//   wiring      assembly.ts (the one assembly of sources, store, runtime, managers and sync loop that run,
//               runonce and plan share), kubelet.ts (the three commands over it; node-managers.ts its part for
//               the node managers, fleet-mode.ts for fleet mode); config/ (flags.ts, values.ts, config-file.ts,
//               config.ts: precedence and the whole-config check, print-config.ts); cli/ (fleet.ts: the fleet view);
//               spelling.ts ("did you mean" for flags, keys and fields)
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
