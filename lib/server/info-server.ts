// The info server (Hono): health, pods with statuses, machine spec, stats, metrics, events, and
// the debugging handlers (logs, exec and attach streams, /logs/, /debug/heap, pushes) behind authentication, on loopback too.
// Folder server/: what it owns is in its README.md; what it may import, in docs/architecture.md#layers.
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { createReadStream } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { cpus, hostname, totalmem, release, type as osType } from "node:os";
import { resolve as resolvePath, sep } from "node:path";
import { Readable } from "node:stream";
import type { Authenticator } from "./auth.ts";
import { ANONYMOUS, type AuthVariables } from "./authorizer.ts";
import type { KubeletConfig } from "../config/config-types.ts";
import type { Runtime } from "../container/runtime.ts";
import type { EventRecorder } from "../node/events/events.ts";
import type { HealthCheck } from "../node/status/node-status.ts";
import type { StatsSummary } from "../node/stats/stats-analyzer.ts";
import type { UsageSample } from "../node/stats/usage-sampler.ts";
import type { CgroupDetail } from "../node/stats/cgroup-stats.ts";
import { createCadvisorMetrics } from "./cadvisor-metrics.ts";
import { kubeletConfiguration } from "./configz.ts";
import { createResourceMetrics } from "./resource-metrics.ts";
import type { Logger } from "../log.ts";
import { createPushRoutes, type PushTarget } from "./push-routes.ts";
import { createStreamRoutes } from "./stream-routes.ts";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { httpError, lastTerminatedId, pickContainer, status } from "./server-support.ts";
import { createPodSubresourceRoutes } from "./apiserver/pod-subresources.ts";
import { createPortForwardRoutes } from "./apiserver/portforward-routes.ts";
import type { Pod } from "../api/types.ts";
import { protectedHostPaths } from "../api/host-paths.ts";
import { longLived } from "../platform/long-lived.ts";
import { forbiddenRequest, statusFor } from "./apiserver/api-status.ts";
import { isApiPath, isApiServerPath } from "./apiserver/request-info.ts";
import type { V1Node } from "../api/types.ts";
import type { ConfigObject } from "../api/config-objects.ts";
import type { ServedGroupVersion } from "./apiserver/api-resource.ts";
import { createNodeRoutes, NODE_RESOURCES } from "./apiserver/nodes.ts";
import { createEventRoutes, EVENT_RESOURCES } from "./apiserver/events.ts";
import { createNamespaceRoutes, NAMESPACE_RESOURCES } from "./apiserver/namespaces.ts";
import { CONFIG_RESOURCES, createConfigObjectRoutes } from "./apiserver/secrets.ts";
import { createMetricsApiRoutes, METRICS_RESOURCES } from "./apiserver/metrics-api.ts";

// c.get("user") and c.get("authorization") are typed on every Hono context (the handlers and the audit log read them).
declare module "hono" {
  interface ContextVariableMap extends AuthVariables {}
}

export interface HealthReport {
  ok: boolean;
  checks: HealthCheck[];
  /** The node's conditions (MemoryPressure, DiskPressure): details, not failures of the kubelet. */
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  /** Things to act on that do not fail the check (a serving certificate near its end), shown by `?verbose`. */
  warnings?: string[];
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
  /** The resource analyzer's last collection (/stats/summary); undefined before its first. */
  summary(): StatsSummary | undefined;
  /**
   * The resource analyzer's collection, read first when its pods' figures are older than 15 s (it reads them only
   * while something asks); with `network`, pods' networks too. Without it, summary() is served.
   */
  currentSummary?(network: boolean): Promise<StatsSummary | undefined>;
  /** A fresh read of the pod and container cgroups (/metrics/resource, /metrics/cadvisor); undefined without them. */
  sample?(detail?: CgroupDetail): Promise<UsageSample | undefined>;
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
  /** The audit hook (server/audit/middleware.ts), mounted ahead of authentication so refusals are audited too. */
  audit?: MiddlewareHandler;
  log?: Logger;
  /** Root of GET /logs/ (default /var/log). */
  logDir?: string;
  /** Live heap objects by type after a full GC (GET /debug/heap); undefined on a runtime that cannot count them. */
  heapObjectCounts?(): Promise<Record<string, number> | undefined>;
  /** The JS heap's sizes in bytes, read after those counts' GC (GET /debug/heap's `heapBytes`): what the heap is of RSS. */
  heapBytes?(): Promise<Record<string, number> | undefined>;
  /** The Kubernetes API slice (apiserver/apiserver.ts), mounted on the main port only. */
  api?: Hono;
}

/** What the API's nodes, events, namespaces, ConfigMaps, Secrets and metrics.k8s.io (apiserver/) read beyond the info server's deps. */
export interface NodeApiDeps {
  nodeName: string;
  node(previous?: V1Node): Promise<V1Node>;
  configs(): ConfigObject[];
  /** The resource analyzer's period, ms (metrics.k8s.io's window). */
  statsWindowMs: number;
}

/** What discovery lists for nodeApiRoutes' resources. */
export const NODE_API_SERVED: ServedGroupVersion[] = [
  NODE_RESOURCES,
  EVENT_RESOURCES,
  NAMESPACE_RESOURCES,
  CONFIG_RESOURCES,
  METRICS_RESOURCES,
];

/** The routes of apiserver/'s node, events, namespaces, ConfigMaps/Secrets and metrics modules, for createApiServer. */
export function nodeApiRoutes(
  deps: Pick<InfoServerDeps, "runtime" | "events" | "pods" | "push" | "summary" | "currentSummary">,
  api: NodeApiDeps,
): Hono[] {
  return [
    createNodeRoutes({ node: api.node, images: () => deps.runtime.listImages() }),
    createEventRoutes({ events: deps.events, nodeName: api.nodeName }),
    createNamespaceRoutes({
      inUse: () => [...deps.pods().map((p) => p.metadata.namespace), ...api.configs().map((o) => o.metadata.namespace)],
    }),
    ...createConfigObjectRoutes({ configs: api.configs, push: deps.push }),
    createMetricsApiRoutes({
      nodeName: api.nodeName,
      summary: deps.summary,
      ...(deps.currentSummary ? { currentSummary: deps.currentSummary } : {}),
      pods: deps.pods,
      windowMs: api.statsWindowMs,
    }),
  ];
}

/** `/healthz` (failing checks named; `?verbose`: every check and the pressure conditions) and `/healthz/{check}`. */
function addHealthRoutes(app: Hono, health: InfoServerDeps["health"]): void {
  app.get("/healthz", async (c) => {
    const report = await health();
    if (c.req.query("verbose") !== undefined) {
      const lines = [
        ...report.checks.map((x) => (x.ok ? `[+]${x.name} ok` : `[-]${x.name} failed: ${x.message}`)),
        ...(report.conditions ?? []).map(
          (x) => `[${x.status === "True" ? "!" : "+"}]${x.type}=${x.status} ${x.reason}: ${x.message}`,
        ),
        ...(report.warnings ?? []).map((warning) => `[!]${warning}`),
        report.ok ? "healthz check passed" : "healthz check failed",
      ];
      return c.text(lines.join("\n") + "\n", report.ok ? 200 : 500);
    }
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
    const answer = statusFor(error);
    if (answer.code === 500) deps.log?.error(`${c.req.method} ${c.req.path} failed: ${error.message}`);
    return c.json(answer, answer.code as ContentfulStatusCode);
  });
  app.notFound((c) => {
    // A known path asked with a method it does not serve is a 405 naming the ones it does, as the API server answers.
    const allowed = allowedMethods(app, c.req.path);
    if (allowed.length) {
      c.header("Allow", allowed.join(", "));
      return c.json(status(405, "MethodNotAllowed", `method ${c.req.method} is not allowed on ${c.req.path}`), 405);
    }
    return c.json(
      status(404, "NotFound", `the server could not find the requested resource: ${c.req.method} ${c.req.path}`),
      404,
    );
  });

  if (deps.audit) app.use("*", deps.audit);
  // Every route of the main port: a wrong token is refused, and so is an anonymous caller when the configuration fails
  // closed; then the request's attributes are authorized (403 or 500 worded as the Go kubelet's). `user` and
  // `authorization` are set for the handlers and the audit log. The read-only port authenticates nobody.
  app.use("*", async (c, next) => {
    const auth = deps.auth;
    if (!deps.readOnly && auth) {
      const user = await auth.authenticate(c.req.raw);
      if (user === "unauthenticated" || (user === ANONYMOUS && !auth.anonymous)) throw unauthorized(c);
      c.set("user", user);
      const decision = await auth.authorize(user, c.req.method, c.req.path, new URL(c.req.url).searchParams);
      c.set("authorization", { attributes: decision.attributes, result: decision.result });
      // The API's paths are refused as kube-apiserver refuses them: a Status naming the verb, resource and scope.
      if (decision.refusal?.status === 403 && isApiServerPath(c.req.path))
        return c.json(forbiddenRequest(decision.attributes), 403);
      if (decision.refusal) return c.text(decision.refusal.message, decision.refusal.status);
    }
    await next();
  });

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
    if (!pod) throw httpError(404, `pods "${name}" not found in namespace "${namespace}"`);
    return c.json(pod);
  });
  app.get("/podInfo", (c) => {
    const podID = c.req.query("podID");
    const namespace = c.req.query("podNamespace") ?? "default";
    if (!podID) throw httpError(400, "missing podID query parameter");
    const pod = deps.pods().find((p) => p.metadata.name === podID && p.metadata.namespace === namespace);
    if (!pod) throw httpError(404, `pod "${podID}" not found in namespace "${namespace}"`);
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
    const version = await deps.runtime.version().catch((error: Error) => {
      deps.log?.warn(`GET /spec: cannot read the container runtime's version: ${error.message}; reporting "unknown"`);
      return undefined;
    });
    return {
      num_cores: cpus().length,
      cpu_frequency_khz: Math.round((cpus()[0]?.speed ?? 0) * 1000),
      memory_capacity: totalmem(),
      machine_id: hostname(),
      kernel_version: release(),
      os: osType(),
      container_runtime: version ? `${version.runtimeName}://${version.runtimeVersion}` : "unknown",
      container_runtime_type: version ? deps.config.containerRuntime : "unknown",
      docker_version: version ? (deps.config.containerRuntime === "docker" ? version.runtimeVersion : "") : "unknown",
      docker_api_version: version?.runtimeApiVersion ?? "unknown",
    };
  };
  app.get("/spec", async (c) => c.json(await machine()));
  app.get("/spec/", async (c) => c.json(await machine()));

  const current = (network: boolean) => deps.currentSummary?.(network) ?? deps.summary();
  app.get("/stats/summary", async (c) => {
    const summary = await current(true);
    if (!summary) throw httpError(503, "stats are not collected yet: the resource analyzer has not run; retry shortly");
    return c.json(summary);
  });
  app.get("/stats/:pod/:container", async (c) => {
    const { pod, container } = c.req.param();
    const namespace = c.req.query("namespace") ?? "default";
    const chosen = await pickContainer(deps.runtime, namespace, pod, container);
    return c.json(await deps.runtime.stats(chosen.id));
  });
  const exposition = { "content-type": "text/plain; version=0.0.4; charset=utf-8" };
  const sample = deps.sample ?? (async () => undefined);
  const resource = createResourceMetrics({ summary: () => current(false), sample });
  const cadvisor = createCadvisorMetrics({
    sample,
    imageFsCapacity: () => deps.summary()?.node.runtime.imageFs?.capacityBytes,
  });
  app.get("/metrics", (c) => c.body(deps.metrics.render(), 200, exposition));
  app.get("/metrics/probes", (c) => c.body(deps.metrics.renderProbes(), 200, exposition));
  app.get("/metrics/resource", async (c) => c.body(await resource.render(), 200, exposition));
  app.get("/metrics/cadvisor", async (c) => c.body(await cadvisor.render(), 200, exposition));
  app.get("/configz", (c) => c.json({ kubeletconfig: kubeletConfiguration(deps.config) }));
  app.get("/events", (c) => c.json({ kind: "EventList", apiVersion: "v1", metadata: {}, items: deps.events.list() }));

  // --- debugging handlers and pushes: never on the read-only port, authenticated beyond loopback
  const guarded = new Hono();
  const guard: MiddlewareHandler = async (c, next) => {
    if (deps.readOnly) throw httpError(403, "forbidden: the read-only port serves GET endpoints only");
    if (!deps.config.enableDebuggingHandlers)
      throw httpError(404, "debugging handlers are disabled (--enable_debugging_handlers=false)");
    // Under AlwaysAllow an anonymous caller reads and nothing more, on loopback too; the policy modes decide themselves.
    if (deps.auth && !deps.auth.anonymousDebugging && c.get("user") === ANONYMOUS) throw unauthorized(c);
    await next();
  };
  guarded.use("*", guard);
  const maxFollowers = deps.maxLogFollowers ?? 100;
  let followers = 0;
  guarded.get("/containerLogs/:namespace/:pod/:container", async (c) => {
    const { namespace, pod, container } = c.req.param();
    const previous = flag(c, "previous") ? lastTerminatedId(deps.pods(), namespace, pod, container) : undefined;
    const chosen = await pickContainer(deps.runtime, namespace, pod, container, previous);
    const tail = c.req.query("tailLines");
    const since = c.req.query("sinceSeconds");
    const limit = c.req.query("limitBytes");
    if (limit !== undefined && !/^[1-9]\d*$/.test(limit))
      throw httpError(400, `limitBytes must be a positive integer, got "${limit}"`);
    let remaining = limit === undefined ? Infinity : Number(limit);
    if (tail !== undefined && !/^\d+$/.test(tail))
      throw httpError(400, `tailLines must be a non-negative integer, got "${tail}"`);
    if (since !== undefined && !/^\d+$/.test(since))
      throw httpError(400, `sinceSeconds must be a non-negative integer, got "${since}"`);
    const follow = flag(c, "follow");
    if (follow && followers >= maxFollowers) {
      c.header("Retry-After", "10");
      throw httpError(429, `too many log streams followed at once (${maxFollowers}): close one and retry`);
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
    // The first read is where a runtime refuses (a container gone, a log file it cannot open): wait for it, so that
    // a refusal is an HTTP error and not a 200 whose connection is reset. A quiet followed log sends its headers
    // after a short wait instead.
    let first: Promise<IteratorResult<Uint8Array>> | undefined = iterator.next();
    const refused = await firstReadError(first, follow ? FOLLOW_HEADERS_AFTER_MS : undefined);
    if (refused) {
      release();
      throw refused.error;
    }
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = first ?? iterator.next();
          first = undefined;
          const { done, value } = await next;
          if (done) {
            release();
            controller.close();
            return;
          }
          const chunk = value.byteLength > remaining ? value.subarray(0, remaining) : value;
          remaining -= chunk.byteLength;
          controller.enqueue(chunk);
          // limitBytes reached: the rest of the log (and a followed stream) is not read.
          if (remaining === 0) {
            release();
            controller.close();
            abort.abort();
            void iterator.return?.();
          }
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
    const response = new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
    return follow ? longLived(response) : response;
  });
  guarded.post("/run/:namespace/:pod/:container", async (c) => {
    const { namespace, pod, container } = c.req.param();
    const commands = c.req.queries("command");
    const cmd = commands?.length ? commands : (c.req.query("cmd") ?? "").split(" ").filter(Boolean);
    if (cmd.length === 0) throw httpError(400, "missing command: give ?cmd=… or ?command=…&command=…");
    const chosen = await pickContainer(deps.runtime, namespace, pod, container);
    const result = await deps.runtime.exec(chosen.id, cmd, { timeoutMs: 60_000 });
    return c.body(result.stdout + result.stderr, 200, {
      "content-type": "text/plain; charset=utf-8",
      "x-exit-code": String(result.exitCode),
    });
  });
  guarded.route("/", createStreamRoutes({ runtime: deps.runtime, pods: deps.pods, log: deps.log }));
  guarded.route("/", createPortForwardRoutes({ runtime: deps.runtime, pods: deps.pods, log: deps.log }));
  guarded.route("/", createPodSubresourceRoutes({ pods: deps.pods, kubelet: (request) => guarded.fetch(request) }));
  // Leak hunting: a soak compares these counts (active timers are "Timeout") before and after churn.
  guarded.get("/debug/heap", async (c) => {
    const counts = await deps.heapObjectCounts?.();
    if (!counts) throw httpError(404, "heap object counts need the Bun runtime (the compiled binary)");
    const bytes = await deps.heapBytes?.();
    return c.json({ objectTypeCounts: counts, ...(bytes && { heapBytes: bytes }) });
  });
  guarded.get("/logs/*", async (c) => serveLogFile(c, logDir));
  guarded.get("/logs", async (c) => serveLogFile(c, logDir));
  guarded.route(
    "/",
    createPushRoutes(deps.push, {
      allowPrivileged: deps.allowPrivileged,
      allowSensitiveHostPaths: deps.allowSensitiveHostPaths,
      trustedSources: deps.config.trustedSources,
      protectedHostPaths: protectedHostPaths(deps.config),
      strictManifests: deps.config.strictManifests,
      maxBytes: deps.maxManifestBytes,
      bodyTimeoutMs: deps.pushBodyTimeoutMs,
    }),
  );
  if (deps.api && !deps.readOnly) {
    // Before the debugging handlers' app, whose guard would otherwise see these paths too. API writes go to the push source: refused as its routes are (debugging handlers off; anonymous under AlwaysAllow).
    const writes: MiddlewareHandler = async (c, next) => {
      if (c.req.method !== "GET" && c.req.method !== "HEAD" && isApiPath(c.req.path)) {
        if (!deps.config.enableDebuggingHandlers)
          return c.json(
            status(
              403,
              "Forbidden",
              `${c.req.method} ${c.req.path} is forbidden: API writes go to the HTTP push source, which --enable_debugging_handlers=false turns off`,
            ),
            403,
          );
        if (deps.auth && !deps.auth.anonymousDebugging && c.get("user") === ANONYMOUS) throw unauthorized(c);
      }
      await next();
    };
    app.use("/api/*", writes);
    app.use("/apis/*", writes);
    app.route("/", deps.api);
  }

  if (deps.api && deps.readOnly)
    for (const path of ["/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi/*"])
      app.all(path, (c) =>
        c.json(
          status(
            404,
            "NotFound",
            `the read-only port does not serve the Kubernetes API (${c.req.path}): use the main port ${deps.config.port}`,
          ),
          404,
        ),
      );
  app.route("/", guarded);

  return app;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** The 401 for a request without valid credentials. */
function unauthorized(c: Context) {
  c.header("WWW-Authenticate", 'Bearer realm="kubelet"');
  return httpError(401, "Unauthorized: a valid bearer token or client certificate is required");
}

/** A followed log that has written nothing yet gets its response headers after this long. */
const FOLLOW_HEADERS_AFTER_MS = 250;

/** The error of a read that fails within `waitMs` (unbounded when undefined), if it does. */
async function firstReadError(
  read: Promise<unknown>,
  waitMs: number | undefined,
): Promise<{ error: unknown } | undefined> {
  const outcome = read.then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  if (waitMs === undefined) return outcome;
  const waited = new Promise<undefined>((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    void outcome.finally(() => clearTimeout(timer));
  });
  return Promise.race([outcome, waited]);
}

/** The methods the app's own routes serve on `path` (middleware, registered for every method, aside). */
function allowedMethods(app: Hono, path: string): string[] {
  return METHODS.filter((method) => app.router.match(method, path)[0].some(([[, route]]) => route.method === method));
}

function flag(c: Context, name: string): boolean {
  const value = c.req.query(name);
  return value !== undefined && value !== "false" && value !== "0";
}

/** Files under the log directory only: no `..`, no symlink that leads outside. */
async function serveLogFile(c: Context, root: string): Promise<Response> {
  const relative = decodeURIComponent(c.req.path.replace(/^\/logs\/?/, ""));
  if (relative.split("/").includes("..") || relative.includes("\0")) throw httpError(400, "invalid log path");
  const rootReal = await realpath(root).catch(() => root);
  const target = resolvePath(rootReal, relative);
  let real: string;
  try {
    real = await realpath(target);
  } catch {
    throw httpError(404, `log file "${relative}" not found`);
  }
  if (real !== rootReal && !real.startsWith(rootReal + sep))
    throw httpError(403, "forbidden: the path leads outside the log directory");
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
  // Node's web ReadableStream type and the DOM lib's describe the same stream but do not unify in TypeScript.
  return new Response(Readable.toWeb(createReadStream(real)) as unknown as ReadableStream, {
    headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(info.size) },
  });
}
