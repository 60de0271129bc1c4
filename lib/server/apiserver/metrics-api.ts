// metrics.k8s.io/v1beta1 as metrics-server serves it (`kubectl top pod`, `kubectl top node`): NodeMetrics and
// PodMetrics from the resource analyzer's last collection (usageNanoCores over its last two samples, working-set
// memory), with metrics-server's quantities (CPU in nanocores, memory in Ki) and window.
import { Hono, type Context } from "hono";
import type { Pod } from "../../api/types.ts";
import type { StatsSummary } from "../../node/stats/stats-analyzer.ts";
import { status } from "../server-support.ts";
import type { ServedGroupVersion } from "./api-resource.ts";
import { fieldSelector, labelSelector, select } from "./selectors.ts";

const GROUP_VERSION = "metrics.k8s.io/v1beta1";

/** What discovery lists for metrics.k8s.io. */
export const METRICS_RESOURCES: ServedGroupVersion = {
  groupVersion: GROUP_VERSION,
  resources: [
    { name: "nodes", singularName: "", namespaced: false, kind: "NodeMetrics", verbs: ["get", "list"] },
    { name: "pods", singularName: "", namespaced: true, kind: "PodMetrics", verbs: ["get", "list"] },
  ],
};

export interface MetricsApiDeps {
  nodeName: string;
  /** The resource analyzer's last collection; undefined before its first. */
  summary(): StatsSummary | undefined;
  /** The collection, read first when its pods' figures are older than 15 s (info-server.ts); summary() without it. */
  currentSummary?(network: boolean): Promise<StatsSummary | undefined>;
  /** Desired pods: their labels, for label selectors. */
  pods(): Pod[];
  /** The resource analyzer's period, ms: the window usageNanoCores covers. */
  windowMs: number;
}

/** A CPU rate in nanocores as a canonical quantity: `250m`, `1234567n`, `2`. */
export function cpuQuantity(nanoCores: number): string {
  const n = Math.round(nanoCores);
  if (n % 1e9 === 0) return String(n / 1e9);
  if (n % 1e6 === 0) return `${n / 1e6}m`;
  if (n % 1e3 === 0) return `${n / 1e3}u`;
  return `${n}n`;
}

/** Bytes as a canonical binary quantity: `123Ki`, `2Mi`, or bytes when not a multiple of 1024. */
export function memoryQuantity(bytes: number): string {
  let value = Math.round(bytes);
  if (value === 0) return "0";
  const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
  let i = 0;
  while (i < suffixes.length - 1 && value % 1024 === 0) {
    value /= 1024;
    i++;
  }
  return `${value}${suffixes[i]}`;
}

/** Go's time.Duration text for whole milliseconds: `10s`, `10.5s`. */
function goDuration(ms: number): string {
  return `${ms / 1000}s`;
}

interface NodeMetrics {
  kind: "NodeMetrics";
  apiVersion: string;
  metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> };
  timestamp: string;
  window: string;
  usage: { cpu: string; memory: string };
}

interface PodMetrics {
  kind: "PodMetrics";
  apiVersion: string;
  metadata: { name: string; namespace: string; creationTimestamp: string; labels?: Record<string, string> };
  timestamp: string;
  window: string;
  containers: Array<{ name: string; usage: { cpu: string; memory: string } }>;
}

/** The routes of metrics.k8s.io/v1beta1: nodes, pods, namespaces/{namespace}/pods, each with /{name}. */
export function createMetricsApiRoutes(deps: MetricsApiDeps): Hono {
  const base = `/apis/${GROUP_VERSION}`;
  const window = goDuration(deps.windowMs);
  const unavailable = (c: Context) =>
    c.json(
      status(503, "ServiceUnavailable", "the kubelet has not collected resource metrics yet: retry in a few seconds"),
      503,
    );

  const nodeMetrics = (summary: StatsSummary): NodeMetrics => ({
    kind: "NodeMetrics",
    apiVersion: GROUP_VERSION,
    metadata: { name: deps.nodeName, creationTimestamp: new Date().toISOString() },
    timestamp: summary.node.cpu.time,
    window,
    usage: {
      cpu: cpuQuantity(summary.node.cpu.usageNanoCores ?? 0),
      memory: memoryQuantity(summary.node.memory.workingSetBytes ?? 0),
    },
  });

  /** Pods measured in the last collection with a CPU rate for each container (metrics-server leaves the others out). */
  const podMetrics = (summary: StatsSummary): PodMetrics[] => {
    const labels = new Map(deps.pods().map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p.metadata.labels]));
    return summary.pods.flatMap((pod) => {
      const containers = pod.containers.filter((c) => c.cpu?.usageNanoCores !== undefined);
      if (containers.length === 0) return [];
      const podLabels = labels.get(`${pod.podRef.namespace}/${pod.podRef.name}`);
      return [
        {
          kind: "PodMetrics",
          apiVersion: GROUP_VERSION,
          metadata: {
            name: pod.podRef.name,
            namespace: pod.podRef.namespace,
            creationTimestamp: new Date().toISOString(),
            ...(podLabels ? { labels: podLabels } : {}),
          },
          timestamp: pod.cpu?.time ?? containers[0]!.cpu!.time,
          window,
          containers: containers.map((c) => ({
            name: c.name,
            usage: { cpu: cpuQuantity(c.cpu!.usageNanoCores!), memory: memoryQuantity(c.memory?.workingSetBytes ?? 0) },
          })),
        },
      ];
    });
  };

  const current = async () => deps.currentSummary?.(false) ?? deps.summary();
  const listPods = async (c: Context, namespace?: string) => {
    const summary = await current();
    if (!summary) return unavailable(c);
    const items = select(
      podMetrics(summary),
      namespace ? (p) => p.metadata.namespace === namespace : undefined,
      labelSelector<PodMetrics>(c.req.query("labelSelector")),
      fieldSelector(c.req.query("fieldSelector"), {
        "metadata.name": (p: PodMetrics) => p.metadata.name,
        "metadata.namespace": (p: PodMetrics) => p.metadata.namespace,
      }),
    );
    return c.json({ kind: "PodMetricsList", apiVersion: GROUP_VERSION, metadata: {}, items });
  };

  const app = new Hono();
  app.get(`${base}/nodes`, async (c) => {
    const summary = await current();
    if (!summary) return unavailable(c);
    const items = select([nodeMetrics(summary)], labelSelector(c.req.query("labelSelector")));
    return c.json({ kind: "NodeMetricsList", apiVersion: GROUP_VERSION, metadata: {}, items });
  });
  app.get(`${base}/nodes/:name`, async (c) => {
    const summary = await current();
    if (!summary) return unavailable(c);
    const name = c.req.param("name");
    if (name !== deps.nodeName)
      return c.json(status(404, "NotFound", `nodemetrics.metrics.k8s.io "${name}" not found`), 404);
    return c.json(nodeMetrics(summary));
  });
  app.get(`${base}/pods`, (c) => listPods(c));
  app.get(`${base}/namespaces/:namespace/pods`, (c) => listPods(c, c.req.param("namespace")));
  app.get(`${base}/namespaces/:namespace/pods/:name`, async (c) => {
    const summary = await current();
    if (!summary) return unavailable(c);
    const { namespace, name } = c.req.param();
    const found = podMetrics(summary).find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
    if (!found) return c.json(status(404, "NotFound", `podmetrics.metrics.k8s.io "${name}" not found`), 404);
    return c.json(found);
  });
  return app;
}
