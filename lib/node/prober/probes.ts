// Liveness, readiness and startup probes, run by the kubelet itself: exec through the runtime (no
// curl needed in the image), HTTP, TCP and gRPC (grpc-probe.ts) from the kubelet process. One worker per probe.
import { connect } from "node:net";
import { systemClock, type Clock, type Timer } from "../../clock.ts";
import { isRuntimeError, type Runtime } from "../../container/runtime.ts";
import type { EventRecorder } from "../events/events.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { KubeletMetrics } from "../../metrics.ts";
import type { Pod, V1Container } from "../../api/types.ts";
import type { Probe as V1Probe } from "kubernetes-types/core/v1.d.ts";
import { grpcProbe } from "./grpc-probe.ts";
import { httpGetError, joinHostPort, tcpDialError } from "./dial-error.ts";

export type ProbeResult = "success" | "failure";
type ProbeType = "Liveness" | "Readiness" | "Startup";

export interface ProbeTarget {
  runtime: Runtime;
  containerId: string;
  /** Address for httpGet/tcpSocket probes without their own host ("" when the pod has none). */
  host: string;
  /** The container's named ports. */
  ports?: V1Container["ports"];
}

/** Runs one probe once. */
export async function runProbe(
  probe: V1Probe,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<{ result: ProbeResult; message: string }> {
  try {
    if (probe.exec) {
      const { exitCode, stdout, stderr } = await target.runtime.exec(target.containerId, probe.exec.command ?? [], {
        timeoutMs,
      });
      return exitCode === 0
        ? { result: "success", message: "" }
        : {
            result: "failure",
            message: `command ${JSON.stringify(probe.exec.command)} exited with ${exitCode}: ${(stdout + stderr).trim().slice(0, 200)}`,
          };
    }
    if (probe.httpGet) {
      const get = probe.httpGet;
      const host = get.host || target.host;
      if (!host)
        return {
          result: "failure",
          message: "HTTP probe failed: the pod has no network address (use hostNetwork or an exec probe)",
        };
      const port = resolvePort(get.port, target.ports);
      const path = get.path ? (get.path.startsWith("/") ? get.path : `/${get.path}`) : "/";
      const headers = new Headers((get.httpHeaders ?? []).map((h) => [h.name, h.value] as [string, string]));
      if (!headers.has("user-agent")) headers.set("user-agent", "kube-probe/1.30");
      const url = `${(get.scheme ?? "HTTP").toLowerCase()}://${joinHostPort(host, port)}${path}`;
      let response: Response;
      try {
        response = await fetch(url, { headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
      } catch (error) {
        return { result: "failure", message: httpGetError(error, url, host, port) };
      }
      await response.body?.cancel();
      return response.status >= 200 && response.status < 400
        ? { result: "success", message: "" }
        : { result: "failure", message: `HTTP probe failed with statuscode: ${response.status}` };
    }
    if (probe.tcpSocket) {
      const host = probe.tcpSocket.host || target.host;
      if (!host) return { result: "failure", message: "TCP probe failed: the pod has no network address" };
      const port = resolvePort(probe.tcpSocket.port, target.ports);
      await new Promise<void>((resolve, reject) => {
        const socket = connect({ host, port, timeout: timeoutMs });
        socket.once("connect", () => (socket.destroy(), resolve()));
        socket.once(
          "timeout",
          () => (socket.destroy(), reject(new Error(`dial tcp ${joinHostPort(host, port)}: i/o timeout`))),
        );
        socket.once("error", (error) => reject(new Error(tcpDialError(error, host, port))));
      });
      return { result: "success", message: "" };
    }
    if (probe.grpc) {
      if (!target.host)
        return {
          result: "failure",
          message: "gRPC probe failed: the pod has no network address (use hostNetwork or an exec probe)",
        };
      return await grpcProbe(target.host, probe.grpc.port, probe.grpc.service ?? "", timeoutMs);
    }
    return { result: "failure", message: "probe has no supported handler" };
  } catch (error) {
    const e = error as Error;
    const message =
      e.name === "TimeoutError" || isRuntimeError(error, "ExecTimeout")
        ? `timeout: probe did not answer within ${timeoutMs / 1000}s`
        : e.message;
    return { result: "failure", message };
  }
}

function resolvePort(port: number | string, ports: V1Container["ports"] = []): number {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = ports.find((p) => p.name === port);
  if (!named) throw new Error(`port "${port}" is not a port of the container`);
  return named.containerPort;
}

export interface ProbeManager {
  /** Declares the probes of a started container and starts their workers (idempotent per container id). */
  addContainer(pod: Pod, container: V1Container, containerId: string, startedAt: number, host: string): void;
  removeContainer(containerId: string): void;
  removePod(podUid: string): void;
  /** True when the container passed its readiness probe (or has none) and has started. */
  isReady(containerId: string): boolean;
  /** True once its startup probe succeeded (or it has none). */
  isStarted(containerId: string): boolean;
}

export interface ProbeManagerDeps {
  runtime: Runtime;
  /** A liveness (or startup) failure: the container must be restarted. Called once per container instance. */
  onLivenessFailure(
    podUid: string,
    containerName: string,
    containerId: string,
    message: string,
    probe: "liveness" | "startup",
  ): void;
  /** Readiness or startup flipped for a container of this pod. */
  onChange(podUid: string): void;
}

interface Worker {
  podUid: string;
  ready: boolean;
  started: boolean;
  /** The pending run of each probe type. */
  timers: Map<ProbeType, Timer>;
  stopped: boolean;
}

export function createProbeManager(
  options: { clock?: Clock; log?: Logger; metrics?: KubeletMetrics; events?: EventRecorder },
  deps: ProbeManagerDeps,
): ProbeManager {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const workers = new Map<string, Worker>();

  const stop = (id: string) => {
    const worker = workers.get(id);
    if (!worker) return;
    worker.stopped = true;
    for (const timer of worker.timers.values()) timer.cancel();
    workers.delete(id);
  };

  return {
    addContainer(pod, container, containerId, startedAt, host) {
      if (workers.has(containerId)) return;
      const worker: Worker = {
        podUid: pod.metadata.uid,
        ready: !container.readinessProbe,
        started: !container.startupProbe,
        timers: new Map(),
        stopped: false,
      };
      workers.set(containerId, worker);
      const labels = {
        container: container.name,
        pod: pod.metadata.name,
        namespace: pod.metadata.namespace,
        pod_uid: pod.metadata.uid,
      };
      const target: ProbeTarget = { runtime: deps.runtime, containerId, host, ports: container.ports };
      const schedule = (type: ProbeType, probe: V1Probe) => {
        let successes = 0;
        let failures = 0;
        const period = (probe.periodSeconds ?? 10) * 1000;
        const tick = async () => {
          if (worker.stopped) return;
          if (type !== "Startup" && !worker.started)
            return void worker.timers.set(type, clock.setTimeout(tick, period));
          const began = performance.now();
          const { result, message } = await runProbe(probe, target, (probe.timeoutSeconds ?? 1) * 1000);
          if (worker.stopped) return;
          const seconds = (performance.now() - began) / 1000;
          options.metrics?.probe(type, result === "success" ? "successful" : "failed", labels, seconds);
          if (result === "success") {
            successes++;
            failures = 0;
          } else {
            failures++;
            successes = 0;
            options.events?.record(
              pod,
              "Warning",
              "Unhealthy",
              `${type} probe failed: ${message}`,
              `spec.${(pod.spec.initContainers ?? []).includes(container) ? "initContainers" : "containers"}{${container.name}}`,
            );
          }
          if (type === "Startup" && successes >= (probe.successThreshold ?? 1)) {
            worker.started = true;
            deps.onChange(worker.podUid);
            return; // a startup probe stops once it succeeded
          }
          if ((type === "Startup" || type === "Liveness") && failures >= (probe.failureThreshold ?? 3)) {
            log.info(
              `container ${container.name} of pod ${pod.metadata.namespace}/${pod.metadata.name} failed its ${type.toLowerCase()} probe ${failures} times: restarting it`,
            );
            stop(containerId);
            deps.onLivenessFailure(
              worker.podUid,
              container.name,
              containerId,
              `Container ${container.name} failed ${type.toLowerCase()} probe, will be restarted: ${message}`,
              type === "Startup" ? "startup" : "liveness",
            );
            return;
          }
          if (type === "Readiness") {
            const ready = worker.ready
              ? failures < (probe.failureThreshold ?? 3)
              : successes >= (probe.successThreshold ?? 1);
            if (ready !== worker.ready) {
              worker.ready = ready;
              deps.onChange(worker.podUid);
            }
          }
          worker.timers.set(type, clock.setTimeout(tick, period));
        };
        const delay = Math.max(0, startedAt + (probe.initialDelaySeconds ?? 0) * 1000 - clock.now());
        worker.timers.set(type, clock.setTimeout(tick, delay));
      };
      if (container.startupProbe) schedule("Startup", container.startupProbe);
      if (container.livenessProbe) schedule("Liveness", container.livenessProbe);
      if (container.readinessProbe) schedule("Readiness", container.readinessProbe);
    },
    removeContainer: stop,
    removePod(podUid) {
      for (const [id, worker] of workers) if (worker.podUid === podUid) stop(id);
    },
    isReady: (id) => {
      const worker = workers.get(id);
      return worker ? worker.ready && worker.started : false;
    },
    isStarted: (id) => workers.get(id)?.started ?? false,
  };
}
