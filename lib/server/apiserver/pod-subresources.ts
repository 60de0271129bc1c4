// The pod subresources that stream: log, exec, attach and portforward under /api/v1/namespaces/{ns}/pods/{name}/.
// As kube-apiserver does (pkg/registry/core/pod/strategy.go's LogLocation, ExecLocation, PortForwardLocation), each
// request is checked against the pod, its container resolved, and then handed to the kubelet's own route with the
// kubelet's query names (/containerLogs, /exec, /attach, /portForward), so both doors share one implementation.
import { Hono, type Context } from "hono";
import type { Pod } from "../../api/types.ts";
import { httpError } from "../server-support.ts";
import { parseBool } from "./request-info.ts";
import type { APIResource } from "./api-resource.ts";

export interface PodSubresourceDeps {
  /** Desired pods: the subresource's pod must be one, and names its containers. */
  pods(): Pod[];
  /** The kubelet's own routes, where the stream is served. */
  kubelet(request: Request): Response | Promise<Response>;
}

/** What discovery lists for these subresources (kube-apiserver's verbs for them). */
export const POD_SUBRESOURCES: APIResource[] = [
  { name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] },
  { name: "pods/exec", singularName: "", namespaced: true, kind: "PodExecOptions", verbs: ["create", "get"] },
  { name: "pods/attach", singularName: "", namespaced: true, kind: "PodAttachOptions", verbs: ["create", "get"] },
  {
    name: "pods/portforward",
    singularName: "",
    namespaced: true,
    kind: "PodPortForwardOptions",
    verbs: ["create", "get"],
  },
];

/** The query's boolean (absent: false); a 400 naming the field otherwise. */
function flag(c: Context, name: string): boolean {
  const value = c.req.query(name);
  if (value === undefined || value === "") return false;
  const parsed = parseBool(value);
  if (parsed === undefined) throw httpError(400, `${name}: Invalid value: "${value}": must be true or false`);
  return parsed;
}

/** The pod named by the path; 404 worded as kube-apiserver's. */
function podOf(c: Context, deps: PodSubresourceDeps): Pod {
  const { namespace, name } = c.req.param() as Record<"namespace" | "name", string>;
  const pod = deps.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  if (!pod) throw httpError(404, `pods "${name}" not found`);
  return pod;
}

/** The container a request is for: the one named, or the pod's only container (kube-apiserver's rule and wording). */
export function containerOf(pod: Pod, requested: string | undefined): string {
  const app = pod.spec.containers.map((x) => x.name);
  const init = (pod.spec.initContainers ?? []).map((x) => x.name);
  const name = pod.metadata.name;
  if (requested) {
    if (![...app, ...init].includes(requested))
      throw httpError(400, `container ${requested} is not valid for pod ${name}`);
    return requested;
  }
  if (app.length === 1) return app[0]!;
  throw httpError(
    400,
    `a container name must be specified for pod ${name}, choose one of: [${app.join(" ")}]${init.length ? ` or one of the init containers: [${init.join(" ")}]` : ""}`,
  );
}

/** The kubelet route's GET request: `path` with `query` and the caller's headers (a WebSocket upgrade's too). */
function toKubelet(c: Context, deps: PodSubresourceDeps, path: string, query: URLSearchParams) {
  const url = new URL(c.req.url);
  url.pathname = path;
  url.search = query.toString();
  return deps.kubelet(new Request(url, { headers: c.req.raw.headers, signal: c.req.raw.signal }));
}

/** kube-apiserver's PodLogOptions, as the kubelet's /containerLogs query. */
function logQuery(c: Context): URLSearchParams {
  const query = new URLSearchParams();
  for (const name of ["follow", "previous", "timestamps"]) if (flag(c, name)) query.set(name, "true");
  for (const name of ["tailLines", "sinceSeconds", "limitBytes"]) {
    const value = c.req.query(name);
    if (value !== undefined) query.set(name, value);
  }
  const sinceTime = c.req.query("sinceTime");
  if (sinceTime !== undefined) {
    if (query.has("sinceSeconds")) throw httpError(400, "at most one of sinceTime or sinceSeconds may be specified");
    const at = Date.parse(sinceTime);
    if (Number.isNaN(at)) throw httpError(400, `sinceTime: Invalid value: "${sinceTime}": must be an RFC3339 time`);
    query.set("sinceSeconds", String(Math.max(0, Math.ceil((Date.now() - at) / 1000))));
  }
  return query;
}

/** kube-apiserver's PodExecOptions / PodAttachOptions, as the kubelet's stream query. */
function streamQuery(c: Context, command: string[]): URLSearchParams {
  const query = new URLSearchParams();
  for (const argument of command) query.append("command", argument);
  const pairs = [
    ["stdin", "input"],
    ["stdout", "output"],
    ["stderr", "error"],
    ["tty", "tty"],
  ] as const;
  for (const [api, kubelet] of pairs) if (flag(c, api)) query.set(kubelet, "1");
  return query;
}

export function createPodSubresourceRoutes(deps: PodSubresourceDeps): Hono {
  const app = new Hono();
  const base = "/api/v1/namespaces/:namespace/pods/:name";
  const at = (pod: Pod, kind: string, container?: string) =>
    `/${kind}/${encodeURIComponent(pod.metadata.namespace ?? "default")}/${encodeURIComponent(pod.metadata.name)}${container === undefined ? "" : `/${encodeURIComponent(container)}`}`;

  app.get(`${base}/log`, (c) => {
    const pod = podOf(c, deps);
    const container = containerOf(pod, c.req.query("container"));
    return toKubelet(c, deps, at(pod, "containerLogs", container), logQuery(c));
  });
  const exec = (c: Context) => {
    const pod = podOf(c, deps);
    const command = c.req.queries("command") ?? [];
    if (command.length === 0)
      throw httpError(400, "you must specify at least 1 command: give ?command=… once per argument");
    const container = containerOf(pod, c.req.query("container"));
    return toKubelet(c, deps, at(pod, "exec", container), streamQuery(c, command));
  };
  const attach = (c: Context) => {
    const pod = podOf(c, deps);
    const container = containerOf(pod, c.req.query("container"));
    return toKubelet(c, deps, at(pod, "attach", container), streamQuery(c, []));
  };
  const portForward = (c: Context) => {
    const pod = podOf(c, deps);
    const query = new URLSearchParams();
    for (const ports of c.req.queries("ports") ?? []) query.append("port", ports);
    return toKubelet(c, deps, at(pod, "portForward"), query);
  };
  for (const method of ["get", "post"] as const) {
    app[method](`${base}/exec`, exec);
    app[method](`${base}/attach`, attach);
    app[method](`${base}/portforward`, portForward);
  }
  return app;
}
