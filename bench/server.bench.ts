// Info server throughput: /healthz and /pods (100 pods with statuses), served by Bun on loopback,
// loaded by wrk (Debian's) from a second process: `wrk -t1 -c8 -d5s`. Baseline in the same run: a
// bare Bun.serve answering "ok", so the figures read as a ratio to what the runtime itself can do.
// Usage: bun bench/server.bench.ts
import { cpus } from "node:os";
import { DEFAULT_CONFIG } from "../lib/config/config-types.ts";
import { createEventRecorder } from "../lib/node/events/events.ts";
import { createInfoServer } from "../lib/server/info-server.ts";
import { serve } from "../lib/platform/serve.ts";
import { createPrometheusMetrics } from "../lib/server/prometheus.ts";
import { FakeRuntime } from "../lib/testing/fake-runtime.ts";
import { testPod } from "../lib/testing/pods.ts";

const pods = Array.from({ length: 100 }, (_, i) => {
  const pod = testPod(`pod-${i}`, {
    containers: [
      { name: "app", image: "busybox:1.35", ports: [{ containerPort: 8080 }] },
      { name: "sidecar", image: "busybox:1.35" },
    ],
  });
  const now = new Date().toISOString();
  return {
    ...pod,
    status: {
      phase: "Running",
      hostIP: "10.0.0.1",
      podIP: `10.1.0.${i}`,
      startTime: now,
      conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: now,
      })),
      containerStatuses: ["app", "sidecar"].map((name) => ({
        name,
        ready: true,
        started: true,
        restartCount: 0,
        image: "busybox:1.35",
        imageID: "docker-pullable://sha256:abc",
        containerID: `docker://${name}${i}`,
        state: { running: { startedAt: now } },
      })),
    },
  };
});

const app = createInfoServer({
  config: DEFAULT_CONFIG,
  pods: () => pods,
  podsVersion: () => 1,
  runtime: new FakeRuntime(),
  push: { merge() {}, mergeConfigs() {} },
  health: async () => ({ ok: true, checks: [] }),
  summary: () => undefined,
  metrics: createPrometheusMetrics(),
  events: createEventRecorder(),
  allowPrivileged: false,
});
const server = await serve(app, { hostname: "127.0.0.1", port: 0 });
const bare = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });

async function wrk(url: string): Promise<{ rps: number; p99: string; errors: number }> {
  // Asynchronous on purpose: the servers under test answer from this process's event loop.
  const child = Bun.spawn(["wrk", "-t1", "-c8", "-d5s", "--latency", url], { stdout: "pipe" });
  const out = await new Response(child.stdout).text();
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p99 = /99%\s+(\S+)/.exec(out)?.[1] ?? "?";
  const errors =
    Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) +
    Number(
      /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/
        .exec(out)
        ?.slice(1)
        .reduce((a, b) => a + Number(b), 0) ?? 0,
    );
  return { rps, p99, errors };
}

const baseline = await wrk(`http://127.0.0.1:${bare.port}/`);
const healthz = await wrk(`http://127.0.0.1:${server.port}/healthz`);
const podList = await wrk(`http://127.0.0.1:${server.port}/pods`);
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; wrk -t1 -c8 -d5s from a second process`);
console.log(`bare Bun.serve "ok": ${Math.round(baseline.rps).toLocaleString("en")} req/s, p99 ${baseline.p99}`);
console.log(
  `/healthz: ${Math.round(healthz.rps).toLocaleString("en")} req/s, p99 ${healthz.p99}, errors ${healthz.errors} (${(healthz.rps / baseline.rps).toFixed(2)}× bare; target ≥ 50,000)`,
);
console.log(
  `/pods (100 pods, ${(JSON.stringify(pods).length / 1024).toFixed(0)} KiB): ${Math.round(podList.rps).toLocaleString("en")} req/s, p99 ${podList.p99}, errors ${podList.errors} (target ≥ 7,000)`,
);
await server.stop();
bare.stop(true);
