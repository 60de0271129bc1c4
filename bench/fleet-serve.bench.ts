// Fleet serve at scale (issue 40 item 4): `kubectl get pods -A` through the compiled `kubelet fleet serve` over
// N nodes × 30 pods on a three-member etcd on loopback, against `kubelet fleet pods -o json` over the same etcd in
// the same run (the baseline: the fleet view the CLI reads). The records are written as fleet mode writes them (a
// node record on a lease, each pod's placed manifest and its reported status, of the size hollow nodes write),
// so only fleet serve's read path is measured, not the nodes'. Wall time per call (kubectl and the CLI are client
// processes) with each client's CPU and fleet serve's, paged (kubectl's 500-row default) and in one request, against
// a raw `etcdctl get --prefix` of the same keys; fleet serve's start (its first list of the fleet) and its peak RSS.
// Usage: bun build.ts && bun bench/fleet-serve.bench.ts [--nodes 1000] [--pods 30] [--calls 5]
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fleetKeys } from "../lib/node/status/fleet-reporter.ts";
import { createEtcdClient } from "../lib/sources/etcd-client.ts";
import { etcdPodKey } from "../lib/sources/etcd.ts";
import { createTestCa } from "../lib/testing/certificates.ts";
import { writeKubeconfig } from "../lib/testing/kubeconfig.ts";
import { startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { KUBELET_BINARY } from "../lib/testing/services.ts";
import { freePort, removeDir, tempDir } from "../test/e2e/harness.ts";
import { manifest, node, status } from "./fleet-records.ts";
import { cpuSeconds, machine, memory, percentile, until } from "./support.ts";

const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const NODES = arg("--nodes", 1000);
const PODS = arg("--pods", 30);
const CALLS = arg("--calls", 5);
const KUBECTL = "/usr/bin/kubectl";

const dir = tempDir("fleet-serve-bench");
const cluster = await startEtcdCluster(3);
const client = createEtcdClient({ endpoints: cluster.endpoints });
const writeStart = performance.now();
const lease = await client.grantLease(3600);
for (let n = 0; n < NODES; n++) {
  const name = `hollow-${n}`;
  await client.apply([{ key: fleetKeys.node(name), value: JSON.stringify(node(name)) }], lease);
  const changes = [];
  for (let p = 0; p < PODS; p++) {
    const pod = `pod-${p}`;
    changes.push({ key: etcdPodKey(name, "default", pod), value: JSON.stringify(manifest(pod)) });
    changes.push({ key: fleetKeys.status(name, "default", pod), value: JSON.stringify(status(n * PODS + p)) });
  }
  await client.apply(changes, lease);
}
console.log(`wrote ${NODES} nodes × ${PODS} pods in ${((performance.now() - writeStart) / 1000).toFixed(1)} s`);

const ca = createTestCa(dir, "bench-ca");
const serving = ca.server("fleet-serve", { ips: ["127.0.0.1"], dns: ["localhost"] });
const tokens = join(dir, "tokens.csv");
writeFileSync(tokens, 'bench-token-0123456789,admin,admin,"system:masters"\n');
/** The compiled fleet serve with `extra` flags, listening, and a kubeconfig for it. */
async function startServe(name: string, extra: string[]) {
  const port = await freePort();
  const proc = spawn(KUBELET_BINARY, [
    ...["fleet", "serve", "--etcd-servers", cluster.endpoints.join(","), "--secure-port", String(port)],
    ...["--tls-cert-file", serving.certFile, "--tls-private-key-file", serving.keyFile],
    ...["--token-auth-file", tokens, "--authorization-mode", "AlwaysAllow", ...extra],
  ]);
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  await until(() => output.includes("the fleet's API on"), 300_000);
  const kubeconfig = join(dir, `${name}.kubeconfig`);
  writeKubeconfig(kubeconfig, `https://127.0.0.1:${port}`, ca.caFile, "bench-token-0123456789");
  return { proc, port, kubeconfig };
}
const started = performance.now();
let server = await startServe("default", []);
const startSeconds = (performance.now() - started) / 1000;
const { port, kubeconfig } = server;

interface Timed {
  walls: number[];
  /** The client process's own CPU (user + system), seconds, per call. */
  cpus: number[];
  /** fleet serve's CPU over all the calls, seconds. */
  serverCpu: number;
}

/** Wall and CPU seconds of each of CALLS runs of `command` (under /usr/bin/time), after checking the first one's output. */
function timed(command: string[], check: (out: string) => void): Timed {
  const walls: number[] = [];
  const cpus: number[] = [];
  const times = join(dir, "time.txt");
  const serverBefore = cpuSeconds(server.proc.pid!);
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    const run = spawnSync("/usr/bin/time", ["-f", "%U %S", "-o", times, ...command], {
      encoding: "utf8",
      maxBuffer: 1 << 30,
      timeout: 120_000,
    });
    walls.push((performance.now() - t) / 1000);
    if (run.status !== 0) throw new Error(`${command.join(" ")} exited ${run.status}: ${run.stderr}`);
    const [user, sys] = readFileSync(times, "utf8").trim().split("\n").at(-1)!.split(" ").map(Number);
    cpus.push(user! + sys!);
    if (i === 0) check(run.stdout);
  }
  return { walls, cpus, serverCpu: cpuSeconds(server.proc.pid!) - serverBefore };
}
const rows = (out: string) => out.trimEnd().split("\n").length - 1;
const expectRows = (out: string) => {
  if (rows(out) !== NODES * PODS) throw new Error(`expected ${NODES * PODS} rows, got ${rows(out)}`);
  if (new Set(out.trimEnd().split("\n")).size !== NODES * PODS + 1) throw new Error("a pod was printed twice");
};
const get = [KUBECTL, "--kubeconfig", kubeconfig, "get", "pods", "-A"];
// kubectl's default asks for 500-row pages; fleet serve answers up to --max-unpaged-list pods whole.
const kubectl = timed(get, expectRows);
const wide = timed([...get, "-o", "wide"], expectRows);
// The server's part alone: the whole Table in one request, read by curl and not printed.
const TABLE_ACCEPT =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const curl = timed(
  [
    ...["curl", "-sf", "-o", "/dev/null", "--cacert", ca.caFile, "-H", "Authorization: Bearer bench-token-0123456789"],
    ...["-H", `Accept: ${TABLE_ACCEPT}`, `https://127.0.0.1:${port}/api/v1/pods`],
  ],
  () => {},
);
// Baselines in the same run: a raw range read of the same keys (etcd's own client, printing them) and the CLI's view.
const etcdctl = timed(
  ["etcdctl", "--endpoints", cluster.endpoints.join(","), "get", "--prefix", fleetKeys.hosts],
  (out) => {
    if (out.length < NODES * PODS * 100) throw new Error(`etcdctl printed only ${out.length} bytes`);
  },
);
const fleetPods = timed(
  [KUBELET_BINARY, "fleet", "pods", "-o", "json", "--etcd-servers", cluster.endpoints.join(",")],
  (out) => {
    const n = (JSON.parse(out) as { pods: unknown[] }).pods.length;
    if (n !== NODES * PODS) throw new Error(`fleet pods: expected ${NODES * PODS}, got ${n}`);
  },
);
const { peakMb } = memory(server.proc.pid!);
server.proc.kill();
// Every list paged at kubectl's 500 rows: what kubectl's own rate limit makes of 60 requests.
server = await startServe("paged", ["--max-unpaged-list", "0"]);
const paged = timed([KUBECTL, "--kubeconfig", server.kubeconfig, "get", "pods", "-A"], expectRows);
server.proc.kill();

const fmt = ({ walls, cpus, serverCpu }: Timed) =>
  `wall first ${walls[0]!.toFixed(2)} s, median ${percentile(walls, 50).toFixed(2)} s, max ${Math.max(...walls).toFixed(2)} s; ` +
  `client CPU median ${percentile(cpus, 50).toFixed(2)} s; fleet serve CPU per call ${(serverCpu / CALLS).toFixed(2)} s`;
console.log(machine());
console.log(
  `fleet serve start (first list of ${NODES * PODS} pods): ${startSeconds.toFixed(2)} s; peak RSS ${peakMb} MiB`,
);
console.log(`kubectl get pods -A (${CALLS} calls; answered whole): ${fmt(kubectl)}`);
console.log(`kubectl get pods -A -o wide: ${fmt(wide)}`);
console.log(`kubectl get pods -A, fleet serve --max-unpaged-list 0 (60 pages of 500): ${fmt(paged)}`);
console.log(`the whole Table alone (curl, one request): ${fmt(curl)}`);
console.log(`etcdctl get --prefix ${fleetKeys.hosts} (baseline: raw range read): ${fmt(etcdctl)}`);
console.log(`kubelet fleet pods -o json (baseline): ${fmt(fleetPods)}`);
const median = (t: Timed) => percentile(t.walls, 50);
console.log(
  `ratios of medians: get pods -A / etcdctl ${(median(kubectl) / median(etcdctl)).toFixed(2)}, ` +
    `/ fleet pods ${(median(kubectl) / median(fleetPods)).toFixed(2)}, paged / whole ${(median(paged) / median(kubectl)).toFixed(2)}`,
);

client.close();
await cluster.stop();
removeDir(dir);
