// Fleet-mode failover over TLS against plain HTTP (issue 31): a kubelet's node lease on a three-member etcd
// while each member in turn is killed, with TLS, client certificates and auth (a user limited to the node's
// keys) against plain HTTP, same run. Reported per kill: the lowest TTL the lease fell to (how close the node
// came to vanishing) and the time from the kill to the first renewal seen.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/fleet-failover.bench.ts
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { fleetKeys } from "../lib/node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClientOptions } from "../lib/sources/etcd-client.ts";
import { addNodeUser, enableAuth, type EtcdCluster, startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { KUBELET_BINARY, testServices } from "../lib/testing/services.ts";
import { baseFlags, removeDir, tempDir, waitFor } from "../test/e2e/harness.ts";

const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");
const LEASE_SECONDS = 6;
const node = "bench-failover";

async function measure(tls: boolean) {
  const dir = tempDir("bench-failover");
  let cluster: EtcdCluster;
  let admin: EtcdClientOptions;
  let etcdFlags: string[];
  if (tls) {
    const secure = await startEtcdCluster(3, { tls: true });
    enableAuth(secure);
    const user = addNodeUser(secure, node);
    const config = join(dir, "etcd.yaml");
    writeFileSync(config, JSON.stringify({ endpoints: secure.endpoints, caFile: secure.ca.caFile, ...user }));
    [cluster, etcdFlags] = [secure, ["--etcd_config", config]];
    admin = { endpoints: secure.endpoints, tls: { caFile: secure.ca.caFile, ...secure.root } };
  } else {
    cluster = await startEtcdCluster(3);
    etcdFlags = ["--etcd_servers", cluster.endpoints.join(",")];
    admin = { endpoints: cluster.endpoints };
  }
  const client = createEtcdClient({ ...admin, dialTimeoutMs: 1000 });
  const kubelet = spawn(
    KUBELET_BINARY,
    [
      "run",
      ...baseFlags(services!, join(dir, "root")),
      ...["--port", "0", ...etcdFlags, "--hostname_override", node],
      ...["--node_lease_duration", `${LEASE_SECONDS}s`, "--node_status_update_frequency", "1s"],
    ],
    { stdio: "ignore" },
  );
  const kills: Array<{ lowestTtl: number; firstRenewalMs: number }> = [];
  try {
    const lease = await waitFor("the node's lease", async () => {
      const entry = (await client.get(fleetKeys.node(node)).catch(() => undefined))?.entry;
      return entry && entry.lease !== "0" ? entry.lease : undefined;
    });
    for (let member = 0; member < 3; member++) {
      await new Promise((r) => setTimeout(r, 2000)); // steady renewals first
      const killedAt = Date.now();
      await cluster.kill(member);
      let lowest = LEASE_SECONDS;
      let previous = LEASE_SECONDS;
      let firstRenewalMs = Number.NaN;
      while (Date.now() - killedAt < 2 * LEASE_SECONDS * 1000) {
        const ttl = (await client.leaseTimeToLive(lease).catch(() => undefined))?.ttl;
        if (ttl !== undefined) {
          if (ttl > previous && Number.isNaN(firstRenewalMs)) firstRenewalMs = Date.now() - killedAt;
          lowest = Math.min(lowest, ttl);
          previous = ttl;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      kills.push({ lowestTtl: lowest, firstRenewalMs });
      await cluster.restart(member);
    }
  } finally {
    kubelet.kill("SIGKILL");
    client.close();
    await cluster.stop();
    removeDir(dir);
  }
  return kills;
}

const plain = await measure(false);
const secure = await measure(true);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(
      " ",
    )}; lease ${LEASE_SECONDS} s renewed every 1 s; each of 3 members killed in turn for ${2 * LEASE_SECONDS} s`,
);
console.log("measure | plain HTTP | TLS + client certificates + auth (node-limited user)");
const row = (what: string, pick: (k: { lowestTtl: number; firstRenewalMs: number }) => string) =>
  console.log([what, plain.map(pick).join(", "), secure.map(pick).join(", ")].join(" | "));
row("lowest lease TTL left, s (per kill)", (k) => String(k.lowestTtl));
row("kill → first renewal seen, ms (per kill)", (k) => String(k.firstRenewalMs));
