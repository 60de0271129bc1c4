// The fleet view from etcd's records: rows, heartbeat ages from leases, tables and JSON.
import { expect, test } from "bun:test";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import type { EtcdEntry } from "../sources/etcd-client.ts";
import { formatFleetData, formatFleetTable, readFleet } from "./fleet.ts";

const entry = (key: string, value: unknown, lease = "7"): EtcdEntry => ({
  key,
  value: JSON.stringify(value),
  lease,
  modRevision: 1,
});
const node = (name: string, ready: boolean, message = "") => ({
  metadata: { name },
  status: {
    conditions: [{ type: "Ready", status: ready ? "True" : "False", message }],
    nodeInfo: { containerRuntimeVersion: "docker://20.10.24", kubeletVersion: "v0.1.0" },
  },
});
const running = { phase: "Running", containerStatuses: [{ ready: true, restartCount: 0, state: { running: {} } }] };
const crashing = {
  phase: "Running",
  containerStatuses: [{ ready: false, restartCount: 4, state: { waiting: { reason: "CrashLoopBackOff" } } }],
};

const client = {
  async list(prefix: string) {
    const all = [
      entry(fleetKeys.node("n1"), node("n1", true)),
      entry(fleetKeys.node("n2"), node("n2", false, "container runtime is down: connect ENOENT")),
      entry(fleetKeys.status("n1", "default", "web"), running),
      entry(fleetKeys.status("n1", "default", "worker"), crashing),
      entry("/registry/hosts/n1/kubelet", [{ kind: "Pod" }], "0"),
      entry(fleetKeys.event("n1", "default", "worker.1"), {
        type: "Warning",
        reason: "BackOff",
        message: "Back-off restarting failed container",
        count: 3,
        lastTimestamp: "2026-01-01T00:00:00.000Z",
        involvedObject: { kind: "Pod", namespace: "default", name: "worker", uid: "u" },
      }),
    ];
    return { entries: all.filter((e) => e.key.startsWith(prefix)), revision: 9 };
  },
  async listEach(prefixes: string[]) {
    return { entries: await Promise.all(prefixes.map(async (p) => (await client.list(p)).entries)), revision: 9 };
  },
  leaseTimeToLive: async () => ({ ttl: 36, granted: 40 }),
};

test("nodes show readiness, heartbeat age from the lease and running/desired pods, a crash loop not counted as running", async () => {
  const view = await readFleet(client);
  expect(view.nodes.map((n) => [n.name, n.ready, n.heartbeatAgeSeconds, n.podsRunning, n.podsDesired])).toEqual([
    ["n1", "Ready", 4, 1, 2],
    ["n2", "NotReady (container runtime is down: connect ENOENT)", 4, 0, 0],
  ]);
  expect(view.pods.map((p) => [p.node, p.name, p.phase, p.ready, p.restarts, p.reason])).toEqual([
    ["n1", "web", "Running", "1/1", 0, ""],
    ["n1", "worker", "Running", "0/1", 4, "CrashLoopBackOff"],
  ]);
  expect(view.events.map((e) => `${e.node} ${e.event.reason}`)).toEqual(["n1 BackOff"]);
});

test("tables line up under kubectl-style headers; JSON carries the rows of the chosen section", async () => {
  const view = await readFleet(client);
  const table = formatFleetTable(view, "all", Date.parse("2026-01-01T00:05:00.000Z")).split("\n");
  expect(table[0]).toBe(
    "NODE   STATUS                                                 HEARTBEAT   PODS   RUNTIME             KUBELET",
  );
  expect(table[1]).toMatch(/^n1 {5}Ready {2,}4s {10}1\/2 {4}docker:\/\/20\.10\.24 {3}v0\.1\.0$/);
  expect(table).toContain("n1     default/worker   Running   0/1     4          CrashLoopBackOff");
  expect(formatFleetTable(view, "events", Date.parse("2026-01-01T00:05:00.000Z"))).toContain(
    "n1     5m          Warning   BackOff   pod/default/worker   Back-off restarting failed container (x3)",
  );
  expect(Object.keys(JSON.parse(formatFleetData(view, "pods", "json")))).toEqual(["pods"]);
});

test("the pods view lists each registered node's statuses alone, serializably, in one call for all nodes: neither manifests nor events", async () => {
  const listed: string[] = [];
  const recording = {
    ...client,
    list: (prefix: string, options?: { serializable?: boolean }) => (
      listed.push(`${prefix}${options?.serializable ? " (serializable)" : ""}`), client.list(prefix)
    ),
    listEach: (prefixes: string[], options?: { serializable?: boolean }) => (
      listed.push(`${prefixes.join(" ")}${options?.serializable ? " (serializable)" : ""}`), client.listEach(prefixes)
    ),
  };
  const view = await readFleet(recording, { statuses: true, events: false });
  expect(listed).toEqual(
    [fleetKeys.nodes, `${fleetKeys.statuses("n1")} ${fleetKeys.statuses("n2")}`].map((p) => `${p} (serializable)`),
  );
  expect(view.pods.map((p) => p.name)).toEqual(["web", "worker"]);
  expect(view.events).toEqual([]);
});

test("without leases the view asks etcd for no lease: the pods view needs no heartbeat", async () => {
  let asked = 0;
  const counting = { ...client, leaseTimeToLive: async () => (asked++, { ttl: 36, granted: 40 }) };
  const view = await readFleet(counting, { leases: false });
  expect(asked).toBe(0);
  expect(view.nodes.map((n) => n.heartbeatAgeSeconds)).toEqual([undefined, undefined]);
  await readFleet(counting);
  expect(asked).toBe(2);
});
