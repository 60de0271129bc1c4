// Layer server/: the Hono info server, its push routes, authentication and the Prometheus registry.
// It reads state through the interfaces the composition root hands it (the Runtime port, pod
// statuses, the event recorder) and imports api/, config types, node/events.ts and
// platform/types.ts; never sync/ or sources/ directly.
//
// The info server (Hono): health, pods with statuses, machine spec, stats, metrics, events, and
// the debugging handlers (logs, exec, /logs/, pushes) behind authentication beyond loopback.
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { createReadStream } from "node:fs";
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { cpus, hostname, totalmem, freemem, release, type as osType } from "node:os";
import { resolve as resolvePath, sep } from "node:path";
import { Readable } from "node:stream";
import type { Authenticator } from "./auth.ts";
import type { KubeletConfig } from "../config/config-types.ts";
import { LABEL, type Runtime } from "../container/runtime.ts";
import type { EventRecorder } from "../node/events.ts";
import type { PodUsage } from "../node/cgroups.ts";
import type { Logger } from "../log.ts";
import { createPushRoutes, type PushTarget } from "./push-routes.ts";
import { HttpError, pickContainer, REASON, status } from "./server-support.ts";
import type { Pod } from "../api/types.ts";

export interface HealthReport {
  ok: boolean;
  checks: Array<{ name: string; ok: boolean; message: string }>;
}

export interface InfoServerDeps {
  config: KubeletConfig;
  /** Desired pods with their statuses. */
  pods(): Pod[];
  /** Changes whenever pods() would answer differently (lets /pods reuse its serialisation). */
  podsVersion?(): number;
  runtime: Runtime;
  push: PushTarget;
  health(): Promise<HealthReport>;
  metrics: { render(): string; renderProbes(): string };
  events: EventRecorder;
  allowPrivileged: boolean;
  /** --allow_sensitive_host_paths, for pushed pods. */
  allowSensitiveHostPaths?: boolean;
  /** --max_manifest_bytes, the push routes' body limit. */
  maxManifestBytes?: number;
  /** How long a push may take to send its body, ms (default 30 s). */
  pushBodyTimeoutMs?: number;
  /** Log streams followed at once (default 100); each holds a Docker connection, so more are refused with 429. */
  maxLogFollowers?: number;
  /** The read-only port's app: GET endpoints only. */
  readOnly?: boolean;
  auth?: Authenticator;
  /** A pod's usage from its cgroup, for /stats/summary. */
  podUsage?: (uid: string) => Promise<PodUsage | undefined>;
  log?: Logger;
  /** Root of GET /logs/ (default /var/log). */
  logDir?: string;
}

/** `/healthz` (failing checks named) and `/healthz/{check}`. */
function addHealthRoutes(app: Hono, health: InfoServerDeps["health"]): void {
  app.get("/healthz", async (c) => {
    const report = await health();
    if (report.ok) return c.text("ok");
    return c.text(
      report.checks
        .filter((x) => !x.ok)
        .map((x) => `[-]${x.name} failed: ${x.message}`)
        .join("\n") + "\nhealthz check failed",
      500,
    );
  });
  app.get("/healthz/:check", async (c) => {
    const check = (await health()).checks.find((x) => x.name === c.req.param("check"));
    if (!check) return c.json(status(404, "NotFound", `no health check named "${c.req.param("check")}"`), 404);
    return check.ok ? c.text("ok") : c.text(`${check.name} failed: ${check.message}`, 500);
  });
}

/** The plain health listener (--healthz_port, 10248 by default, as the kubelet has): /healthz only. */
export function createHealthzServer(health: InfoServerDeps["health"]): Hono {
  const app = new Hono();
  addHealthRoutes(app, health);
  return app;
}

export function createInfoServer(deps: InfoServerDeps): Hono {
  const app = new Hono();
  const logDir = deps.logDir ?? "/var/log";

  app.onError((error, c) => {
    if (error instanceof HttpError)
      return c.json(
        status(error.code, REASON[error.code] ?? "Failure", error.message, error.causes),
        error.code as 400,
      );
    const code = (error as { code?: string }).code;
    if (code === "NotFound") return c.json(status(404, "NotFound", error.message), 404);
    if (code === "RuntimeUnavailable") return c.json(status(503, "ServiceUnavailable", error.message), 503);
    deps.log?.error(`${c.req.method} ${c.req.path} failed: ${error.message}`);
    return c.json(status(500, "InternalError", error.message), 500);
  });
  app.notFound((c) =>
    c.json(
      status(404, "NotFound", `the server could not find the requested resource: ${c.req.method} ${c.req.path}`),
      404,
    ),
  );

  // --- read-only endpoints
  addHealthRoutes(app, deps.health);

  let podListCache: { version: number; body: string } | undefined;
  app.get("/pods", (c) => {
    const version = deps.podsVersion?.();
    if (version === undefined || podListCache?.version !== version) {
      const body = JSON.stringify({ kind: "PodList", apiVersion: "v1", metadata: {}, items: deps.pods() });
      if (version === undefined) return c.body(body, 200, { "content-type": "application/json" });
      podListCache = { version, body };
    }
    return c.body(podListCache.body, 200, { "content-type": "application/json" });
  });
  app.get("/pods/:namespace/:name", (c) => {
    const { namespace, name } = c.req.param();
    const pod = deps.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
    if (!pod) throw new HttpError(404, `pods "${name}" not found in namespace "${namespace}"`);
    return c.json(pod);
  });
  app.get("/podInfo", (c) => {
    const podID = c.req.query("podID");
    const namespace = c.req.query("podNamespace") ?? "default";
    if (!podID) throw new HttpError(400, "missing podID query parameter");
    const pod = deps.pods().find((p) => p.metadata.name === podID && p.metadata.namespace === namespace);
    if (!pod) throw new HttpError(404, `pod "${podID}" not found in namespace "${namespace}"`);
    const info = Object.fromEntries(
      (pod.status?.containerStatuses ?? []).map((s) => [
        s.name,
        {
          state: s.state,
          restartCount: s.restartCount,
          image: s.image,
          imageID: s.imageID,
          containerID: s.containerID,
          ready: s.ready,
        },
      ]),
    );
    return c.json(info);
  });

  const machine = async () => {
    const info = await deps.runtime.info().catch(() => undefined);
    return {
      num_cores: cpus().length,
      cpu_frequency_khz: Math.round((cpus()[0]?.speed ?? 0) * 1000),
      memory_capacity: totalmem(),
      machine_id: hostname(),
      kernel_version: release(),
      os: osType(),
      docker_version: info?.version ?? "unknown",
      docker_api_version: info?.apiVersion ?? "unknown",
    };
  };
  app.get("/spec", async (c) => c.json(await machine()));
  app.get("/spec/", async (c) => c.json(await machine()));

  const statsCache = new Map<string, { at: number; value: Promise<unknown> }>();
  const containerStats = (id: string) => {
    const hit = statsCache.get(id);
    if (hit && Date.now() - hit.at < 1000) return hit.value;
    const value = deps.runtime.stats(id).catch(() => undefined);
    statsCache.set(id, { at: Date.now(), value });
    return value;
  };
  // Pod totals come from the pod cgroup (cgroupsPerQOS), as the kubelet's summary reads them.
  const podLevel = async (uid: string, now: string) => {
    const usage = await deps.podUsage?.(uid).catch(() => undefined);
    return usage
      ? {
          cpu: { time: now, usageCoreNanoSeconds: usage.cpuUsageNanoseconds },
          memory: { time: now, usageBytes: usage.memoryUsageBytes, workingSetBytes: usage.memoryWorkingSetBytes },
        }
      : {};
  };
  app.get("/stats/summary", async (c) => {
    const containers = (await deps.runtime.listContainers()).filter((x) => x.state === "running");
    const now = new Date().toISOString();
    const pods = await Promise.all(
      deps.pods().map(async (pod) => {
        const own = containers.filter((x) => x.labels[LABEL.podUid] === pod.metadata.uid);
        const stats = await Promise.all(
          own.map(async (x) => ({
            x,
            s: (await containerStats(x.id)) as Awaited<ReturnType<Runtime["stats"]>> | undefined,
          })),
        );
        const pause = stats.find(({ x }) => x.labels[LABEL.containerName] === "POD");
        return {
          podRef: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
          startTime: pod.status?.startTime,
          ...(await podLevel(pod.metadata.uid, now)),
          containers: stats
            .filter(({ x }) => x.labels[LABEL.containerName] !== "POD" && x.labels)
            .map(({ x, s }) => ({
              name: x.labels[LABEL.containerName],
              startTime: new Date(x.createdAt).toISOString(),
              cpu: { time: s?.time ?? now, usageCoreNanoSeconds: s?.cpuUsageNanoseconds ?? 0 },
              memory: {
                time: s?.time ?? now,
                usageBytes: s?.memoryUsageBytes ?? 0,
                workingSetBytes: s?.memoryWorkingSetBytes ?? 0,
              },
            })),
          network: {
            time: pause?.s?.time ?? now,
            rxBytes: pause?.s?.networkRxBytes ?? 0,
            txBytes: pause?.s?.networkTxBytes ?? 0,
          },
        };
      }),
    );
    return c.json({
      node: {
        nodeName: deps.config.hostnameOverride || hostname(),
        startTime: new Date(Date.now() - process.uptime() * 1000).toISOString(),
        cpu: { time: now, usageCoreNanoSeconds: await nodeCpuNanoseconds() },
        memory: {
          time: now,
          availableBytes: freemem(),
          usageBytes: totalmem() - freemem(),
          workingSetBytes: totalmem() - freemem(),
        },
      },
      pods,
    });
  });
  app.get("/stats/:pod/:container", async (c) => {
    const { pod, container } = c.req.param();
    const namespace = c.req.query("namespace") ?? "default";
    const chosen = await pickContainer(deps.runtime, namespace, pod, container);
    return c.json(await deps.runtime.stats(chosen.id));
  });
  app.get("/metrics", (c) =>
    c.body(deps.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }),
  );
  app.get("/metrics/probes", (c) =>
    c.body(deps.metrics.renderProbes(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }),
  );
  app.get("/configz", (c) =>
    c.json({ kubeletconfig: { ...deps.config, authTokenFile: deps.config.authTokenFile ? "<set>" : "" } }),
  );
  app.get("/events", (c) => c.json({ kind: "EventList", apiVersion: "v1", metadata: {}, items: deps.events.list() }));

  // --- debugging handlers and pushes: never on the read-only port, authenticated beyond loopback
  const guarded = new Hono();
  const guard: MiddlewareHandler = async (c, next) => {
    if (deps.readOnly) throw new HttpError(403, "forbidden: the read-only port serves GET endpoints only");
    if (!deps.config.enableDebuggingHandlers)
      throw new HttpError(404, "debugging handlers are disabled (--enable_debugging_handlers=false)");
    if (deps.auth?.required && deps.auth.check(c.req.raw) !== "ok") {
      c.header("WWW-Authenticate", 'Bearer realm="kubelet"');
      throw new HttpError(401, "Unauthorized: a valid bearer token or client certificate is required");
    }
    await next();
  };
  guarded.use("*", guard);
  const maxFollowers = deps.maxLogFollowers ?? 100;
  let followers = 0;
  guarded.get("/containerLogs/:namespace/:pod/:container", async (c) => {
    const { namespace, pod, container } = c.req.param();
    const chosen = await pickContainer(deps.runtime, namespace, pod, container, flag(c, "previous"));
    const tail = c.req.query("tailLines");
    const since = c.req.query("sinceSeconds");
    if (tail !== undefined && !/^\d+$/.test(tail))
      throw new HttpError(400, `tailLines must be a non-negative integer, got "${tail}"`);
    if (since !== undefined && !/^\d+$/.test(since))
      throw new HttpError(400, `sinceSeconds must be a non-negative integer, got "${since}"`);
    const follow = flag(c, "follow");
    if (follow && followers >= maxFollowers) {
      c.header("Retry-After", "10");
      throw new HttpError(429, `too many log streams followed at once (${maxFollowers}): close one and retry`);
    }
    let released = !follow;
    if (follow) followers++;
    const release = () => {
      if (!released) followers--;
      released = true;
    };
    const abort = new AbortController();
    c.req.raw.signal.addEventListener("abort", () => abort.abort(), { once: true });
    abort.signal.addEventListener("abort", release, { once: true });
    const chunks = deps.runtime.logs(chosen.id, {
      follow,
      timestamps: flag(c, "timestamps"),
      ...(tail !== undefined ? { tail: Number(tail) } : {}),
      ...(since !== undefined ? { since: Math.floor(Date.now() / 1000) - Number(since) } : {}),
      signal: abort.signal,
    });
    const iterator = chunks[Symbol.asyncIterator]();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await iterator.next();
          if (done) {
            release();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          release();
          controller.error(error);
        }
      },
      cancel() {
        abort.abort();
        void iterator.return?.();
      },
    });
    return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
  });
  guarded.post("/run/:namespace/:pod/:container", async (c) => {
    const { namespace, pod, container } = c.req.param();
    const commands = c.req.queries("command");
    const cmd = commands?.length ? commands : (c.req.query("cmd") ?? "").split(" ").filter(Boolean);
    if (cmd.length === 0) throw new HttpError(400, "missing command: give ?cmd=… or ?command=…&command=…");
    const chosen = await pickContainer(deps.runtime, namespace, pod, container);
    const result = await deps.runtime.exec(chosen.id, cmd, { timeoutMs: 60_000 });
    return c.body(result.stdout + result.stderr, 200, {
      "content-type": "text/plain; charset=utf-8",
      "x-exit-code": String(result.exitCode),
    });
  });
  guarded.get("/logs/*", async (c) => serveLogFile(c, logDir));
  guarded.get("/logs", async (c) => serveLogFile(c, logDir));
  guarded.route(
    "/",
    createPushRoutes(deps.push, {
      allowPrivileged: deps.allowPrivileged,
      allowSensitiveHostPaths: deps.allowSensitiveHostPaths,
      maxBytes: deps.maxManifestBytes,
      bodyTimeoutMs: deps.pushBodyTimeoutMs,
    }),
  );
  app.route("/", guarded);

  // Known paths answered with the wrong method: 405, as the API server does.
  const methods: Array<[string, string[]]> = [
    ["/pods", ["GET", "PUT", "POST"]],
    ["/container", ["POST"]],
    ["/containers", ["POST"]],
    ["/run/:namespace/:pod/:container", ["POST"]],
    ["/healthz", ["GET"]],
    ["/metrics", ["GET"]],
  ];
  for (const [path, allowed] of methods) {
    app.all(path, (c) => {
      c.header("Allow", allowed.join(", "));
      throw new HttpError(405, `method ${c.req.method} is not allowed on ${c.req.path}`);
    });
  }
  return app;
}

function flag(c: Context, name: string): boolean {
  const value = c.req.query(name);
  return value !== undefined && value !== "false" && value !== "0";
}

/** Files under the log directory only: no `..`, no symlink that leads outside. */
async function serveLogFile(c: Context, root: string): Promise<Response> {
  const relative = decodeURIComponent(c.req.path.replace(/^\/logs\/?/, ""));
  if (relative.split("/").includes("..") || relative.includes("\0")) throw new HttpError(400, "invalid log path");
  const rootReal = await realpath(root).catch(() => root);
  const target = resolvePath(rootReal, relative);
  let real: string;
  try {
    real = await realpath(target);
  } catch {
    throw new HttpError(404, `log file "${relative}" not found`);
  }
  if (real !== rootReal && !real.startsWith(rootReal + sep))
    throw new HttpError(403, "forbidden: the path leads outside the log directory");
  const info = await stat(real);
  if (info.isDirectory()) {
    const entries = await readdir(real, { withFileTypes: true });
    return c.text(
      entries
        .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
        .sort()
        .join("\n") + "\n",
    );
  }
  return new Response(Readable.toWeb(createReadStream(real)) as unknown as ReadableStream, {
    headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(info.size) },
  });
}

async function nodeCpuNanoseconds(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8").catch(() => "")).split("\n")[0] ?? "";
  const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = line.trim().split(/\s+/).map(Number);
  return (user + nice + system + irq + softirq) * 1e7; // USER_HZ 100 → ns
}
