// Fleet serve at scale (issue 40 item 4): `kubectl get pods -A` through the compiled `kubelet fleet serve` over
// N nodes × 30 pods on a three-member etcd on loopback, against `kubelet fleet pods -o json` over the same etcd in
// the same run (the baseline: the fleet view the CLI reads). The records are written as fleet mode writes them (a
// node record on a lease, each pod's placed manifest and its reported status, of the size hollow nodes write),
// so only fleet serve's read path is measured, not the nodes'. Wall time per call (kubectl and the CLI are client
// processes), fleet serve's start (its first list of the fleet) and its peak RSS.
// Usage: bun build.ts && bun bench/fleet-serve.bench.ts [--nodes 1000] [--pods 30] [--calls 5]
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fleetKeys } from "../lib/node/status/fleet-reporter.ts";
import { createEtcdClient } from "../lib/sources/etcd-client.ts";
import { etcdPodKey } from "../lib/sources/etcd.ts";
import { createTestCa } from "../lib/testing/certificates.ts";
import { writeKubeconfig } from "../lib/testing/kubeconfig.ts";
import { startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { KUBELET_BINARY } from "../lib/testing/services.ts";
import { freePort, removeDir, tempDir } from "../test/e2e/harness.ts";
import { machine, memory, percentile, until } from "./support.ts";

const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const NODES = arg("--nodes", 1000);
const PODS = arg("--pods", 30);
const CALLS = arg("--calls", 5);
const KUBECTL = "/usr/bin/kubectl";

const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
const node = (name: string) => ({
  metadata: { name, labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux" } },
  spec: {},
  status: {
    capacity: { cpu: "2", memory: "24Gi", pods: "110" },
    allocatable: { cpu: "2", memory: "23Gi", pods: "110" },
    conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" }],
    addresses: [
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: { kubeletVersion: "v1.32.0+kubelet", containerRuntimeVersion: "fake://0.1", osImage: "Debian" },
  },
});
const manifest = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "default", annotations: { "kubelet.io/manifest-hash": "0123456789abcdef" } },
  spec: { containers: [{ name: "app", image: "local/busybox:stable", env: [{ name: "GEN", value: "1" }] }] },
});
const status = (i: number) => ({
  phase: "Running",
  conditions: ["PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"].map((type) => ({
    type,
    status: "True",
    lastTransitionTime: now,
  })),
  hostIP: "127.0.0.1",
  podIP: `10.0.${i >> 8}.${i & 255}`,
  podIPs: [{ ip: `10.0.${i >> 8}.${i & 255}` }],
  startTime: now,
  qosClass: "BestEffort",
  containerStatuses: [
    {
      name: "app",
      image: "local/busybox:stable",
      imageID: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      containerID: `fake://${i.toString(16).padStart(64, "0")}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    },
  ],
});

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
const port = await freePort();
const started = performance.now();
const serve = spawn(KUBELET_BINARY, [
  ...["fleet", "serve", "--etcd-servers", cluster.endpoints.join(","), "--secure-port", String(port)],
  ...["--tls-cert-file", serving.certFile, "--tls-private-key-file", serving.keyFile],
  ...["--token-auth-file", tokens, "--authorization-mode", "AlwaysAllow"],
]);
let output = "";
serve.stdout.on("data", (d) => (output += d));
serve.stderr.on("data", (d) => (output += d));
await until(() => output.includes("the fleet's API on"), 300_000);
const startSeconds = (performance.now() - started) / 1000;
const kubeconfig = join(dir, "kubeconfig");
writeKubeconfig(kubeconfig, `https://127.0.0.1:${port}`, ca.caFile, "bench-token-0123456789");

/** Wall seconds of each of CALLS runs of `command`, after checking the first one's output. */
function timed(command: string[], check: (out: string) => void): number[] {
  const walls: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    const run = spawnSync(command[0]!, command.slice(1), { encoding: "utf8", maxBuffer: 1 << 30, timeout: 120_000 });
    walls.push((performance.now() - t) / 1000);
    if (run.status !== 0) throw new Error(`${command.join(" ")} exited ${run.status}: ${run.stderr}`);
    if (i === 0) check(run.stdout);
  }
  return walls;
}
const rows = (out: string) => out.trimEnd().split("\n").length - 1;
const expectRows = (out: string) => {
  if (rows(out) !== NODES * PODS) throw new Error(`expected ${NODES * PODS} rows, got ${rows(out)}`);
};
const kubectl = timed([KUBECTL, "--kubeconfig", kubeconfig, "get", "pods", "-A"], expectRows);
const wide = timed([KUBECTL, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "wide"], expectRows);
// The server's part alone: the same Table request kubectl sends, read by curl and not printed.
const TABLE_ACCEPT =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const curl = timed(
  [
    ...["curl", "-sf", "-o", "/dev/null", "--cacert", ca.caFile, "-H", "Authorization: Bearer bench-token-0123456789"],
    ...["-H", `Accept: ${TABLE_ACCEPT}`, `https://127.0.0.1:${port}/api/v1/pods?limit=500`],
  ],
  () => {},
);
const fleetPods = timed(
  [KUBELET_BINARY, "fleet", "pods", "-o", "json", "--etcd-servers", cluster.endpoints.join(",")],
  (out) => {
    const n = (JSON.parse(out) as { pods: unknown[] }).pods.length;
    if (n !== NODES * PODS) throw new Error(`fleet pods: expected ${NODES * PODS}, got ${n}`);
  },
);
const { peakMb } = memory(serve.pid!);

const fmt = (walls: number[]) =>
  `first ${walls[0]!.toFixed(2)} s, median ${percentile(walls, 50).toFixed(2)} s, max ${Math.max(...walls).toFixed(2)} s`;
console.log(machine());
console.log(
  `fleet serve start (first list of ${NODES * PODS} pods): ${startSeconds.toFixed(2)} s; peak RSS ${peakMb} MiB`,
);
console.log(`kubectl get pods -A through fleet serve (${CALLS} calls): ${fmt(kubectl)}`);
console.log(`kubectl get pods -A -o wide: ${fmt(wide)}`);
console.log(`the Table alone (curl, kubectl's request): ${fmt(curl)}`);
console.log(`kubelet fleet pods -o json (baseline): ${fmt(fleetPods)}`);
console.log(
  `ratio get pods -A / fleet pods (medians): ${(percentile(kubectl, 50) / percentile(fleetPods, 50)).toFixed(2)}`,
);

serve.kill();
client.close();
await cluster.stop();
removeDir(dir);
