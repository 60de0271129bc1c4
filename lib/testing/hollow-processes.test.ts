// Hollow nodes over several processes, on a real etcd: every node of every start registers, and stop
// ends the children.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClient } from "../sources/etcd-client.ts";
import { startEtcdCluster, type EtcdCluster } from "./etcd-cluster.ts";
import { startHollowProcesses } from "./hollow-processes.ts";
import { describeWithServices } from "./services.ts";

describeWithServices("hollow nodes in several processes", () => {
  let cluster: EtcdCluster;
  let client: EtcdClient;
  const dir = mkdtempSync(join(tmpdir(), "kubelet-hollow-processes-"));
  beforeAll(async () => {
    cluster = await startEtcdCluster(1);
    client = createEtcdClient({ endpoints: cluster.endpoints });
  });
  afterAll(async () => {
    client?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("nodes started in two batches over two processes all register, and stop ends both processes", async () => {
    const fleet = startHollowProcesses({ endpoints: cluster.endpoints, rootDir: dir, prefix: "proc-", processes: 2 });
    expect(new Set(fleet.pids).size).toBe(2);
    await fleet.start(0, 3);
    await fleet.start(3, 2);
    const registered = async () =>
      (await client.list(fleetKeys.nodes)).entries.map((e) => e.key.slice(fleetKeys.nodes.length)).sort();
    for (let i = 0; i < 200 && (await registered()).length < 5; i++) await Bun.sleep(100);
    expect(await registered()).toEqual(["proc-0", "proc-1", "proc-2", "proc-3", "proc-4"]);
    await fleet.stop();
    for (const pid of fleet.pids) expect(() => process.kill(pid, 0)).toThrow();
  }, 60_000);
});
