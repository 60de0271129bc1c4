// The Kubernetes API's cost (issue 36): `kubectl get pods` with 110 pods (the default --max_pods) against GET /pods
// in the same run, each as a client process (kubectl; curl for /pods and for the API's Table alone), wall time and
// the kubelet's CPU per call; then the kubelet's idle CPU with no client and with one `kubectl get pods -w` open.
// The compiled kubelet runs the in-memory runtime (--container_runtime fake), so only the server's work is measured.
// Usage: bun build.ts && bun bench/kubeapi-get-pods.bench.ts [--calls 20] [--window 30]
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KUBELET_BINARY } from "../lib/testing/services.ts";
import { freePort, removeDir, tempDir } from "../test/e2e/harness.ts";
import { cpuSeconds, machine, percentile, until } from "./support.ts";

const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback;
const CALLS = arg("--calls", 20);
const WINDOW_S = arg("--window", 30);
const PODS = 110;
const KUBECTL = "/usr/bin/kubectl";

const dir = tempDir("kubeapi-bench");
const manifests = join(dir, "manifests");
mkdirSync(manifests);
const cert = join(dir, "serving.crt");
const key = join(dir, "serving.key");
spawnSync(
  "openssl",
  ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"].concat([
    "-subj",
    "/CN=127.0.0.1",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
  ]),
);
for (let i = 0; i < PODS; i++)
  writeFileSync(
    join(manifests, `p${i}.yaml`),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: bench-${i}, labels: {app: bench}}\nspec:\n  containers:\n    - {name: app, image: busybox, command: [sleep, "3600"]}\n    - {name: side, image: busybox}\n`,
  );
const port = await freePort();
const rootDir = join(dir, "root");
const kubelet = spawn(
  KUBELET_BINARY,
  ["run", "-c", manifests, "--root_dir", rootDir, "--container_runtime", "fake", "--cgroups_per_qos=false"].concat(
    ["--enforce_node_allocatable", "none", "--healthz_port", "0", "--port", String(port), "--max_pods", "110"],
    ["--tls_cert_file", cert, "--tls_private_key_file", key],
  ),
  { stdio: "ignore" },
);
const pid = kubelet.pid!;
const server = `https://127.0.0.1:${port}`;
const tokenFile = join(rootDir, "admin-token");
await until(() => Bun.file(tokenFile).exists(), 30_000);
const token = (await Bun.file(tokenFile).text()).trim();
const kubeconfig = join(dir, "kubeconfig");
writeFileSync(
  kubeconfig,
  JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "n", cluster: { server, "certificate-authority": cert } }],
    users: [{ name: "a", user: { token } }],
    contexts: [{ name: "n", context: { cluster: "n", user: "a" } }],
    "current-context": "n",
  }),
);
const kubectlArgs = ["--kubeconfig", kubeconfig, "--cache-dir", join(dir, "kube-cache")];
const curl = (path: string, accept = "application/json") => [
  "curl",
  "-sf",
  "--cacert",
  cert,
  "-H",
  `Authorization: Bearer ${token}`,
  "-H",
  `Accept: ${accept}`,
  "-o",
  "/dev/null",
  `${server}${path}`,
];
const running = () =>
  (
    spawnSync(KUBECTL, [...kubectlArgs, "get", "pods", "--no-headers"], { encoding: "utf8" }).stdout.match(
      /Running/g,
    ) ?? []
  ).length;
await until(() => running() === PODS, 120_000);
await Bun.sleep(3000);

/** Wall ms per call and the kubelet's CPU ms per call, over CALLS runs of `command` (after one warm-up). */
function measure(command: string[]): { p50: number; p95: number; cpuMs: number } {
  spawnSync(command[0]!, command.slice(1));
  const walls: number[] = [];
  const before = cpuSeconds(pid);
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    const r = spawnSync(command[0]!, command.slice(1), { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${command.join(" ")}: exit ${r.status}: ${r.stderr}`);
    walls.push(performance.now() - start);
  }
  return { p50: percentile(walls, 50), p95: percentile(walls, 95), cpuMs: ((cpuSeconds(pid) - before) * 1000) / CALLS };
}

const kubectlGet = measure([KUBECTL, ...kubectlArgs, "get", "pods"]);
const curlPods = measure(curl("/pods"));
const curlTable = measure(curl("/api/v1/namespaces/default/pods", "application/json;as=Table;v=v1;g=meta.k8s.io"));
const curlList = measure(curl("/api/v1/pods"));

async function idle(): Promise<number> {
  await Bun.sleep(5000);
  const before = cpuSeconds(pid);
  await Bun.sleep(WINDOW_S * 1000);
  return ((cpuSeconds(pid) - before) / WINDOW_S) * 100;
}
const idleAlone = await idle();
const watcher = spawn(KUBECTL, [...kubectlArgs, "get", "pods", "-w"], { stdio: "ignore" });
const idleWatched = await idle();
watcher.kill();

const row = (what: string, m: { p50: number; p95: number; cpuMs: number }) =>
  `${what}: wall p50 ${m.p50.toFixed(0)} ms, p95 ${m.p95.toFixed(0)} ms; kubelet CPU ${m.cpuMs.toFixed(1)} ms per call`;
console.log(`${machine()}; ${PODS} pods (2 containers each) on the in-memory runtime, ${CALLS} calls each`);
console.log(`${spawnSync(KUBECTL, ["version", "--client"], { encoding: "utf8" }).stdout.split("\n")[0]} (${KUBECTL})`);
console.log(row("kubectl get pods (Table, discovery cached)", kubectlGet));
console.log(row("curl GET /pods (baseline)", curlPods));
console.log(row("curl GET /api/v1/namespaces/default/pods as Table", curlTable));
console.log(row("curl GET /api/v1/pods (PodList)", curlList));
console.log(
  `kubectl get pods / GET /pods: ${(kubectlGet.p50 / curlPods.p50).toFixed(2)}× wall (kubectl's own start-up included), ${(kubectlGet.cpuMs / curlPods.cpuMs).toFixed(2)}× kubelet CPU`,
);
console.log(
  `idle over ${WINDOW_S} s: ${idleAlone.toFixed(2)} % of a core with no client; ${idleWatched.toFixed(2)} % with one kubectl get pods -w open`,
);
kubelet.kill("SIGKILL");
removeDir(dir);
