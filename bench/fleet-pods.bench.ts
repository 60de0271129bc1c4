// `kubelet fleet pods`'s read at fleet scale without starting the fleet: a three-member etcd filled with --nodes Node
// records and --pods statuses each (the records hollow nodes write, plus their manifests and events), read by main's
// way (one range per node, 32 in flight) and by readFleet (many nodes to a transaction), alternated in one process.
// Per read: wall and CPU time (the less disturbed figure on a shared machine), and the output compared.
// With --binaries a,b: each binary's `kubelet fleet pods -o json` too, alternated (wall, RSS and CPU by /usr/bin/time).
// Usage: bun bench/fleet-pods.bench.ts [--nodes 1000] [--pods 30] [--trials 5] [--binaries /work/main/dist/kubelet,dist/kubelet]
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { formatFleetData, readFleet } from "../lib/cli/fleet.ts";
import { fleetKeys } from "../lib/node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClient, type EtcdEntry } from "../lib/sources/etcd-client.ts";
import { etcdPodKey } from "../lib/sources/etcd.ts";
import { startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { machine, percentile } from "./support.ts";

const arg = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1]) || fallback;
const nodeCount = arg("--nodes", 1000);
const podCount = arg("--pods", 30);
const trials = arg("--trials", 5);

const at = "2026-11-28T20:00:00Z";
const node = (name: string) => ({
  kind: "Node",
  apiVersion: "v1",
  metadata: { name, labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux" } },
  status: {
    conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", lastHeartbeatTime: at }],
    nodeInfo: { containerRuntimeVersion: "hollow://1.0", kubeletVersion: "v0.1.0", architecture: "amd64" },
    capacity: { cpu: "2", memory: "4Gi", pods: "110" },
  },
});
const status = (pod: string) => ({
  phase: "Running",
  conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({
    type,
    status: "True",
    lastTransitionTime: at,
  })),
  hostIP: "127.0.0.1",
  podIP: "127.0.0.1",
  startTime: at,
  qosClass: "BestEffort",
  containerStatuses: [
    {
      name: "app",
      ready: true,
      started: true,
      restartCount: 0,
      image: "local/busybox:stable",
      imageID: `sha256:${"ab".repeat(32)}`,
      containerID: `hollow://${pod}-${"0".repeat(40)}`,
      state: { running: { startedAt: at } },
    },
  ],
});
const manifest = (pod: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: pod },
  spec: { containers: [{ name: "app", image: "local/busybox:stable" }] },
});

/** main's transport (before this change) under readFleet: one paged range per node, 32 in flight. */
function perNode(client: EtcdClient): EtcdClient {
  return {
    ...client,
    async listEach(prefixes, options) {
      const entries: EtcdEntry[][] = [];
      let next = 0;
      const lister = async () => {
        for (let i = next++; i < prefixes.length; i = next++)
          entries[i] = (await client.list(prefixes[i]!, options)).entries;
      };
      await Promise.all(Array.from({ length: 32 }, lister));
      return { entries, revision: 0 };
    },
  };
}

const cluster = await startEtcdCluster(3);
const client = createEtcdClient({ endpoints: cluster.endpoints });
try {
  const names = Array.from({ length: nodeCount }, (_, i) => `hollow-${i}`);
  const pods = Array.from({ length: podCount }, (_, i) => `p${i}`);
  const changes = names.flatMap((n) => [
    { key: fleetKeys.node(n), value: JSON.stringify(node(n)) },
    ...pods.flatMap((p) => [
      { key: fleetKeys.status(n, "default", p), value: JSON.stringify(status(p)) },
      { key: etcdPodKey(n, "default", p), value: JSON.stringify(manifest(p)) },
    ]),
    ...pods
      .slice(0, 3)
      .map((p) => ({ key: fleetKeys.event(n, "default", `${p}.1`), value: JSON.stringify({ reason: "Started" }) })),
  ]);
  for (let i = 0; i < changes.length; i += 100) await client.apply(changes.slice(i, i + 100));
  console.log(`filled: ${nodeCount} nodes × ${podCount} pods (${changes.length} keys); ${machine()}`);

  const ways = {
    perNode: () => readFleet(perNode(client), { statuses: true, events: false, leases: false }),
    batched: () => readFleet(client, { statuses: true, events: false, leases: false }),
  };
  const outputs = new Map<string, string>();
  const samples: Record<string, { wall: number[]; cpu: number[]; load: number[] }> = {};
  for (let t = 0; t < trials + 1; t++) {
    for (const [way, read] of Object.entries(ways)) {
      const cpu0 = process.cpuUsage();
      const wall0 = performance.now();
      const view = await read();
      const wall = (performance.now() - wall0) / 1000;
      const { user, system } = process.cpuUsage(cpu0);
      outputs.set(way, formatFleetData(view, "pods", "json"));
      if (t === 0) continue; // warm-up: connections, JIT
      const s = (samples[way] ??= { wall: [], cpu: [], load: [] });
      s.wall.push(wall);
      s.cpu.push((user + system) / 1e6);
      s.load.push(loadavg()[0]!);
    }
  }
  const same = outputs.get("perNode") === outputs.get("batched");
  console.log(`output identical: ${same} (${JSON.parse(outputs.get("batched")!).pods.length} pods)`);
  for (const [way, s] of Object.entries(samples))
    console.log(
      `${way}: wall p50 ${percentile(s.wall, 50).toFixed(2)} s (min ${Math.min(...s.wall).toFixed(2)}), ` +
        `CPU p50 ${percentile(s.cpu, 50).toFixed(2)} s (min ${Math.min(...s.cpu).toFixed(2)}), ` +
        `load ${Math.min(...s.load).toFixed(0)}–${Math.max(...s.load).toFixed(0)}`,
    );
  const binaries = process.argv.includes("--binaries")
    ? process.argv[process.argv.indexOf("--binaries") + 1]!.split(",")
    : [];
  const runs = new Map<string, string[]>();
  const printed = new Set<string>();
  for (let t = 0; t < trials; t++) {
    for (const binary of binaries) {
      const args = ["fleet", "pods", "-o", "json", "--etcd_servers", cluster.endpoints.join(",")];
      const run = spawnSync("/usr/bin/time", ["-f", "%e %M %U %S", binary, ...args], { maxBuffer: 2 ** 30 });
      const [wall, maxKb, user, system] = run.stderr.toString().trim().split("\n").at(-1)!.split(" ").map(Number);
      printed.add(run.stdout.toString());
      runs.set(binary, [
        ...(runs.get(binary) ?? []),
        `${wall!.toFixed(2)} s / ${(maxKb! / 1024).toFixed(0)} MiB (${(user! + system!).toFixed(2)} s CPU, load ${loadavg()[0]!.toFixed(0)})`,
      ]);
    }
  }
  for (const [binary, lines] of runs) console.log(`${binary} fleet pods -o json: ${lines.join("; ")}`);
  if (binaries.length > 0) console.log(`binaries' output identical: ${printed.size === 1}`);
  if (!same || printed.size > 1) process.exitCode = 1;
} finally {
  client.close();
  await cluster.stop();
}
