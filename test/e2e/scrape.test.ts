// The kubelet as the tools an operator points at kubelets see it, on each runtime of the matrix:
// promtool lints every metrics endpoint, a real Prometheus scrapes it with a bearer token, the
// official Python client deserialises /pods as a V1PodList, and /stats/summary carries the
// stats/v1alpha1 fields metrics-server and dashboards read.
import { promtoolProblems } from "../../lib/testing/promtool.ts";
import { afterAll, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Kubelet, test, waitFor } from "./harness-kubelet.ts";
import { describeOnRuntimes } from "./harness-runtimes.ts";
import type { SummaryCpu as Cpu, SummaryMemory as Memory } from "../../lib/node/stats/stats-analyzer.ts";
import { freePort, removeDir, tempDir } from "./harness.ts";

const TOKEN = "scrape-token";
const auth = { headers: { authorization: `Bearer ${TOKEN}` } };

interface Network {
  time: string;
  interfaces: Array<{ name: string; rxBytes: number; txBytes: number }>;
}
/** The parts of stats/v1alpha1 Summary this test checks, typed as upstream's. */
interface Summary {
  node: {
    nodeName: string;
    systemContainers: Array<{ name: string; cpu: Cpu; memory: Memory }>;
    cpu: Cpu;
    memory: Memory;
    network: Network;
    runtime: { imageFs: { capacityBytes: number }; containerFs: { capacityBytes: number } };
    rlimit: { maxpid: number; curproc: number };
  };
  pods: Array<{
    podRef: { name: string; namespace: string; uid: string };
    containers: Array<{ name: string; startTime: string; cpu?: Cpu; memory?: Memory }>;
    cpu: Cpu;
    memory: Memory;
    network: Network;
    process_stats: { process_count: number };
  }>;
}

describeOnRuntimes("scraped like a kubelet", (services, rt) => {
  const manifests = tempDir("scrape-manifests");
  const rootDir = tempDir("scrape-root");
  const promDir = tempDir("scrape-prometheus");
  const tokens = join(rootDir, "..", `scrape-tokens-${rt.kind}`);
  let kubelet: Kubelet;
  afterAll(async () => {
    // The crash-looping pod is started again and again: killing the kubelet mid-start would leave a containerd
    // task created but never started, which cannot be removed. Let the kubelet stop both pods first.
    if (kubelet?.running) {
      rmSync(join(manifests, "scrape.yaml"));
      await waitFor(
        "the kubelet to stop the pods it no longer has",
        async () =>
          (await Promise.all(["e2e-scrape", "e2e-scrape-crash"].map((p) => rt.podContainers(p))))
            .flat()
            .every((c) => c.state === "CONTAINER_EXITED") &&
          !(await rt.readySandbox("e2e-scrape")) &&
          !(await rt.readySandbox("e2e-scrape-crash")),
      );
    }
    await kubelet?.stop("SIGKILL");
    await rt.removePods("e2e-scrape", "e2e-scrape-crash");
    for (const dir of [manifests, rootDir, promDir]) removeDir(dir);
  });

  /** A kubelet closed to anonymous callers with one pod burning CPU under limits and one crash-looping. */
  const started = async () => {
    if (kubelet) return kubelet;
    writeFileSync(tokens, `${TOKEN}\n`);
    writeFileSync(
      join(manifests, "scrape.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-scrape }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "while true; do :; done"]
      resources: { limits: { cpu: 100m, memory: 64Mi } }
      readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 }
---
apiVersion: v1
kind: Pod
metadata: { name: e2e-scrape-crash }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: crash
      image: ${services.busybox}
      command: ["sh", "-c", "exit 3"]
`,
    );
    // Closed to anonymous callers: /healthz too needs the token on the main port.
    kubelet = new Kubelet(
      [
        "run",
        "-c",
        manifests,
        ...rt.flags(rootDir),
        "--network_container_image",
        services.pause,
        "--auth_token_file",
        tokens,
        "--anonymous_auth=false",
      ],
      await freePort(),
    );
    await kubelet.waitFor("/healthz 200 with the token", async () => (await kubelet.api("/healthz", auth)).ok);
    return kubelet;
  };

  test("promtool lints /metrics, /metrics/probes, /metrics/resource and /metrics/cadvisor, each with the pod's series", async () => {
    const k = await started();
    const expected: Record<string, RegExp> = {
      "/metrics":
        /^kubelet_pod_start_sli_duration_seconds_count [1-9]\d*$[^]*^kubelet_started_pods_total [1-9]\d*$[^]*^kubelet_desired_pods\{static="true"\} [1-9]\d*$[^]*^kubelet_node_name\{node="[^"]+"\} 1$[^]*^kubernetes_build_info\{/m,
      "/metrics/probes":
        /^prober_probe_total\{container="app",namespace="default",pod="e2e-scrape",pod_uid="[^"]+",probe_type="Readiness",result="successful"\} \d+$[^]*^prober_probe_duration_seconds_count\{container="app",namespace="default",pod="e2e-scrape",probe_type="Readiness"\} \d+$/m,
      "/metrics/resource":
        /^container_cpu_usage_seconds_total\{container="app",namespace="default",pod="e2e-scrape"\} [\d.e-]+ \d+$/m,
      "/metrics/cadvisor":
        /^container_cpu_usage_seconds_total\{container="app",cpu="total",id="[^"]+",image="[^"]+",name="[^"]+",namespace="default",pod="e2e-scrape"\} [\d.e-]+ \d+$/m,
    };
    for (const [path, series] of Object.entries(expected)) {
      const body = await k.waitFor(`${path} with the pod's series`, async () => {
        const text = await (await k.api(path, auth)).text();
        return series.test(text) ? text : undefined;
      });
      expect([path, promtoolProblems(body)]).toEqual([path, []]);
    }
    // containerd is relisted (the generic PLEG, or behind 1.7's stream: a first relist at start); on Docker the relist
    // is the sync loop's listing of every container: kube-prometheus' PLEG panels read every runtime alike.
    const metrics = await (await k.api("/metrics", auth)).text();
    expect(metrics).toMatch(/^kubelet_pleg_relist_duration_seconds_count [1-9]\d*$/m);
    const lastSeen = Number(/^kubelet_pleg_last_seen_seconds (\d+)$/m.exec(metrics)?.[1]);
    expect(Math.abs(Date.now() / 1000 - lastSeen)).toBeLessThan(rt.name === "containerd 1.7" ? 5 : 60);
    expect(metrics).toMatch(/^kubelet_evented_pleg_connection_success_count \d+$/m);
    if (rt.name === "containerd 1.7")
      expect(metrics).toMatch(/^kubelet_evented_pleg_connection_success_count [1-9]\d*$/m);
  });

  test("a real Prometheus scraping with a bearer token sees the target up, a container CPU series and a kubelet series", async () => {
    const k = await started();
    writeFileSync(join(promDir, "token"), TOKEN);
    const job = (name: string, path: string) => `  - job_name: ${name}
    metrics_path: ${path}
    authorization: { credentials_file: ${join(promDir, "token")} }
    static_configs: [{ targets: ["127.0.0.1:${k.port}"] }]
`;
    writeFileSync(
      join(promDir, "prometheus.yml"),
      `global: { scrape_interval: 1s, scrape_timeout: 1s }
scrape_configs:
${job("kubelet", "/metrics")}${job("cadvisor", "/metrics/cadvisor")}${job("resource", "/metrics/resource")}${job("probes", "/metrics/probes")}`,
    );
    const port = await freePort();
    const prometheus = spawn(
      "prometheus",
      [
        `--config.file=${join(promDir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(promDir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    prometheus.stdout.on("data", (d) => (output += d));
    prometheus.stderr.on("data", (d) => (output += d));
    try {
      const query = async (q: string) => {
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`);
        const body = (await response.json()) as { data?: { result: Array<{ value: [number, string] }> } };
        return body.data?.result ?? [];
      };
      await waitFor(
        "Prometheus to have scraped every job and the pod's series with their values",
        async () => {
          const [up, cadvisor, resource, running] = await Promise.all([
            query('min(up{job=~"kubelet|cadvisor|resource|probes"})'),
            query('container_cpu_usage_seconds_total{job="cadvisor",pod="e2e-scrape",container="app"}'),
            // The endpoint serves the last cgroup read (up to 10 s old, with its own timestamp) as cAdvisor serves its
            // last housekeeping: a rate needs a window holding two reads.
            query('rate(container_cpu_usage_seconds_total{job="resource",pod="e2e-scrape",container="app"}[30s])'),
            query('kubelet_running_pods{job="kubelet"}'),
          ]);
          // The pods may still be starting at the first scrapes: wait for the values, not only the series.
          const value = (result: Array<{ value: [number, string] }>) =>
            result.length === 1 ? Number(result[0]!.value[1]) : Number.NaN;
          return up[0]?.value[1] === "1" && value(cadvisor) > 0 && value(resource) > 0 && value(running) >= 1
            ? true
            : undefined;
        },
        70_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n--- prometheus:\n${output.slice(-3000)}`);
      });
    } finally {
      prometheus.kill("SIGKILL");
    }
  }, 100_000);

  test("the Python client deserialises /pods as a V1PodList with phase, conditions and container states", async () => {
    const k = await started();
    const body = await k.waitFor("the pod running and ready", async () => {
      const text = await (await k.api("/pods", auth)).text();
      return /"phase":"Running"/.test(text) && /"ready":true/.test(text) ? text : undefined;
    });
    const script = `
import json, sys
from kubernetes.client import ApiClient
class Response:
    data = sys.stdin.read()
pods = ApiClient().deserialize(Response(), "V1PodList")
pod = next(p for p in pods.items if p.metadata.name == "e2e-scrape")
status = pod.status.container_statuses[0]
print(json.dumps([type(pods).__name__, pod.status.phase, pod.status.qos_class, bool(status.state.running), [c.type for c in pod.status.conditions]]))
`;
    const run = spawnSync("/usr/bin/python3", ["-c", script], { input: body, encoding: "utf8" });
    expect(run.stderr).toBe("");
    const [kind, phase, qos, running, conditions] = JSON.parse(run.stdout);
    expect([kind, phase, qos, running]).toEqual(["V1PodList", "Running", "Guaranteed", true]);
    expect(conditions).toEqual(expect.arrayContaining(["Ready", "ContainersReady", "Initialized", "PodScheduled"]));
  });

  test("/stats/summary carries usageNanoCores, rss, page faults, availableBytes, network, rlimit, containerFs, system containers and process counts, and lists a crash-looping pod's container", async () => {
    const k = await started();
    const summary = await k.waitFor(
      "two collections with the pods measured",
      async () => {
        const response = await k.api("/stats/summary", auth);
        if (response.status !== 200) return undefined;
        const s = (await response.json()) as Summary;
        const pod = s.pods.find((p) => p.podRef.name === "e2e-scrape");
        const crash = s.pods.find((p) => p.podRef.name === "e2e-scrape-crash");
        return pod?.containers[0]?.cpu?.usageNanoCores !== undefined && crash?.containers.length ? s : undefined;
      },
      40_000,
    );
    const { node } = summary;
    expect(node.cpu.usageNanoCores).toBeGreaterThan(0);
    expect(node.systemContainers.map((c) => c.name)).toEqual(expect.arrayContaining(["kubelet", "pods"]));
    expect(Array.isArray(node.network.interfaces)).toBe(true);
    expect(node.rlimit.maxpid).toBeGreaterThan(node.rlimit.curproc);
    expect(node.runtime.containerFs.capacityBytes).toBe(node.runtime.imageFs.capacityBytes);
    const pod = summary.pods.find((p) => p.podRef.name === "e2e-scrape")!;
    const app = pod.containers.find((c) => c.name === "app")!;
    expect(app.cpu!.usageNanoCores).toBeGreaterThan(0);
    expect(app.memory).toMatchObject({
      rssBytes: expect.any(Number),
      pageFaults: expect.any(Number),
      majorPageFaults: expect.any(Number),
    });
    expect(app.memory!.availableBytes! + app.memory!.workingSetBytes).toBe(64 * 2 ** 20);
    expect(pod.cpu.usageNanoCores).toBeGreaterThan(0);
    expect(pod.process_stats.process_count).toBeGreaterThanOrEqual(1);
    expect(pod.network.interfaces).toEqual(expect.any(Array));
    const crash = summary.pods.find((p) => p.podRef.name === "e2e-scrape-crash")!;
    expect(crash.containers.map((c) => c.name)).toEqual(["crash"]);
  });
});
