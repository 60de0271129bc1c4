import { describe, expect, test } from "bun:test";
import type { Pod } from "../../api/types.ts";
import type { StatsSummary } from "../../node/stats/stats-analyzer.ts";
import { apiApp } from "../../testing/api-app.ts";
import { cpuQuantity, createMetricsApiRoutes, memoryQuantity } from "./metrics-api.ts";

const T = "2026-01-01T00:00:10Z";
const cpu = (nanoCores?: number) => ({
  time: T,
  usageCoreNanoSeconds: 1e9,
  ...(nanoCores === undefined ? {} : { usageNanoCores: nanoCores }),
});
const memory = (bytes: number) => ({ time: T, workingSetBytes: bytes });

const SUMMARY = {
  node: {
    nodeName: "edge-1",
    startTime: T,
    cpu: cpu(250_000_000),
    memory: memory(512 * 1024 * 1024),
    fs: {},
    runtime: {},
  },
  pods: [
    {
      podRef: { name: "web", namespace: "default", uid: "u1" },
      cpu: cpu(1_500_000),
      containers: [
        { name: "nginx", startTime: T, cpu: cpu(1_000_000), memory: memory(10 * 1024 * 1024) },
        { name: "sidecar", startTime: T, cpu: cpu(500_123), memory: memory(4096 + 1) },
      ],
      volume: [],
    },
    {
      podRef: { name: "db", namespace: "prod", uid: "u2" },
      containers: [{ name: "pg", startTime: T, cpu: cpu() }],
      volume: [],
    },
    {
      podRef: { name: "cache", namespace: "prod", uid: "u3" },
      containers: [{ name: "redis", startTime: T, cpu: cpu(2_000_000_000), memory: memory(1024 ** 3) }],
      volume: [],
    },
  ],
} as unknown as StatsSummary;

function setUp(collected = true) {
  const summary = collected ? SUMMARY : undefined;
  const pods = [{ metadata: { name: "cache", namespace: "prod", labels: { app: "cache" } } }] as unknown as Pod[];
  return apiApp(
    createMetricsApiRoutes({ nodeName: "edge-1", summary: () => summary, pods: () => pods, windowMs: 10_000 }),
  );
}

describe("metrics.k8s.io/v1beta1", () => {
  test("each request is served a current collection, asked without pods' networks (metrics.k8s.io shows none)", async () => {
    const asked: boolean[] = [];
    const app = apiApp(
      createMetricsApiRoutes({
        nodeName: "edge-1",
        summary: () => undefined,
        currentSummary: async (network) => (asked.push(network), SUMMARY),
        pods: () => [],
        windowMs: 10_000,
      }),
    );
    expect((await app.request("/apis/metrics.k8s.io/v1beta1/nodes/edge-1")).status).toBe(200);
    expect((await app.request("/apis/metrics.k8s.io/v1beta1/pods")).status).toBe(200);
    expect(asked).toEqual([false, false]);
  });

  test("NodeMetrics carries the node's CPU rate and working set as metrics-server's quantities", async () => {
    const list = (await (await setUp().request("/apis/metrics.k8s.io/v1beta1/nodes")).json()) as {
      kind: string;
      items: Array<{ metadata: { name: string }; usage: object; window: string; timestamp: string }>;
    };
    expect(list.kind).toBe("NodeMetricsList");
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      metadata: { name: "edge-1" },
      usage: { cpu: "250m", memory: "512Mi" },
      window: "10s",
      timestamp: T,
    });
    const one = await setUp().request("/apis/metrics.k8s.io/v1beta1/nodes/edge-1");
    expect(one.status).toBe(200);
    expect((await setUp().request("/apis/metrics.k8s.io/v1beta1/nodes/other")).status).toBe(404);
  });

  test("PodMetrics lists each measured pod's containers; a pod without a CPU rate yet is left out, as metrics-server does", async () => {
    const list = (await (await setUp().request("/apis/metrics.k8s.io/v1beta1/pods")).json()) as {
      items: Array<{
        metadata: { name: string; namespace: string };
        containers: Array<{ name: string; usage: { cpu: string; memory: string } }>;
      }>;
    };
    expect(list.items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(["default/web", "prod/cache"]);
    expect(list.items[0]!.containers).toEqual([
      { name: "nginx", usage: { cpu: "1m", memory: "10Mi" } },
      { name: "sidecar", usage: { cpu: "500123n", memory: "4097" } },
    ]);
  });

  test("a namespace's pods, a label selector and one pod by name narrow the list", async () => {
    const app = setUp();
    const inProd = (await (await app.request("/apis/metrics.k8s.io/v1beta1/namespaces/prod/pods")).json()) as {
      items: unknown[];
    };
    expect(inProd.items).toHaveLength(1);
    const labelled = (await (
      await app.request("/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3Dcache")
    ).json()) as {
      items: Array<{ metadata: { name: string } }>;
    };
    expect(labelled.items.map((p) => p.metadata.name)).toEqual(["cache"]);
    expect((await app.request("/apis/metrics.k8s.io/v1beta1/namespaces/prod/pods/cache")).status).toBe(200);
    const missing = await app.request("/apis/metrics.k8s.io/v1beta1/namespaces/prod/pods/db");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { message: string }).message).toBe('podmetrics.metrics.k8s.io "db" not found');
  });

  test("before the first collection the API says it has no metrics yet (503), not an empty list", async () => {
    const response = await setUp(false).request("/apis/metrics.k8s.io/v1beta1/pods");
    expect(response.status).toBe(503);
  });

  test("quantities are canonical: whole cores, milli, micro and nano; bytes, Ki, Mi, Gi", () => {
    expect([2e9, 250e6, 3000, 7].map(cpuQuantity)).toEqual(["2", "250m", "3u", "7n"]);
    expect([0, 1023, 2048, 3 * 1024 ** 2, 1024 ** 3].map(memoryQuantity)).toEqual(["0", "1023", "2Ki", "3Mi", "1Gi"]);
  });
});
