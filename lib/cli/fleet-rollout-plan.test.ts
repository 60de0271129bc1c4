// The rollout's arithmetic and its verdict on one node's records.
import { expect, test } from "bun:test";
import type { Pod } from "../api/types.ts";
import {
  baselineOf,
  batchSizes,
  judgeNode,
  parseIntOrPercent,
  planBatches,
  restartedContainers,
  surgeBlocker,
  type NodeRecords,
} from "./fleet-rollout-plan.ts";

const pod = (containers: Array<Record<string, unknown>>, spec: Record<string, unknown> = {}) =>
  ({ apiVersion: "v1", kind: "Pod", metadata: { name: "web" }, spec: { containers, ...spec } }) as unknown as Pod;

test("--max-unavailable and --max-surge take a count or a percentage up to 100 %", () => {
  expect(["3", "10%", "100%", "0", "101%", "1.5", "-1", "ten"].map(parseIntOrPercent)).toEqual([
    { count: 3 },
    { percent: 10 },
    { percent: 100 },
    { count: 0 },
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
});

test("percentages resolve as Kubernetes does: unavailable rounded down, surge up, never both zero", () => {
  expect(batchSizes("10%", "0", 1000)).toEqual({ unavailable: 100, surge: 0 });
  expect(batchSizes("25%", "0", 3)).toEqual({ unavailable: 1, surge: 0 });
  expect(batchSizes("10%", "10%", 5)).toEqual({ unavailable: 0, surge: 1 });
  expect(batchSizes("5", "0", 3)).toEqual({ unavailable: 3, surge: 0 });
});

test("batches take the nodes in name order, the last one holding the rest", () => {
  expect(planBatches(["c", "a", "e", "b", "d"], 2)).toEqual([["a", "b"], ["c", "d"], ["e"]]);
  expect(planBatches([], 2)).toEqual([]);
});

test("a pod with a fixed hostPort, or ports on the host network, cannot run twice on a node", () => {
  expect(surgeBlocker(pod([{ name: "a", ports: [{ containerPort: 80, hostPort: 8080 }] }]))).toBe(
    "spec.containers[0].ports[0].hostPort 8080 is fixed",
  );
  expect(surgeBlocker(pod([{ name: "a", ports: [{ containerPort: 80 }] }], { hostNetwork: true }))).toContain(
    "spec.hostNetwork",
  );
  expect(surgeBlocker(pod([{ name: "a", ports: [{ containerPort: 80 }] }]))).toBeUndefined();
});

test("a change restarts the containers it changes, or all of them when the pod-level spec changes", () => {
  const before = pod([
    { name: "a", image: "x:1" },
    { name: "b", image: "y:1" },
  ]);
  expect(
    restartedContainers(
      before,
      pod([
        { name: "a", image: "x:2" },
        { name: "b", image: "y:1" },
      ]),
    ),
  ).toEqual(["a"]);
  expect(
    restartedContainers(
      before,
      pod(
        [
          { name: "a", image: "x:1" },
          { name: "b", image: "y:1" },
        ],
        { hostNetwork: true },
      ),
    ),
  ).toEqual(["a", "b"]);
});

const node = (ready = true) => ({
  metadata: { name: "n" },
  status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
});
const records = (over: Partial<NodeRecords> = {}): NodeRecords => ({
  node: node(),
  cordoned: false,
  running: "new",
  status: {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }],
    containerStatuses: [{ name: "app", containerID: "docker://2", ready: true, state: { running: {} } }],
  } as NodeRecords["status"],
  ...over,
});

test("a node is ready once it runs the new manifest, its pod is Ready and the changed container is a new one", () => {
  const baseline = { atTarget: false, ids: { app: "docker://1" } };
  expect(judgeNode(records(), "new", ["app"], baseline)).toEqual({ state: "ready" });
  expect(judgeNode(records({ running: "old" }), "new", ["app"], baseline).state).toBe("pending");
  // The old container's Ready status, reported beside the new manifest's hash before the restart, is not the new pod's.
  expect(judgeNode(records(), "new", ["app"], { atTarget: false, ids: { app: "docker://2" } })).toEqual({
    state: "pending",
    reason: "container app not yet restarted",
  });
  expect(judgeNode(records(), "new", ["app"], { atTarget: true, ids: { app: "docker://2" } }).state).toBe("ready");
});

test("a pull error or a crash loop on the new manifest fails the node; down, NotReady and cordoned nodes are unavailable", () => {
  const waiting = (reason: string) =>
    records({
      status: {
        phase: "Pending",
        containerStatuses: [{ name: "app", ready: false, state: { waiting: { reason, message: "no such image" } } }],
      } as NodeRecords["status"],
    });
  expect(judgeNode(waiting("ErrImagePull"), "new", ["app"], undefined)).toEqual({
    state: "failed",
    reason: "ErrImagePull",
    message: "container app: ErrImagePull: no such image",
  });
  expect(judgeNode(waiting("CrashLoopBackOff"), "new", ["app"], undefined).state).toBe("failed");
  expect(judgeNode(waiting("ContainerCreating"), "new", ["app"], undefined).state).toBe("pending");
  expect(judgeNode(records({ node: undefined }), "new", [], undefined)).toEqual({
    state: "unavailable",
    reason: "down (no lease)",
  });
  expect(judgeNode(records({ node: node(false) as NodeRecords["node"] }), "new", [], undefined).state).toBe(
    "unavailable",
  );
  expect(judgeNode(records({ cordoned: true }), "new", [], undefined)).toEqual({
    state: "unavailable",
    reason: "cordoned",
  });
});

test("a failure the node reported before the write (rolling back from a bad image) is not the new pod's", () => {
  const failing = records({
    status: {
      phase: "Pending",
      containerStatuses: [{ name: "app", ready: false, state: { waiting: { reason: "ImagePullBackOff" } } }],
    } as NodeRecords["status"],
  });
  const baseline = baselineOf({ ...failing, running: "bad" }, "good");
  expect(baseline).toEqual({ atTarget: false, ids: {}, failing: ["app"] });
  expect(judgeNode({ ...failing, running: "good" }, "good", ["app"], baseline)).toEqual({
    state: "pending",
    reason: "container app not yet restarted",
  });
  expect(judgeNode({ ...failing, running: "good" }, "good", ["app"], undefined).state).toBe("failed");
});

test("a pod the node refuses (phase Failed, as admission leaves it) fails the node, unless it had failed before the write", () => {
  const refused = records({
    status: { phase: "Failed", reason: "OutOfcpu", message: "Node didn't have enough resource: cpu" },
  });
  expect(judgeNode(refused, "new", ["app"], undefined)).toEqual({
    state: "failed",
    reason: "OutOfcpu",
    message: "pod OutOfcpu: Node didn't have enough resource: cpu",
  });
  expect(judgeNode(refused, "new", ["app"], baselineOf({ ...refused, running: "old" }, "new")).state).toBe("pending");
});
