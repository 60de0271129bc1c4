import { describe, expect, test } from "bun:test";
import type { ApiClient } from "./api-client.ts";
import { describeKind, describeNode, describePod } from "./describe.ts";

const NOW = Date.parse("2026-01-01T01:00:00Z");

const POD = {
  metadata: {
    name: "web",
    namespace: "default",
    uid: "u1",
    creationTimestamp: "2026-01-01T00:00:00Z",
    labels: { tier: "front", app: "web" },
    annotations: {},
  },
  spec: {
    nodeName: "edge-1",
    containers: [
      {
        name: "nginx",
        image: "nginx:1.27",
        ports: [{ containerPort: 80, protocol: "TCP" }],
        resources: { requests: { cpu: "100m", memory: "64Mi" } },
        env: [{ name: "MODE", value: "fast" }],
        volumeMounts: [{ name: "site", mountPath: "/usr/share/nginx/html", readOnly: true }],
      },
    ],
    volumes: [{ name: "site", configMap: { name: "site" } }],
  },
  status: {
    phase: "Running",
    hostIP: "10.0.0.5",
    podIP: "10.0.0.5",
    podIPs: [{ ip: "10.0.0.5" }],
    startTime: "2026-01-01T00:00:00Z",
    conditions: [{ type: "Ready", status: "True" }],
    containerStatuses: [
      {
        name: "nginx",
        ready: true,
        restartCount: 2,
        containerID: "containerd://abc",
        imageID: "sha256:def",
        state: { running: { startedAt: "2026-01-01T00:30:00Z" } },
        lastState: {
          terminated: {
            exitCode: 137,
            reason: "OOMKilled",
            startedAt: "2026-01-01T00:10:00Z",
            finishedAt: "2026-01-01T00:29:00Z",
          },
        },
      },
    ],
  },
};

const EVENTS = {
  items: [
    {
      type: "Warning",
      reason: "BackOff",
      message: "Back-off restarting failed container",
      count: 3,
      firstTimestamp: "2026-01-01T00:20:00Z",
      lastTimestamp: "2026-01-01T00:59:00Z",
      source: { component: "kubelet" },
    },
    {
      type: "Normal",
      reason: "Pulled",
      message: 'Container image "nginx:1.27" already present',
      count: 1,
      firstTimestamp: "2026-01-01T00:00:05Z",
      lastTimestamp: "2026-01-01T00:00:05Z",
      source: { component: "kubelet" },
    },
  ],
};

function client(answers: Record<string, unknown>, asked: string[] = []): ApiClient {
  return {
    async get<T>(path: string) {
      asked.push(path);
      const key = Object.keys(answers).find((k) => path.startsWith(k));
      if (!key) throw new Error(`Error from server (NotFound): ${path}`);
      return answers[key] as T;
    },
  };
}

describe("kubelet describe pod", () => {
  test("prints kubectl's sections for the pod, its containers' states, conditions, volumes, QoS and events", async () => {
    const asked: string[] = [];
    const text = await describePod(
      client({ "/api/v1/namespaces/default/pods/web": POD, "/api/v1/namespaces/default/events": EVENTS }, asked),
      "default",
      "web",
      NOW,
    );
    const lines = text.split("\n");
    // The first block is as wide as its longest label ("Annotations:") and kubectl's padding of 2.
    expect(lines.slice(0, 7)).toEqual([
      "Name:         web",
      "Namespace:    default",
      "Node:         edge-1/10.0.0.5",
      "Start Time:   Thu, 01 Jan 2026 00:00:00 +0000",
      "Labels:       app=web",
      "              tier=front",
      "Annotations:  <none>",
    ]);
    expect(text).toContain("    State:          Running\n      Started:      Thu, 01 Jan 2026 00:30:00 +0000\n");
    expect(text).toContain("    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n");
    expect(text).toContain("    Restart Count:  2\n    Requests:\n      cpu:     100m\n      memory:  64Mi\n");
    expect(text).toContain("    Mounts:\n      /usr/share/nginx/html from site (ro)\n");
    expect(text).toContain("QoS Class:       Burstable\n");
    expect(text).toContain(
      'Events:\n  Type     Reason   Age                From     Message\n  ----     ------   ----               ----     -------\n  Normal   Pulled   59m                kubelet  Container image "nginx:1.27" already present\n  Warning  BackOff  60s (x3 over 40m)  kubelet  Back-off restarting failed container\n',
    );
    const selector = decodeURIComponent(asked[1]!.split("fieldSelector=")[1]!);
    expect(selector).toBe(
      "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=u1",
    );
  });
});

describe("kubelet describe pod of a container that never ran", () => {
  test("prints its unset start time as Go's zero time, as kubectl does", async () => {
    const failed = structuredClone(POD);
    failed.status.containerStatuses[0]!.lastState = {
      terminated: { exitCode: 128, reason: "ContainerCannotRun", finishedAt: "2026-01-01T00:29:00Z" },
    } as never;
    const text = await describePod(
      client({ "/api/v1/namespaces/default/pods/web": failed, "/api/v1/namespaces/default/events": { items: [] } }),
      "default",
      "web",
      NOW,
    );
    expect(text).toContain("      Exit Code:    128\n      Started:      Mon, 01 Jan 0001 00:00:00 +0000\n");
  });
});

describe("kubelet describe node", () => {
  test("prints the node's conditions, addresses, capacity, system info, its pods' requests and its events", async () => {
    const node = {
      metadata: {
        name: "edge-1",
        uid: "edge-1",
        labels: { "kubernetes.io/os": "linux" },
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {},
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            lastHeartbeatTime: "2026-01-01T00:59:00Z",
            lastTransitionTime: "2026-01-01T00:00:00Z",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
          },
        ],
        addresses: [
          { type: "InternalIP", address: "10.0.0.5" },
          { type: "Hostname", address: "edge-1" },
        ],
        capacity: { cpu: "2", memory: "4Gi", pods: "110" },
        allocatable: { cpu: "2", memory: "4Gi", pods: "110" },
        nodeInfo: {
          kubeletVersion: "v0.9.0",
          containerRuntimeVersion: "containerd://1.6.20",
          operatingSystem: "linux",
          architecture: "amd64",
        },
      },
    };
    const text = await describeNode(
      client({ "/api/v1/nodes/edge-1": node, "/api/v1/pods": { items: [POD] }, "/api/v1/events": { items: [] } }),
      "edge-1",
      NOW,
    );
    expect(text).toContain("Roles:              <none>\n");
    expect(text).toContain("Unschedulable:      false\n");
    expect(text).toMatch(
      / {2}Ready {3}True {4}Thu, 01 Jan 2026 00:59:00 \+0000 {3}Thu, 01 Jan 2026 00:00:00 \+0000 {3}KubeletReady {3}kubelet is posting ready status\n/,
    );
    expect(text).toContain("  InternalIP:  10.0.0.5\n  Hostname:    edge-1\n");
    expect(text).toContain("  Container Runtime Version:  containerd://1.6.20\n");
    expect(text).toMatch(/ {2}default +web +100m \(5%\) +0 \(0%\) +64Mi \(1%\) +0 \(0%\) +60m\n/);
    expect(text).toMatch(/ {2}cpu +100m \(5%\) +0 \(0%\)\n/);
    // As kubectl's tabwriter does, "Events:" shares the column of the block above it.
    expect(text).toEndWith("  ephemeral-storage  0 (0%)     0 (0%)\nEvents:              <none>\n");
    expect(text).toContain("Unschedulable:      false\nLease:              Failed to get lease: ");
  });

  test("describe reads pods and nodes, and names them when asked for anything else", () => {
    expect(["po", "pods", "node", "no"].map(describeKind)).toEqual(["pod", "pod", "node", "node"]);
    expect(() => describeKind("deployment")).toThrow('kubelet describe reads pods and nodes, not "deployment"');
  });
});
