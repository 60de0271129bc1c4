import { describe, expect, test } from "bun:test";
import { instrumentRuntime } from "../container/instrumented.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { hasPromtool, promtoolProblems } from "../testing/promtool.ts";
import { testPod } from "../testing/pods.ts";
import { closeSync, openSync } from "node:fs";
import { Counter, createPrometheusMetrics, Histogram, openFds } from "./prometheus.ts";

const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("kubelet metrics", () => {
  test("the pod start SLI leaves out the time from the pod's first image pull begun to its last finished", () => {
    const metrics = createPrometheusMetrics();
    metrics.podImagePulled("u1", 1_000, 4_000);
    metrics.podImagePulled("u1", 2_000, 6_000);
    metrics.podStart(9, "u1");
    metrics.podStart(2, "u2");
    const text = metrics.render();
    expect(value(text, "kubelet_pod_start_duration_seconds_sum")).toBe(11);
    expect(value(text, "kubelet_pod_start_sli_duration_seconds_sum")).toBe(9 - 5 + 2);
  });

  test("a sandbox started is a pod started, not a container; desired and active pods are counted by static", () => {
    const metrics = createPrometheusMetrics({ nodeName: "node-a" });
    metrics.containerStarted("podsandbox", false);
    metrics.containerStarted("podsandbox", true);
    metrics.containerStarted("container", false);
    const pods = [testPod("a"), testPod("b")];
    metrics.countPods({ desired: () => pods, active: () => pods.slice(1) });
    const text = metrics.render();
    expect(value(text, "kubelet_started_pods_total")).toBe(2);
    expect(value(text, "kubelet_started_pods_errors_total")).toBe(1);
    expect(value(text, 'kubelet_started_containers_total{container_type="container"}')).toBe(1);
    expect(text).not.toContain('container_type="podsandbox"');
    expect(value(text, 'kubelet_desired_pods{static="true"}')).toBe(2);
    expect(value(text, 'kubelet_active_pods{static="true"}')).toBe(1);
    expect(value(text, 'kubelet_node_name{node="node-a"}')).toBe(1);
  });

  test("a family unchanged since the last scrape is the same text; a set, an increment, an observation or a clear writes it again", () => {
    const gauge = new Counter("test_running", "Running.", "gauge");
    gauge.set({ state: "running" }, 2);
    const first = gauge.render();
    gauge.set({ state: "running" }, 2);
    expect(gauge.render()).toBe(first);
    gauge.set({ state: "exited" }, 0);
    expect(gauge.render().split("\n").slice(2)).toEqual([
      'test_running{state="running"} 2',
      'test_running{state="exited"} 0',
    ]);
    gauge.set({ state: "running" }, 3);
    expect(gauge.render()).toContain('test_running{state="running"} 3');
    gauge.inc({ state: "exited" });
    expect(gauge.render().split("\n").slice(2)).toEqual([
      'test_running{state="running"} 3',
      'test_running{state="exited"} 1',
    ]);
    gauge.clear();
    expect(gauge.render().split("\n").slice(2)).toEqual([]);
    const histogram = new Histogram("test_seconds", "A duration.", [1], { unlabelled: true });
    expect(histogram.render()).toContain("test_seconds_count 0");
    histogram.observe(0.5);
    expect(histogram.render().split("\n").slice(2)).toEqual([
      'test_seconds_bucket{le="1"} 1',
      'test_seconds_bucket{le="+Inf"} 1',
      "test_seconds_sum 0.5",
      "test_seconds_count 1",
    ]);
  });

  test("process_open_fds counts the descriptors the process holds: 100 more files open, 100 more", () => {
    const before = value(createPrometheusMetrics().render(), "process_open_fds")!;
    const fds = Array.from({ length: 100 }, () => openSync("/proc/self/stat", "r"));
    const during = openFds();
    fds.forEach((fd) => closeSync(fd));
    expect(during - before).toBe(100);
    expect(value(createPrometheusMetrics().render(), "process_open_fds")).toBe(before);
  });

  test("HELP text escapes backslashes and newlines, as the text format requires", () => {
    const counter = new Counter("test_escapes_total", 'a \\ b\nc "quoted"');
    expect(counter.render().split("\n")[0]).toBe('# HELP test_escapes_total a \\\\ b\\nc "quoted"');
  });

  test("infinite and NaN values are written +Inf, -Inf and NaN, in gauges and in a histogram's sum", () => {
    const gauge = new Counter("test_value", "A value.", "gauge");
    gauge.set({ v: "inf" }, Infinity);
    gauge.set({ v: "-inf" }, -Infinity);
    gauge.set({ v: "nan" }, Number.NaN);
    expect(gauge.render().split("\n").slice(2)).toEqual([
      'test_value{v="inf"} +Inf',
      'test_value{v="-inf"} -Inf',
      'test_value{v="nan"} NaN',
    ]);
    const histogram = new Histogram("test_seconds", "A duration.", [1]);
    histogram.observe(Infinity);
    expect(histogram.render().split("\n").slice(2)).toEqual([
      'test_seconds_bucket{le="1"} 0',
      'test_seconds_bucket{le="+Inf"} 1',
      "test_seconds_sum +Inf",
      "test_seconds_count 1",
    ]);
  });

  // Debian's prometheus package (scripts/services.sh installs it); missing, the test is skipped, except under CI=true.
  const promtool = hasPromtool();
  (promtool || process.env.CI === "true" ? test : test.skip)(
    "promtool check metrics accepts escaped HELP text and label values and infinite values",
    () => {
      if (!promtool)
        throw new Error("promtool is not installed: run `bash scripts/services.sh up` (CI=true forbids skipping)");
      const counter = new Counter("test_escapes_total", 'Backslash \\, newline \n and "quotes".');
      counter.inc({ path: 'C:\\dir\n"x"' });
      const gauge = new Counter("test_value", "A value.", "gauge");
      gauge.set({ v: "inf" }, Infinity);
      gauge.set({ v: "-inf" }, -Infinity);
      gauge.set({ v: "nan" }, Number.NaN);
      const histogram = new Histogram("test_seconds", "A duration.", [0.5, 1]);
      histogram.observe(Infinity);
      const metrics = createPrometheusMetrics({ nodeName: "node-a" });
      metrics.podStart(2, "u1");
      const text = [counter.render(), gauge.render(), histogram.render(), metrics.render()].join("\n");
      expect(promtoolProblems(text)).toEqual([]);
    },
  );
});

test("labels each runtime operation by its operation type only, as the Go kubelet does", async () => {
  const metrics = createPrometheusMetrics();
  await instrumentRuntime(new FakeRuntime(), metrics).version();
  expect(metrics.render()).toContain('kubelet_runtime_operations_total{operation_type="version"} 1');
});

test("the PLEG's series are there before any relist, zero buckets as client_golang renders an unobserved histogram", () => {
  const text = createPrometheusMetrics().render();
  for (const name of ["kubelet_pleg_relist_duration_seconds", "kubelet_pleg_relist_interval_seconds"]) {
    expect(text).toContain(`${name}_bucket{le="0.005"} 0\n`);
    expect(text).toContain(`${name}_bucket{le="+Inf"} 0\n${name}_sum 0\n${name}_count 0`);
  }
  expect(text).toContain("kubelet_evented_pleg_connection_error_count 0\n");
  expect(text).toContain("kubelet_evented_pleg_connection_success_count 0\n");
  expect(text).toContain('kubelet_evented_pleg_connection_latency_seconds_bucket{le="+Inf"} 0\n');
});

test("kubelet_pleg_last_seen_seconds is the PLEG's last seen time in whole seconds once bound, 0 before", () => {
  const metrics = createPrometheusMetrics();
  expect(metrics.render()).toContain("# TYPE kubelet_pleg_last_seen_seconds gauge\nkubelet_pleg_last_seen_seconds 0\n");
  let seen: number | undefined;
  metrics.plegLastSeen(() => seen);
  expect(metrics.render()).toContain("kubelet_pleg_last_seen_seconds 0\n");
  seen = 1_764_400_000_750;
  expect(metrics.render()).toContain("kubelet_pleg_last_seen_seconds 1764400000\n");
});

test("the Evented PLEG's stream is counted as upstream names it: connections, errors and each event's latency", () => {
  const metrics = createPrometheusMetrics();
  metrics.eventedPlegConnection("success");
  metrics.eventedPlegConnection("error");
  metrics.eventedPlegConnection("error");
  metrics.eventedPlegLatency(0.02);
  metrics.plegRelist(0.003, 300);
  const text = metrics.render();
  expect(text).toContain(
    "# TYPE kubelet_evented_pleg_connection_success_count counter\nkubelet_evented_pleg_connection_success_count 1\n",
  );
  expect(text).toContain("kubelet_evented_pleg_connection_error_count 2\n");
  expect(text).toContain('kubelet_evented_pleg_connection_latency_seconds_bucket{le="0.01"} 0\n');
  expect(text).toContain('kubelet_evented_pleg_connection_latency_seconds_bucket{le="0.025"} 1\n');
  expect(text).toContain('kubelet_pleg_relist_interval_seconds_bucket{le="10"} 0\n');
  expect(text).toContain("kubelet_pleg_relist_interval_seconds_count 1\n");
});
