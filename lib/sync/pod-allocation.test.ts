// The allocation of a resize: Deferred, Infeasible or allocated, and the pod as allocated.
import { describe, expect, test } from "bun:test";
import { testPod } from "../testing/pods.ts";
import {
  allocationOf,
  pendingResizeOrder,
  resizeEventMessage,
  resizeFit,
  resizeRequested,
  withAllocation,
} from "./pod-allocation.ts";

const sized = (name: string, limits: Record<string, string>, image = "local/busybox:stable") =>
  testPod(name, { containers: [{ name: "app", image, resources: { limits } }] });
const allocatable = { milliCpu: 1000, memoryBytes: 1024 * 2 ** 20 };

describe("resize allocation", () => {
  test("a pod as allocated keeps its allocated resources and takes every other field from its spec", () => {
    const allocated = sized("web", { cpu: "300m" });
    const edited = sized("web", { cpu: "500m" }, "local/busybox:latest");
    const pod = withAllocation(edited, allocationOf(allocated));
    expect(pod.spec.containers[0]).toMatchObject({
      image: "local/busybox:latest",
      resources: { limits: { cpu: "300m" } },
    });
    expect(resizeRequested(edited, allocated)).toBe(true);
    expect(resizeRequested(pod, allocated)).toBe(false);
  });

  test("a resize beyond the node's allocatable is Infeasible, memory named before cpu as the Go kubelet does", () => {
    expect(resizeFit(sized("web", { cpu: "2", memory: "2Gi" }), [], allocatable)).toEqual({
      type: "PodResizePending",
      reason: "Infeasible",
      message: `Node didn't have enough capacity: memory, requested: ${2 * 2 ** 30}, capacity: ${2 ** 30}`,
    });
  });

  test("a resize that fits the node but not beside the other pods is Deferred; one that fits both is allocated", () => {
    const others = [sized("big", { cpu: "600m" })];
    expect(resizeFit(sized("web", { cpu: "500m" }), others, allocatable)).toEqual({
      type: "PodResizePending",
      reason: "Deferred",
      message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    });
    expect(resizeFit(sized("web", { cpu: "400m" }), others, allocatable)).toBeUndefined();
  });

  test("deferred resizes are tried as the Go kubelet sorts them: no increase, priority, Guaranteed, longest waiting", () => {
    const at = (
      name: string,
      allocated: Record<string, string>,
      wants: Record<string, string>,
      since: number,
      priority?: number,
    ) => {
      const pod = sized(name, wants);
      return {
        name,
        pod: priority === undefined ? pod : { ...pod, spec: { ...pod.spec, priority } },
        allocated: sized(name, allocated),
        since,
      };
    };
    const order = pendingResizeOrder([
      at("old", { cpu: "100m" }, { cpu: "200m" }, 1),
      at("unknown", { cpu: "100m" }, { cpu: "200m" }, Number.NaN),
      at("guaranteed", { cpu: "100m", memory: "1Mi" }, { cpu: "200m", memory: "1Mi" }, 5),
      at("newer", { cpu: "100m" }, { cpu: "200m" }, 3),
      at("important", { cpu: "100m" }, { cpu: "200m" }, 9, 1000),
      at("shrinking", { cpu: "300m" }, { cpu: "200m" }, 9),
    ]);
    expect(order.map((p) => p.name)).toEqual(["shrinking", "important", "guaranteed", "old", "newer", "unknown"]);
  });

  test("a resize event's message is the Go kubelet's: the resources as JSON, keys sorted, the generation, the error", () => {
    const pod = sized("web", { memory: "64Mi", cpu: "500m" });
    expect(resizeEventMessage("Pod resize Deferred", pod, "no room")).toBe(
      'Pod resize Deferred: {"containers":[{"name":"app","resources":{"limits":{"cpu":"500m","memory":"64Mi"}}}],"generation":0,"error":"no room"}',
    );
  });
});
