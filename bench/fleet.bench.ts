// Fleet-mode benchmark (issue 10): etcd writes and kubelet CPU with 50 pods whose readiness flips
// every few seconds, fleet mode on (--register_node=true) against the same pods with it off, same run,
// same daemon, same etcd. Also the writes over an idle window (the pods' probes steady).
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/fleet.bench.ts [--seconds 60] [--pods 50]
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { createEtcdClient } from "../lib/sources/etcd-client.ts";
import { startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { baseFlags, removeDir, removePods, tempDir, waitFor } from "../test/e2e/harness.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const arg = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(name) + 1]) || fallback;
const seconds = arg("--seconds", 60);
const podCount = arg("--pods", 50);

const etcd = await startEtcdCluster(1);
const client = createEtcdClient({ hosts: etcd.endpoints, dialTimeout: 2000 });
const revision = async () => (await client.get("/")).revision;
const names = Array.from({ length: podCount }, (_, i) => `bench-fleet-${i}`);

/** A pod whose readiness flips every 4 s: its status changes ~every 4 s for as long as it runs. */
const flapping = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "app",
        image: services.busybox,
        command: ["sh", "-c", "while true; do touch /tmp/ready; sleep 4; rm -f /tmp/ready; sleep 4; done"],
        readinessProbe: { exec: { command: ["cat", "/tmp/ready"] }, periodSeconds: 2 },
      },
    ],
  },
});

const cpuSeconds = (child: ChildProcess) => {
  const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

async function measure(registerNode: boolean) {
  const manifests = tempDir("bench-fleet");
  const root = tempDir("bench-fleet-root");
  writeFileSync(join(manifests, "pods.json"), JSON.stringify({ kind: "List", items: names.map(flapping) }));
  const kubelet = spawn(
    KUBELET_BINARY,
    [
      "run",
      "-c",
      manifests,
      ...baseFlags(services!, root),
      "--port",
      "0",
      "--etcd_servers",
      etcd.endpoints[0]!,
      "--hostname_override",
      "bench-node",
      `--register_node=${registerNode}`,
    ],
    { stdio: "ignore" },
  );
  try {
    await waitFor(
      `${podCount} pods started`,
      async () => {
        const response = await fetch(`http://docker/containers/json`, {
          unix: services!.dockerHost.replace("unix://", ""),
        } as RequestInit);
        const list = (await response.json()) as Array<{ Names: string[] }>;
        return list.filter((c) => c.Names[0]!.startsWith("/k8s_app_bench-fleet-")).length === podCount;
      },
      300_000,
    );
    await new Promise((r) => setTimeout(r, 10_000)); // every pod into its flapping rhythm
    const [rev0, cpu0] = [await revision(), cpuSeconds(kubelet)];
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const [rev1, cpu1] = [await revision(), cpuSeconds(kubelet)];
    return { writesPerSecond: (rev1 - rev0) / seconds, cpuPercent: ((cpu1 - cpu0) / seconds) * 100 };
  } finally {
    kubelet.kill("SIGKILL");
    removePods(services!, ...names);
    removeDir(manifests);
    removeDir(root);
  }
}

const off = await measure(false);
const on = await measure(true);
client.close();
await etcd.stop();

console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; ${podCount} pods, readiness flipping every 4 s, ${seconds} s windows`,
);
console.log(["measure", "--register_node=true", "--register_node=false", "difference"].join(" | "));
console.log(
  [
    "etcd writes/s",
    on.writesPerSecond.toFixed(2),
    off.writesPerSecond.toFixed(2),
    (on.writesPerSecond - off.writesPerSecond).toFixed(2),
  ].join(" | "),
);
console.log(
  [
    "kubelet CPU %",
    on.cpuPercent.toFixed(1),
    off.cpuPercent.toFixed(1),
    `${(on.cpuPercent / off.cpuPercent).toFixed(2)}×`,
  ].join(" | "),
);
