// The kubelet's metrics sink: what the sync loop, runtime, probes and sources record.
// The Prometheus registry and text exposition behind it live in lib/server/prometheus.ts.

/** Records the events /metrics reports, named after the real kubelet's metrics. */
export interface KubeletMetrics {
  /** kubelet_runtime_operations_total / _errors_total / _duration_seconds{operation_type}. */
  runtimeOperation(operation: string, seconds: number, failed: boolean): void;
  /**
   * kubelet_pod_start_duration_seconds: pod first seen → all containers running; and, without its image pulls,
   * kubelet_pod_start_sli_duration_seconds.
   */
  podStart(seconds: number, podUid?: string): void;
  /**
   * The window in which an image was pulled for a pod (ms since the epoch): kubelet_pod_start_sli_duration_seconds
   * is podStart without the time from the pod's first pull begun to its last pull finished.
   */
  podImagePulled(podUid: string, startedMs: number, finishedMs: number): void;
  /** kubelet_pod_worker_duration_seconds{operation_type: create|update|sync}. */
  podWorker(operation: "create" | "update" | "sync", seconds: number): void;
  /** kubelet_image_pull_duration_seconds. */
  imagePull(seconds: number, failed: boolean): void;
  /**
   * prober_probe_total{probe_type, result, container, pod, namespace, pod_uid} and
   * prober_probe_duration_seconds{probe_type, container, pod, namespace}.
   */
  probe(
    probeType: "Liveness" | "Readiness" | "Startup",
    result: "successful" | "failed" | "unknown",
    labels: { container: string; pod: string; namespace: string; pod_uid: string },
    seconds: number,
  ): void;
  /**
   * kubelet_started_containers_total / _errors_total{container_type}; a "podsandbox" is a pod started:
   * kubelet_started_pods_total / _errors_total.
   */
  containerStarted(containerType: "container" | "podsandbox" | "init_container", failed: boolean): void;
  /** kubelet_restarted_pods_total-like: container restarts by the kubelet (kubelet_container_restarts_total). */
  containerRestarted(): void;
  /** Gauges read at scrape time: kubelet_running_pods, kubelet_running_containers{container_state}. */
  setRunning(pods: number, containersByState: Record<string, number>): void;
  /** Gauge kubelet_working_pods{lifecycle, config, static}: pods with a pod worker, by its state, at each resync. */
  setWorkingPods(counts: WorkingPods[]): void;
  /** kubelet_config_source_errors_total{source}: invalid manifests and unreachable origins. */
  sourceError(source: string): void;
  /**
   * kubelet_runtime_open_streams{stream_type}: runtime streams held open (followed logs, events, exec and
   * attach sessions), +1 when one
   * opens, -1 when it is closed. The real kubelet has no such gauge; this one shows a stream is released.
   */
  runtimeStream(streamType: RuntimeStreamType, delta: 1 | -1): void;
  /** kubelet_pleg_relist_duration_seconds and (after the first) kubelet_pleg_relist_interval_seconds. */
  plegRelist(durationSeconds: number, intervalSeconds: number | undefined): void;
  /**
   * The Evented PLEG's stream: kubelet_evented_pleg_connection_success_count (opened) and _error_count (failed or
   * broken), as upstream names them.
   */
  eventedPlegConnection(outcome: "success" | "error"): void;
  /** kubelet_evented_pleg_connection_latency_seconds: an event's age when it arrives. */
  eventedPlegLatency(seconds: number): void;
  /** kubelet_cgroup_manager_duration_seconds{operation_type: create|update|destroy}. */
  cgroupManager(operation: "create" | "update" | "destroy", seconds: number): void;
  /**
   * Gauges kubelet_graceful_shutdown_start_time_seconds and _end_time_seconds: the last graceful node shutdown
   * (seconds since the epoch; 0 = none); only the times given change.
   */
  gracefulShutdown(times: { startSeconds?: number; endSeconds?: number }): void;
}

/** One series of kubelet_working_pods, in the Go kubelet's label values. */
export interface WorkingPods {
  lifecycle: "sync" | "terminating" | "terminated";
  /** Wanted by a source; no longer wanted (being stopped); or found on the runtime, its spec never known. */
  config: "desired" | "orphan" | "runtime_only";
  /** Every pod of a local source (file, URL, etcd) is static in the Go kubelet's sense. */
  static: boolean;
  count: number;
}

/** The runtime streams kubelet_runtime_open_streams counts. */
export type RuntimeStreamType = "logs" | "events" | "exec" | "attach";

/** A sink that records nothing (unit tests, library use). */
export const noopMetrics: KubeletMetrics = {
  runtimeOperation() {},
  podStart() {},
  podImagePulled() {},
  podWorker() {},
  imagePull() {},
  probe() {},
  containerStarted() {},
  containerRestarted() {},
  setRunning() {},
  setWorkingPods() {},
  sourceError() {},
  runtimeStream() {},
  cgroupManager() {},
  plegRelist() {},
  eventedPlegConnection() {},
  eventedPlegLatency() {},
  gracefulShutdown() {},
};
