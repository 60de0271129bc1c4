import { describe, expect, test } from "bun:test";
import { testPod } from "../testing/pods.ts";
import { createPrometheusMetrics } from "./prometheus.ts";

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
});
