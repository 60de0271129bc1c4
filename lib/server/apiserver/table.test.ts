import { expect, test } from "bun:test";
import type { Pod } from "../../api/types.ts";
import { testPod } from "../../testing/pods.ts";
import { humanDuration, podCells, podTable, wantsTable } from "./table.ts";

const NOW = Date.UTC(2026, 0, 1, 12);
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString();

/** A pod of `containers` with `status`, created an hour ago. */
function pod(status: Pod["status"], spec: Partial<Pod["spec"]> = {}): Pod {
  const p = testPod("web", spec);
  return { ...p, metadata: { ...p.metadata, creationTimestamp: ago(3600) }, status };
}

const running = { running: { startedAt: ago(60) } };

test.each([
  [0, "0s"],
  [59_000, "59s"],
  [119_000, "119s"],
  [125_000, "2m5s"],
  [600_000, "10m"],
  [3 * 3600_000 + 5 * 60_000, "3h5m"],
  [30 * 3600_000, "30h"],
  [3 * 86_400_000 + 4 * 3600_000, "3d4h"],
  [400 * 86_400_000, "400d"],
  [(2 * 365 + 10) * 86_400_000, "2y10d"],
  [-5000, "<invalid>"],
])("HumanDuration(%p ms) is %p", (ms, text) => {
  expect(humanDuration(ms)).toBe(text);
});

test("a running ready pod is 1/1 Running with no restarts, aged from its creation", () => {
  const p = pod({
    phase: "Running",
    containerStatuses: [{ name: "app", ready: true, restartCount: 0, image: "", imageID: "", state: running }],
  });
  expect(podCells(p, NOW, false)).toEqual(["web", "1/1", "Running", "0", "60m"]);
});

test("a crash-looping container shows its waiting reason and its restarts with how long ago the last was", () => {
  const p = pod({
    phase: "Running",
    containerStatuses: [
      {
        name: "app",
        ready: false,
        restartCount: 4,
        image: "",
        imageID: "",
        state: { waiting: { reason: "CrashLoopBackOff" } },
        lastState: { terminated: { exitCode: 1, finishedAt: ago(30) } },
      },
    ],
  });
  expect(podCells(p, NOW, false)).toEqual(["web", "0/1", "CrashLoopBackOff", "4 (30s ago)", "60m"]);
});

test("an init container still running is Init:0/1; one that failed says Init:<reason>", () => {
  const spec = { initContainers: [{ name: "init", image: "busybox" }] };
  const waiting = pod(
    {
      phase: "Pending",
      initContainerStatuses: [{ name: "init", ready: false, restartCount: 0, image: "", imageID: "", state: running }],
      containerStatuses: [
        {
          name: "app",
          ready: false,
          restartCount: 0,
          image: "",
          imageID: "",
          state: { waiting: { reason: "PodInitializing" } },
        },
      ],
    },
    spec,
  );
  expect(podCells(waiting, NOW, false)[2]).toBe("Init:0/1");
  const failed = pod(
    {
      phase: "Pending",
      initContainerStatuses: [
        {
          name: "init",
          ready: false,
          restartCount: 0,
          image: "",
          imageID: "",
          state: { terminated: { exitCode: 2, reason: "Error" } },
        },
      ],
    },
    spec,
  );
  expect(podCells(failed, NOW, false)[2]).toBe("Init:Error");
});

test("a started sidecar counts in READY and its restarts stay in RESTARTS once the pod is initialized", () => {
  const p = pod(
    {
      phase: "Running",
      conditions: [{ type: "Initialized", status: "True" }],
      initContainerStatuses: [
        { name: "side", ready: true, started: true, restartCount: 2, image: "", imageID: "", state: running },
      ],
      containerStatuses: [{ name: "app", ready: true, restartCount: 1, image: "", imageID: "", state: running }],
    },
    { initContainers: [{ name: "side", image: "busybox", restartPolicy: "Always" }] },
  );
  expect(podCells(p, NOW, false).slice(1, 4)).toEqual(["2/2", "Running", "3"]);
});

test("a container that exited without a reason shows its exit code; a deleted pod shows Terminating", () => {
  const exited = pod({
    phase: "Running",
    containerStatuses: [
      { name: "app", ready: false, restartCount: 0, image: "", imageID: "", state: { terminated: { exitCode: 3 } } },
    ],
  });
  expect(podCells(exited, NOW, false)[2]).toBe("ExitCode:3");
  const deleting = { ...exited, metadata: { ...exited.metadata, deletionTimestamp: ago(0) } };
  expect(podCells(deleting, NOW, false)[2]).toBe("Terminating");
});

test("wide cells are the first pod IP, the node, the nominated node and the readiness gates, <none> when unset", () => {
  const p = pod(
    { phase: "Running", podIPs: [{ ip: "10.0.0.5" }], conditions: [{ type: "example.com/gate", status: "True" }] },
    { nodeName: "node-a", readinessGates: [{ conditionType: "example.com/gate" }, { conditionType: "other" }] },
  );
  expect(podCells(p, NOW, true).slice(5)).toEqual(["10.0.0.5", "node-a", "<none>", "1/2"]);
  expect(podCells(pod({ phase: "Pending" }), NOW, true).slice(5)).toEqual(["<none>", "<none>", "<none>", "<none>"]);
});

test("a Table carries the nine columns (four wide ones at priority 1), metadata-only objects by default", () => {
  const table = podTable([pod({ phase: "Succeeded" })], { now: NOW, include: "Metadata", resourceVersion: "7" });
  expect(table.columnDefinitions.map((c) => `${c.name}:${c.priority}`)).toEqual([
    "Name:0",
    "Ready:0",
    "Status:0",
    "Restarts:0",
    "Age:0",
    "IP:1",
    "Node:1",
    "Nominated Node:1",
    "Readiness Gates:1",
  ]);
  expect(table.metadata).toEqual({ resourceVersion: "7" });
  expect(table.rows[0]!.object).toMatchObject({ kind: "PartialObjectMetadata", metadata: { name: "web" } });
  expect(table.rows[0]!.conditions).toEqual([
    { type: "Completed", status: "True", reason: "Succeeded", message: "The pod has completed successfully." },
  ]);
  expect(podTable([], { now: NOW, include: "None", headers: false }).columnDefinitions).toEqual([]);
});

test("kubectl get's Accept header asks for a Table; plain JSON does not", () => {
  expect(
    wantsTable(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
    ),
  ).toBe(true);
  expect(wantsTable("application/json")).toBe(false);
});
