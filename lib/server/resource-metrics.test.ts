import { describe, expect, test } from "bun:test";
import { usageSample } from "../testing/usage-samples.ts";
import { createResourceMetrics } from "./resource-metrics.ts";
import type { StatsSummary } from "../node/stats/stats-analyzer.ts";

const node = {
  nodeName: "node-a",
  startTime: "2026-01-01T00:00:00.000Z",
  cpu: { time: "2026-01-01T00:00:10.000Z", usageCoreNanoSeconds: 5e9 },
  memory: { time: "2026-01-01T00:00:10.000Z", usageBytes: 3e9, workingSetBytes: 2e9 },
  fs: { time: "2026-01-01T00:00:10.000Z", usedBytes: 1, inodesUsed: 1 },
  runtime: {},
} satisfies StatsSummary["node"];

describe("/metrics/resource", () => {
  test("writes the Go collector's series: seconds of CPU with the sample's ms timestamp, working sets, start times, no sandbox", async () => {
    const text = await createResourceMetrics({
      summary: () => ({ node, pods: [] }),
      sample: async () => usageSample(1_700_000_000_000),
    }).render();
    const lines = text.split("\n").filter((l) => l && !l.startsWith("#"));
    expect(lines).toEqual([
      'container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2 1700000000000',
      'container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 9000 1700000000000',
      'container_start_time_seconds{container="app",namespace="default",pod="web"} 1600000000',
      `node_cpu_usage_seconds_total 5 ${Date.parse(node.cpu.time)}`,
      `node_memory_working_set_bytes 2000000000 ${Date.parse(node.memory.time)}`,
      'pod_cpu_usage_seconds_total{namespace="default",pod="web"} 3 1700000000000',
      'pod_memory_working_set_bytes{namespace="default",pod="web"} 9000 1700000000000',
      "resource_scrape_error 0",
      "scrape_error 0",
    ]);
    expect(text).toContain(
      "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds",
    );
  });

  test("a failed read is resource_scrape_error 1, not a failed scrape", async () => {
    const text = await createResourceMetrics({
      summary: () => ({ node, pods: [] }),
      sample: async () => {
        throw new Error("EACCES");
      },
    }).render();
    expect(text).toContain("\nresource_scrape_error 1\n");
    expect(text).toContain("\nscrape_error 1\n");
  });
});
