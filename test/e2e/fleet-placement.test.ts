// Placement from the CLI and hollow nodes, end to end on a real etcd: the compiled `kubelet fleet
// apply|delete|describe` writing, hollow kubelets (the real kubelet over the in-memory runtime, many
// in this process) running what it placed and reporting back.
import { afterAll, beforeAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1PodStatus } from "../../lib/api/types.ts";
import { fleetApply, placementKeys, type PlacementOptions } from "../../lib/cli/fleet-apply.ts";
import { fleetKeys } from "../../lib/node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClient } from "../../lib/sources/etcd-client.ts";
import { etcdPodKey } from "../../lib/sources/etcd.ts";
import { startEtcdCluster, type EtcdCluster } from "../../lib/testing/etcd-cluster.ts";
import { startHollowFleet, type HollowFleet } from "../../lib/testing/hollow-fleet.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { test, waitFor } from "./harness-kubelet.ts";
import { removeDir, runBinary, tempDir } from "./harness.ts";

const FAST = { nodeStatusUpdateFrequency: "1s", syncFrequency: "2s", nodeLeaseDuration: "10s" };

/** A one-container pod manifest file in `dir`. */
function manifest(dir: string, name: string, image = "local/busybox:stable"): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `{apiVersion: v1, kind: Pod, metadata: {name: ${name}}, spec: {containers: [{name: app, image: "${image}"}]}}\n`,
  );
  return file;
}

/** Shared by both suites: an etcd of their own, the CLI pointed at it, and pod statuses read back. */
function fleetOnEtcd() {
  const state = {} as { cluster: EtcdCluster; client: EtcdClient };
  beforeAll(async () => {
    state.cluster = await startEtcdCluster(1);
    state.client = createEtcdClient({ endpoints: state.cluster.endpoints });
  });
  afterAll(async () => {
    state.client?.close();
    await state.cluster?.stop();
  });
  const cli = (...args: string[]) => runBinary(["fleet", ...args, "--etcd_servers", state.cluster.endpoints[0]!]);
  const phase = async (node: string, pod: string) => {
    const { entry } = await state.client.get(fleetKeys.status(node, "default", pod));
    return entry ? ((JSON.parse(entry.value) as V1PodStatus).phase ?? "") : undefined;
  };
  const running = (pod: string, ...nodes: string[]) =>
    waitFor(`${pod} running on ${nodes.join(", ")}`, async () =>
      (await Promise.all(nodes.map((n) => phase(n, pod)))).every((p) => p === "Running"),
    );
  return { state, cli, phase, running };
}

describeWithServices("kubelet fleet apply, delete and describe on hollow nodes", () => {
  const { state, cli, phase, running } = fleetOnEtcd();
  const dir = tempDir("fleet-placement");
  let fleet: HollowFleet;
  let late: HollowFleet | undefined;
  beforeAll(async () => {
    fleet = await startHollowFleet({
      endpoints: state.cluster.endpoints,
      rootDir: dir,
      prefix: "place-",
      count: 3,
      labels: (i): Record<string, string> => (i === 1 ? {} : { gpu: "yes" }),
      flags: FAST,
    });
  });
  afterAll(async () => {
    await Promise.all([fleet?.stop(), late?.stop()]);
    removeDir(dir);
  });

  test("apply --node runs the pod on that node, and applying it to another node moves it there", async () => {
    const file = manifest(dir, "web");
    const first = cli("apply", "-f", file, "--node", "place-0");
    expect(first.stdout).toMatch(/^pod\/default\/web created on place-0, manifest [0-9a-f]{16}\n$/);
    await running("web", "place-0");
    const moved = cli("apply", "-f", file, "--node", "place-1");
    expect(moved.stdout).toContain("pod/default/web configured on place-1 (was on place-0)");
    await running("web", "place-1");
    await waitFor("web's status gone from place-0", async () => (await phase("place-0", "web")) === undefined);
    expect((await state.client.get(etcdPodKey("place-0", "default", "web"))).entry).toBeUndefined();
  });

  test("apply --selector runs the pod on every node with the label; describe shows each node running the placed manifest", async () => {
    const applied = cli("apply", "-f", manifest(dir, "agent"), "--selector", "gpu=yes");
    expect(applied.code).toBe(0);
    const hash = applied.stdout.match(/manifest ([0-9a-f]+)/)![1]!;
    await running("agent", "place-0", "place-2");
    const described = await waitFor("describe to show the rollout done", () => {
      const out = cli("describe", "pod", "agent").stdout;
      return out.includes("Rollout:   2/2 nodes run this manifest") ? out : undefined;
    });
    expect(described).toContain("Placed:    on every node with gpu=yes");
    expect(described.match(/^place-\d/gm)).toEqual(["place-0", "place-2"]);
    expect(described).toContain(`place-0   ${hash}   ${hash}   yes       Running`);
    const node = cli("describe", "node", "place-1");
    expect(node.stdout).toContain("default/web   node");
    expect(node.stdout).not.toContain("agent");
  });

  test("apply --all-nodes reaches a node that joins later, and delete removes the pod from every node", async () => {
    expect(cli("apply", "-f", manifest(dir, "everywhere"), "--all-nodes").code).toBe(0);
    await running("everywhere", "place-0", "place-1", "place-2");
    late = await startHollowFleet({
      endpoints: state.cluster.endpoints,
      rootDir: dir,
      prefix: "place-",
      first: 3,
      count: 1,
      flags: FAST,
    });
    await running("everywhere", "place-3");
    const deleted = cli("delete", "pod", "everywhere");
    expect(deleted.stdout).toBe("pod/default/everywhere deleted on every node\n");
    await waitFor("everywhere's statuses gone", async () =>
      (await Promise.all(["place-0", "place-1", "place-2", "place-3"].map((n) => phase(n, "everywhere")))).every(
        (p) => p === undefined,
      ),
    );
    expect(cli("describe", "pod", "everywhere").code).toBe(1);
    const again = cli("delete", "pod", "everywhere");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no placement recorded for pod default/everywhere");
  });

  test("two applies moving one pod at once leave it placed and running on one node: the one that wrote second read again", async () => {
    const file = manifest(dir, "raced");
    expect(cli("apply", "-f", file, "--node", "place-0").code).toBe(0);
    // This apply reads the placement (on place-0); the binary moves the pod to place-2 before this one writes.
    let rival: ReturnType<typeof cli> | undefined;
    const client: PlacementOptions["client"] = {
      async get(key) {
        const read = await state.client.get(key);
        rival ??= cli("apply", "-f", file, "--node", "place-2");
        return read;
      },
      applyIf: (expected, changes) => state.client.applyIf(expected, changes),
    };
    const out: string[] = [];
    const sink = { write: (text: string) => out.push(text) > 0 } as unknown as NodeJS.WritableStream;
    const options = { client, dryRun: false, out: sink, err: sink, allowPrivileged: false };
    expect(await fleetApply(file, { nodes: ["place-1"] }, options)).toBe(0);
    expect(rival?.stdout).toContain("pod/default/raced configured on place-2 (was on place-0)");
    expect(out.join("")).toContain("pod/default/raced configured on place-1 (was on place-2)");
    await running("raced", "place-1");
    const placed = (await state.client.list("/registry/hosts/")).entries.filter((e) =>
      e.key.endsWith("/pods/default/raced"),
    );
    expect(placed.map((e) => e.key)).toEqual([etcdPodKey("place-1", "default", "raced")]);
    await waitFor("raced's status gone from place-0 and place-2", async () =>
      (await Promise.all(["place-0", "place-2"].map((n) => phase(n, "raced")))).every((p) => p === undefined),
    );
  });

  test("an invalid manifest, a bad selector and a dry run write nothing to etcd", async () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "{apiVersion: v1, kind: Pod, metadata: {name: bad}, spec: {containers: [{name: app}]}}\n");
    const refused = cli("apply", "-f", bad, "--all-nodes");
    expect(refused.code).toBe(1);
    // The same lines as `kubelet validate`.
    expect(refused.stderr).toContain(runBinary(["validate", bad]).stdout);
    expect(refused.stderr).toContain("spec.containers[0].image: Required value");
    expect(refused.stderr).toContain("nothing written to etcd");
    const selector = cli("apply", "-f", manifest(dir, "sel"), "--selector", "gpu");
    expect(selector.code).toBe(2);
    expect(selector.stderr).toContain('--selector "gpu": expected key=value');
    const dry = cli("apply", "-f", manifest(dir, "dry"), "--node", "place-0", "--dry-run");
    expect(dry.stdout).toContain("pod/default/dry created on place-0");
    expect(dry.stdout).toContain("dry run: 2 etcd writes not made");
    for (const pod of ["bad", "sel", "dry"]) {
      expect((await state.client.get(placementKeys.placement("default", pod))).entry).toBeUndefined();
      expect((await state.client.list(`/registry/hosts/place-0/pods/default/${pod}`)).entries).toEqual([]);
      expect((await state.client.get(placementKeys.daemon("default", pod))).entry).toBeUndefined();
    }
  });
});

describeWithServices("a fleet of 50 hollow nodes on one etcd", () => {
  const { state, cli, running } = fleetOnEtcd();
  const dir = tempDir("fleet-hollow");
  afterAll(() => removeDir(dir));

  test("50 hollow kubelets in one process register, run a pod placed on all of them, and kubelet fleet lists them", async () => {
    const fleet = await startHollowFleet({
      endpoints: state.cluster.endpoints,
      rootDir: dir,
      prefix: "hollow-",
      count: 50,
      flags: FAST,
    });
    try {
      expect(cli("apply", "-f", manifest(dir, "daemon"), "--all-nodes").code).toBe(0);
      await running("daemon", ...fleet.names);
      const view = JSON.parse(cli("nodes", "-o", "json").stdout) as { nodes: Array<{ name: string; ready: string }> };
      expect(
        view.nodes
          .filter((n) => n.ready === "Ready")
          .map((n) => n.name)
          .sort(),
      ).toEqual([...fleet.names].sort());
    } finally {
      await fleet.stop();
    }
  }, 120_000);
});
