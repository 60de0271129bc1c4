import { describe, expect, test } from "bun:test";
import type { V1Node } from "../../api/types.ts";
import { buildNode, noPressure, type HostFacts } from "../../node/status/node-status.ts";
import { apiApp } from "../../testing/api-app.ts";
import { createNodeRoutes, nodeRoles, nodeStatus } from "./nodes.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const HOST: HostFacts = {
  hostname: "edge-1",
  cpus: 4,
  memoryBytes: 8 * 1024 ** 3,
  ephemeralStorageBytes: 0,
  kernelVersion: "6.1.0-13-amd64",
  osImage: "Debian GNU/Linux 12 (bookworm)",
  architecture: "amd64",
  machineID: "m",
  bootID: "b",
};

function setUp(ready = true, labels: Record<string, string> = {}) {
  const built: Array<V1Node | undefined> = [];
  const node = async (previous?: V1Node) => {
    built.push(previous);
    return buildNode({
      name: "edge-1",
      hostIP: "10.0.0.5",
      port: 10250,
      kubeletVersion: "v0.9.0",
      host: HOST,
      maxPods: 110,
      labels,
      allocatable: { milliCpu: 3500, memoryBytes: 7 * 1024 ** 3 },
      runtime: { runtimeName: "containerd", runtimeVersion: "1.6.20", runtimeApiVersion: "v1" },
      readiness: { ready, message: ready ? "" : "container runtime is down: dial unix: no such file" },
      pressure: noPressure.conditions(),
      // The heartbeat's time: the record's own creation time is that of its first build.
      now: "2026-01-01T00:30:00Z",
      previous,
    });
  };
  const images = async () => [
    { id: "sha256:a", tags: ["busybox:stable"], sizeBytes: 5_000_000, createdAt: 0, inUse: true },
    { id: "sha256:b", tags: [], sizeBytes: 9_000_000, createdAt: 0, inUse: false },
  ];
  let now = Date.parse("2026-01-01T00:00:00Z");
  const app = apiApp(createNodeRoutes({ node, images, now: () => now }));
  return { app, built, later: (ms: number) => (now += ms) };
}

describe("core/v1 nodes", () => {
  test("the node's creation time is when the server started, whenever its record is read", async () => {
    const { app, later } = setUp();
    later(60_000);
    const node = (await (await app.request("/api/v1/nodes/edge-1")).json()) as V1Node;
    expect(node.metadata!.creationTimestamp as unknown).toBe("2026-01-01T00:00:00Z");
  });

  test("the node list holds this node: its record's conditions, capacity, addresses and nodeInfo, and its images largest first", async () => {
    const { app } = setUp();
    const list = (await (await app.request("/api/v1/nodes")).json()) as { kind: string; items: V1Node[] };
    expect(list.kind).toBe("NodeList");
    const [node] = list.items;
    expect(node!.metadata!.name).toBe("edge-1");
    expect(node!.metadata!.uid).toBe("edge-1");
    expect(node!.status!.capacity).toEqual({ cpu: "4", memory: "8388608Ki", pods: "110" });
    expect(node!.status!.allocatable!.cpu).toBe("3500m");
    expect(node!.status!.conditions!.map((c) => `${c.type}=${c.status}`)).toEqual([
      "MemoryPressure=False",
      "DiskPressure=False",
      "PIDPressure=False",
      "Ready=True",
    ]);
    expect(node!.status!.nodeInfo!.containerRuntimeVersion).toBe("containerd://1.6.20");
    expect(node!.status!.images).toEqual([
      { names: ["sha256:b"], sizeBytes: 9_000_000 },
      { names: ["busybox:stable"], sizeBytes: 5_000_000 },
    ]);
  });

  test("a second read passes the first record on, so conditions keep their transition times", async () => {
    const { app, built } = setUp();
    await app.request("/api/v1/nodes/edge-1");
    await app.request("/api/v1/nodes/edge-1");
    expect(built[0]).toBeUndefined();
    expect(built[1]?.metadata?.name).toBe("edge-1");
  });

  test("as a Table, the node has kube-apiserver's columns and cells, the wide ones at priority 1", async () => {
    const { app, later } = setUp(true, { "node-role.kubernetes.io/edge": "" });
    later(10 * 60_000);
    const table = (await (await app.request("/api/v1/nodes", { headers: { accept: TABLE } })).json()) as {
      columnDefinitions: Array<{ name: string; priority: number }>;
      rows: Array<{ cells: unknown[]; object: { kind: string; metadata: { name: string } } }>;
    };
    expect(table.columnDefinitions.map((c) => `${c.name}:${c.priority}`)).toEqual([
      "Name:0",
      "Status:0",
      "Roles:0",
      "Age:0",
      "Version:0",
      "Internal-IP:1",
      "External-IP:1",
      "OS-Image:1",
      "Kernel-Version:1",
      "Container-Runtime:1",
    ]);
    expect(table.rows[0]!.cells).toEqual([
      "edge-1",
      "Ready",
      "edge",
      "10m",
      "v0.9.0",
      "10.0.0.5",
      "<none>",
      "Debian GNU/Linux 12 (bookworm)",
      "6.1.0-13-amd64",
      "containerd://1.6.20",
    ]);
    expect(table.rows[0]!.object.kind).toBe("PartialObjectMetadata");
  });

  test("STATUS is NotReady when the Ready condition is false, and SchedulingDisabled follows a cordon", () => {
    const node = {
      status: { conditions: [{ type: "Ready", status: "False" }] },
      spec: { unschedulable: true },
    } as V1Node;
    expect(nodeStatus(node)).toBe("NotReady,SchedulingDisabled");
    expect(nodeStatus({} as V1Node)).toBe("Unknown");
  });

  test("ROLES come from node-role labels and kubernetes.io/role, sorted; <none> without", () => {
    const node = {
      metadata: {
        labels: { "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge", "node-role.kubernetes.io/": "" },
      },
    } as V1Node;
    expect(nodeRoles(node)).toBe("edge,worker");
    expect(nodeRoles({ metadata: {} } as V1Node)).toBe("<none>");
  });

  test("another node's name is a NotFound worded as the API server's", async () => {
    const { app } = setUp();
    const response = await app.request("/api/v1/nodes/other");
    expect(response.status).toBe(404);
    expect(((await response.json()) as { message: string }).message).toBe('nodes "other" not found');
  });

  test("a label selector the node does not match gives an empty list", async () => {
    const { app } = setUp();
    const list = (await (await app.request("/api/v1/nodes?labelSelector=kubernetes.io%2Fos%3Dwindows")).json()) as {
      items: unknown[];
    };
    expect(list.items).toEqual([]);
    const match = (await (await app.request("/api/v1/nodes?labelSelector=kubernetes.io%2Fos%3Dlinux")).json()) as {
      items: unknown[];
    };
    expect(match.items).toHaveLength(1);
  });
});
