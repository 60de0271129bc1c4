// Fleet scale (issue 27): hollow nodes (real kubelets over the in-memory runtime, in --processes child
// processes) × 30 pods each on a three-member etcd on loopback, at 100, 300 and 1,000 nodes. Per size:
// etcd writes/s and bytes/s idle and during churn (10 % of the pods changed per minute), lease
// keep-alives/s, database size, etcd's CPU and RSS, put → running and status change → in etcd (p50/p99),
// `kubelet fleet pods` wall time and memory over the whole fleet, and the harness's cost per node.
// Usage: bun build.ts && bun bench/fleet-scale.bench.ts [--sizes 100,300,1000] [--pods 30] [--seconds 30]
//        [--processes 4] [--svg bench/fleet-scale.svg]
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { readFleet } from "../lib/cli/fleet.ts";
import { createEtcdClient, type EtcdClient } from "../lib/sources/etcd-client.ts";
import { etcdPodKey } from "../lib/sources/etcd.ts";
import { startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { startHollowProcesses } from "../lib/testing/hollow-processes.ts";
import { KUBELET_BINARY } from "../lib/testing/services.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { cpuSeconds, machine, memory, percentile } from "./support.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const sizes = arg("--sizes", "100,300,1000").split(",").map(Number);
const podsPerNode = Number(arg("--pods", "30"));
const seconds = Number(arg("--seconds", "30"));
const processes = Number(arg("--processes", "4"));

const pod = (name: string, generation: number) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: {
    containers: [{ name: "app", image: "local/busybox:stable", env: [{ name: "GEN", value: String(generation) }] }],
  },
});

/** Counters summed over the members (the KV ones from the first: every member applies every write). */
async function etcdMetrics(endpoints: string[]) {
  const pages = await Promise.all(endpoints.map((e) => fetch(`${e}/metrics`).then((r) => r.text())));
  const value = (page: string, name: string) => Number(page.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0);
  const sum = (name: string) => pages.reduce((n, page) => n + value(page, name), 0);
  return {
    at: performance.now(),
    writes: value(pages[0]!, "etcd_mvcc_put_total") + value(pages[0]!, "etcd_mvcc_delete_total"),
    txns: value(pages[0]!, "etcd_mvcc_txn_total"),
    bytesIn: sum("etcd_network_client_grpc_received_bytes_total"),
    renewals: sum("etcd_debugging_lease_renewed_total"),
    dbBytes: value(pages[0]!, "etcd_mvcc_db_total_size_in_bytes"),
    cpuSeconds: sum("process_cpu_seconds_total"),
    rssBytes: sum("process_resident_memory_bytes"),
  };
}
type Metrics = Awaited<ReturnType<typeof etcdMetrics>>;

function rates(a: Metrics, b: Metrics) {
  const s = (b.at - a.at) / 1000;
  return {
    writesPerS: (b.writes - a.writes) / s,
    txnsPerS: (b.txns - a.txns) / s,
    kbPerS: (b.bytesIn - a.bytesIn) / 1024 / s,
    renewalsPerS: (b.renewals - a.renewals) / s,
    etcdCpu: (b.cpuSeconds - a.cpuSeconds) / s,
  };
}

/** An etcd call retried: on this shared machine a member can miss the client's 5 s deadline under load. */
async function retried<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= 5) throw error;
      await Bun.sleep(1000);
    }
  }
}

/** CPU seconds and RSS bytes of the processes hosting the hollow nodes. */
const harnessUsage = (pids: number[]) => ({
  cpu: pids.reduce((n, pid) => n + cpuSeconds(pid), 0),
  rss: pids.reduce((n, pid) => n + memory(pid).rssMb * 2 ** 20, 0),
});

/** Pods whose status in etcd says Running, read as `kubelet fleet pods` reads them. */
async function runningCount(client: EtcdClient): Promise<number> {
  const view = await readFleet(client, { statuses: true, events: false }).catch(() => undefined);
  return view?.pods.filter((p) => p.phase === "Running").length ?? 0; // a read that timed out: ask again later
}

async function measure(nodes: number) {
  const cluster = await startEtcdCluster(3);
  const client = createEtcdClient({ endpoints: cluster.endpoints });
  const dir = tempDir("bench-fleet-scale");
  const names = Array.from({ length: nodes }, (_, i) => `scale-${i}`);
  const podNames = Array.from({ length: podsPerNode }, (_, i) => `p${i}`);
  const changes = names.flatMap((node) =>
    podNames.map((p) => ({ key: etcdPodKey(node, "default", p), value: JSON.stringify(pod(p, 0)) })),
  );
  for (let i = 0; i < changes.length; i += 100) await retried(() => client.apply(changes.slice(i, i + 100)));
  const fleet = startHollowProcesses({ endpoints: cluster.endpoints, rootDir: dir, prefix: "scale-", processes });
  await fleet.start(0, 0);
  const before = harnessUsage(fleet.pids);
  const started = performance.now();
  // 50 nodes at a time, each group's pods running before the next starts: start-up (30 pods each) is CPU-bound.
  const total = nodes * podsPerNode;
  const deadline = Date.now() + 30 * 60_000;
  for (let first = 0; first < nodes; first += 50) {
    const count = Math.min(50, nodes - first);
    await fleet.start(first, count);
    while ((await runningCount(client)) < (first + count) * podsPerNode && Date.now() < deadline) await Bun.sleep(3000);
  }
  const allRunningS = (performance.now() - started) / 1000;
  const startCpu = harnessUsage(fleet.pids).cpu - before.cpu;
  await Bun.sleep(10_000); // settle: the first node-status rewrites and event records
  const harnessMb = (harnessUsage(fleet.pids).rss - before.rss) / 2 ** 20;

  // Idle.
  const idleCpu0 = harnessUsage(fleet.pids).cpu;
  const idle0 = await etcdMetrics(cluster.endpoints);
  await Bun.sleep(seconds * 1000);
  const idle1 = await etcdMetrics(cluster.endpoints);
  const idle = rates(idle0, idle1);
  const harnessCpu = (harnessUsage(fleet.pids).cpu - idleCpu0) / ((idle1.at - idle0.at) / 1000);

  // Churn: 10 % of the pods per minute get a new spec (an env value), at an even pace.
  const perSecond = (total * 0.1) / 60;
  const putAt = new Map<string, number>();
  const putToRunning: number[] = [];
  const statusToEtcd: number[] = [];
  const watch = await client.watch(
    { prefix: "/registry/hosts/" },
    (await retried(() => client.get("/"))).revision + 1,
    {
      put(entry) {
        const parts = entry.key.split("/"); // ["", "registry", "hosts", node, "status", ns, name]
        if (parts[4] !== "status") return;
        const id = `${parts[3]}/${parts[6]}`;
        const at = putAt.get(id);
        if (at === undefined) return;
        const status = JSON.parse(entry.value) as {
          phase?: string;
          containerStatuses?: Array<{ state?: { running?: { startedAt?: string } } }>;
        };
        const startedAt = Date.parse(status.containerStatuses?.[0]?.state?.running?.startedAt ?? "");
        if (status.phase !== "Running" || !(startedAt >= Math.floor(at))) return;
        const now = Date.now();
        putToRunning.push(now - at);
        statusToEtcd.push(now - startedAt);
        putAt.delete(id);
      },
      delete() {},
    },
  );
  const churnCpu0 = harnessUsage(fleet.pids).cpu;
  const churn0 = await etcdMetrics(cluster.endpoints);
  const churnEnd = Date.now() + seconds * 1000;
  let generation = 1;
  for (let k = 0; Date.now() < churnEnd; k++) {
    const node = names[Math.floor(Math.random() * nodes)]!;
    const p = podNames[Math.floor(Math.random() * podsPerNode)]!;
    const id = `${node}/${p}`;
    if (!putAt.has(id)) {
      putAt.set(id, Date.now());
      await retried(() => client.put(etcdPodKey(node, "default", p), JSON.stringify(pod(p, generation++))));
    }
    const due = churn0.at + ((k + 1) * 1000) / perSecond;
    if (due > performance.now()) await Bun.sleep(due - performance.now());
  }
  const churn1 = await etcdMetrics(cluster.endpoints);
  const churn = rates(churn0, churn1);
  const churnHarnessCpu = (harnessUsage(fleet.pids).cpu - churnCpu0) / ((churn1.at - churn0.at) / 1000);
  const churnLoad = loadavg()[0]!;
  const waitEnd = Date.now() + 20_000;
  while (putAt.size > 0 && Date.now() < waitEnd) await Bun.sleep(200);
  const lost = putAt.size;
  await watch.cancel();

  // The fleet view over every pod, as an operator runs it.
  const timed = spawnSync(
    "/usr/bin/time",
    ["-f", "%e %M %U %S", KUBELET_BINARY, "fleet", "pods", "-o", "json", "--etcd_servers", cluster.endpoints.join(",")],
    { encoding: "utf8", maxBuffer: 1 << 30 },
  );
  const [wall, maxKb, user, system] = timed.stderr.trim().split("\n").pop()!.split(" ").map(Number);
  const listed = (JSON.parse(timed.stdout) as { pods: unknown[] }).pods.length;
  const final = await etcdMetrics(cluster.endpoints);

  await fleet.stop();
  client.close();
  await cluster.stop();
  removeDir(dir);
  return {
    nodes,
    processes,
    pods: total,
    allRunningS,
    startCpuPerNodeMs: (startCpu * 1000) / nodes,
    harnessMbPerNode: harnessMb / nodes,
    harnessCpuPerNode: harnessCpu / nodes,
    idle,
    churn,
    churnPerS: perSecond,
    changed: putToRunning.length,
    lost,
    putToRunning,
    statusToEtcd,
    dbMb: final.dbBytes / 2 ** 20,
    etcdRssMb: final.rssBytes / 2 ** 20,
    fleetPodsS: wall!,
    fleetPodsCpuS: user! + system!,
    churnHarnessCpu,
    churnLoad,
    fleetPodsMb: maxKb! / 1024,
    listed,
  };
}
type Result = Awaited<ReturnType<typeof measure>>;

const p = (values: number[], q: number) => (values.length ? `${percentile(values, q).toFixed(0)}` : "-");

export function table(results: Result[]): string {
  const rows: Array<[string, (r: Result) => string]> = [
    ["pods (all Running after, s)", (r) => `${r.pods} (${r.allRunningS.toFixed(0)} s)`],
    ["idle: etcd writes/s (txns/s)", (r) => `${r.idle.writesPerS.toFixed(1)} (${r.idle.txnsPerS.toFixed(1)})`],
    ["idle: lease keep-alives/s", (r) => r.idle.renewalsPerS.toFixed(1)],
    ["idle: KiB/s into etcd", (r) => r.idle.kbPerS.toFixed(0)],
    ["idle: etcd CPU (cores, 3 members)", (r) => r.idle.etcdCpu.toFixed(2)],
    ["churn: pods changed/s (done, lost)", (r) => `${r.churnPerS.toFixed(1)} (${r.changed}, ${r.lost})`],
    ["churn: etcd writes/s (txns/s)", (r) => `${r.churn.writesPerS.toFixed(1)} (${r.churn.txnsPerS.toFixed(1)})`],
    ["churn: KiB/s into etcd", (r) => r.churn.kbPerS.toFixed(0)],
    ["churn: etcd CPU (cores, 3 members)", (r) => r.churn.etcdCpu.toFixed(2)],
    [
      "churn: hollow nodes' CPU (cores) / machine load",
      (r) => `${r.churnHarnessCpu.toFixed(2)} / ${r.churnLoad.toFixed(0)}`,
    ],
    ["put → running p50 / p99 (ms)", (r) => `${p(r.putToRunning, 50)} / ${p(r.putToRunning, 99)}`],
    ["status change → in etcd p50 / p99 (ms)", (r) => `${p(r.statusToEtcd, 50)} / ${p(r.statusToEtcd, 99)}`],
    ["etcd db size (MiB) / RSS of 3 members (MiB)", (r) => `${r.dbMb.toFixed(1)} / ${r.etcdRssMb.toFixed(0)}`],
    [
      "kubelet fleet pods: wall (s) / max RSS (MiB)",
      (r) =>
        `${r.fleetPodsS.toFixed(2)} / ${r.fleetPodsMb.toFixed(0)} (${r.listed} pods; ${r.fleetPodsCpuS.toFixed(2)} s CPU)`,
    ],
    [
      "harness per node: RSS (MiB) / idle CPU (% core)",
      (r) => `${r.harnessMbPerNode.toFixed(2)} / ${(r.harnessCpuPerNode * 100).toFixed(3)}`,
    ],
    ["harness per node: start-up CPU (ms)", (r) => r.startCpuPerNodeMs.toFixed(0)],
    ["processes hosting the hollow nodes", (r) => String(r.processes)],
  ];
  return [
    `| measure | ${results.map((r) => `${r.nodes} nodes`).join(" | ")} |`,
    `| --- | ${results.map(() => "---").join(" | ")} |`,
    ...rows.map(([name, f]) => `| ${name} | ${results.map(f).join(" | ")} |`),
  ].join("\n");
}

/** put → running p99 and status → etcd p99 (ms, left axis) and churn writes/s (right axis) against fleet size. */
export function scaleSvg(results: Result[]): string {
  const width = 800;
  const height = 300;
  const pad = 60;
  const nMax = Math.max(...results.map((r) => r.nodes));
  const latMax =
    Math.max(1, ...results.flatMap((r) => [percentile(r.putToRunning, 99) ?? 0, percentile(r.statusToEtcd, 99) ?? 0])) *
    1.1;
  const wMax = Math.max(1, ...results.map((r) => r.churn.writesPerS)) * 1.1;
  const x = (n: number) => pad + ((width - 2 * pad) * n) / nMax;
  const y = (v: number, max: number) => height - pad - ((height - 2 * pad) * v) / max;
  const line = (pick: (r: Result) => number, max: number, color: string) =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${results.map((r) => `${x(r.nodes).toFixed(1)},${y(pick(r), max).toFixed(1)}`).join(" ")}"/>` +
    results
      .map((r) => `<circle cx="${x(r.nodes).toFixed(1)}" cy="${y(pick(r), max).toFixed(1)}" r="3" fill="${color}"/>`)
      .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<line x1="${pad}" y1="${height - pad}" x2="${width - pad}" y2="${height - pad}" stroke="black"/>
<line x1="${pad}" y1="${pad}" x2="${pad}" y2="${height - pad}" stroke="black"/>
<line x1="${width - pad}" y1="${pad}" x2="${width - pad}" y2="${height - pad}" stroke="black"/>
${results.map((r) => `<text x="${x(r.nodes).toFixed(1)}" y="${height - pad + 15}" text-anchor="middle">${r.nodes}</text>`).join("")}
<text x="${width / 2}" y="${height - 15}" text-anchor="middle">hollow nodes (× ${podsPerNode} pods)</text>
<text x="10" y="${pad - 30}" fill="#1f77b4">put → running p99 (ms), max ${latMax.toFixed(0)}</text>
<text x="10" y="${pad - 15}" fill="#2ca02c">status → etcd p99 (ms)</text>
<text x="${width - 10}" y="${pad - 15}" fill="#d62728" text-anchor="end">etcd writes/s during churn, max ${wMax.toFixed(0)}</text>
${line((r) => percentile(r.putToRunning, 99) ?? 0, latMax, "#1f77b4")}
${line((r) => percentile(r.statusToEtcd, 99) ?? 0, latMax, "#2ca02c")}
${line((r) => r.churn.writesPerS, wMax, "#d62728")}
</svg>
`;
}

if (import.meta.main) {
  console.log(machine());
  let unhandled = 0;
  process.on("unhandledRejection", (error) => {
    if (unhandled++ < 5) console.error("unhandled rejection (a hollow kubelet would have crashed):", error);
  });
  const results: Result[] = [];
  for (const n of sizes) {
    const r = await measure(n);
    results.push(r);
    console.log(`${n} nodes:`, JSON.stringify({ ...r, putToRunning: undefined, statusToEtcd: undefined }));
  }
  writeFileSync(arg("--svg", join(import.meta.dir, "fleet-scale.svg")), scaleSvg(results));
  console.log(table(results));
  process.exit(0);
}
