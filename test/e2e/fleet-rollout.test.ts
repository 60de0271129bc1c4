// `kubelet fleet rollout` end to end: the compiled CLI driving a rollout across three real kubelets
// (different node names on one host) on a three-member etcd, on Docker and on containerd: a rollout
// completing batch by batch, a missing image halted after its first batch and rolled back, the CLI
// killed mid-rollout then followed and resumed, a node down during the rollout that converges
// when it returns, and a --max-surge rollout that never leaves a node without a Ready copy of the pod:
// forward, undone, and killed mid-batch (its copy Ready beside the old pod) then resumed.
import { afterAll, beforeAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1PodStatus } from "../../lib/api/types.ts";
import { type RolloutState, rolloutKeys } from "../../lib/cli/fleet-rollout.ts";
import { fleetKeys } from "../../lib/node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClient, type EtcdWatch } from "../../lib/sources/etcd-client.ts";
import { startEtcdCluster, type EtcdCluster } from "../../lib/testing/etcd-cluster.ts";
import { describeOnRuntimes } from "./harness-runtimes.ts";
import { type Kubelet, KubeletProcess, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { removeDir, runBinary, tempDir } from "./harness.ts";

const NODES = 3;

describeOnRuntimes("kubelet fleet rollout across three kubelets", (services, rt) => {
  const tag = rt.kind === "docker" ? "d" : "c";
  const pod = `roll-${tag}-web`;
  const nodes = Array.from({ length: NODES }, (_, i) => `roll-${tag}-${i + 1}`);
  const roots = nodes.map((n) => tempDir(n));
  const dir = tempDir(`roll-${tag}-manifests`);
  let cluster: EtcdCluster;
  let client: EtcdClient;
  const kubelets = new Map<string, Kubelet>();

  const startNode = async (node: string, i: number) => {
    kubelets.set(
      node,
      await startKubelet([
        "run",
        ...rt.flags(roots[i]!),
        "--network_container_image",
        services.pause,
        "--etcd_servers",
        cluster.endpoints.join(","),
        "--hostname_override",
        node,
        "--sync_frequency",
        "2s",
        "--node_lease_duration",
        "6s",
        "--node_status_update_frequency",
        "1s",
      ]),
    );
  };
  beforeAll(async () => {
    cluster = await startEtcdCluster(3);
    client = createEtcdClient({ endpoints: cluster.endpoints, dialTimeoutMs: 2000 });
    await Promise.all(nodes.map(startNode));
  });
  afterAll(async () => {
    await Promise.all([...kubelets.values()].map((k) => k.stop("SIGKILL")));
    await rt.removePods(pod);
    client?.close();
    await cluster?.stop();
    [...roots, dir].forEach(removeDir);
  });

  /** The pod's manifest, its one container running `version` (an env var) from `image`. */
  const manifest = (version: string, image = services.busybox) => {
    const file = join(dir, `${version}.yaml`);
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: pod },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "app",
              image,
              command: ["sh", "-c", "exec sleep 3600"],
              env: [{ name: "VERSION", value: version }],
            },
          ],
        },
      }),
    );
    return file;
  };
  const fleet = (...args: string[]) => runBinary(["fleet", ...args, "--etcd_servers", cluster.endpoints.join(",")]);
  const rolloutArgs = (...args: string[]) => [
    "fleet",
    "rollout",
    ...args,
    "--etcd_servers",
    cluster.endpoints.join(","),
  ];
  const running = async (node: string) => {
    const [revisions, status] = await Promise.all([
      client.get(fleetKeys.revisions(node)),
      client.get(fleetKeys.status(node, "default", pod)),
    ]);
    const hash = revisions.entry
      ? (JSON.parse(revisions.entry.value) as Record<string, string>)[`default/${pod}`]
      : undefined;
    const s = status.entry ? (JSON.parse(status.entry.value) as V1PodStatus) : undefined;
    return { hash, ready: s?.conditions?.find((c) => c.type === "Ready")?.status === "True" };
  };
  const allAt = (hash: string, on = nodes) =>
    waitFor(
      `${pod} Ready at ${hash} on ${on.join(", ")}`,
      async () => (await Promise.all(on.map(running))).every((r) => r.hash === hash && r.ready),
      90_000,
    );
  const state = async () =>
    JSON.parse((await client.get(rolloutKeys.rollout("default", pod))).entry!.value) as RolloutState;
  const placedHash = (stdout: string) => /manifest ([0-9a-f]{16})/.exec(stdout)![1]!;
  /**
   * Every status record of the pod and of its surge copies (POD-HASH) written from now on, node by node: the moments a
   * node had no Ready one, and the copies' names.
   */
  const watchReady = async () => {
    const ready = new Map<string, Map<string, boolean>>(nodes.map((n) => [n, new Map([[pod, true]])]));
    const gaps: string[] = [];
    const copies = new Set<string>();
    const seen = (key: string, value?: string) => {
      const [, , , node, kind, , name] = key.split("/");
      if (kind !== "status" || !node || !name?.startsWith(pod) || !ready.has(node)) return;
      if (name !== pod) copies.add(name);
      const s = value ? (JSON.parse(value) as V1PodStatus) : undefined;
      ready.get(node)!.set(name, s?.conditions?.find((c) => c.type === "Ready")?.status === "True");
      if (![...ready.get(node)!.values()].some(Boolean)) gaps.push(`${node} at ${key}`);
    };
    const from = (await client.get("/")).revision + 1;
    const watch: EtcdWatch = await client.watch({ prefix: "/registry/hosts/" }, from, {
      put: (e) => seen(e.key, e.value),
      delete: (key) => seen(key),
    });
    return { gaps, copies, cancel: () => watch.cancel() };
  };
  /** No surge copy of the pod left in etcd, nor its containers in the runtime, nor (once stopped) its status. */
  const noCopiesLeft = async (copies: Iterable<string>) => {
    const left = await client.list("/registry/hosts/");
    expect(left.entries.filter((e) => e.key.includes(`/pods/default/${pod}-`)).map((e) => e.key)).toEqual([]);
    for (const copy of copies)
      await waitFor(
        `the copy ${copy}'s containers stopped`,
        async () => (await rt.running(copy, "app")) === undefined,
        30_000,
      );
    await waitFor(
      "the copies' status records gone",
      async () =>
        !(await client.list("/registry/hosts/")).entries.some((e) => e.key.includes(`/status/default/${pod}-`)),
      30_000,
    );
  };

  test("a changed pod is rolled out batch by batch to every node and recorded as a revision", async () => {
    const applied = fleet("apply", "-f", manifest("v1"), "--all-nodes");
    expect(applied.code).toBe(0);
    await allAt(placedHash(applied.stdout));
    const rolled = runBinary(
      rolloutArgs(pod, "-f", manifest("v2"), "--max-unavailable", "1", "--change-cause", "v2 please"),
    );
    expect({ code: rolled.code, stderr: rolled.stderr }).toEqual({ code: 0, stderr: "" });
    const lines = rolled.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      new RegExp(`^rollout of default/${pod} to revision 2 \\(manifest [0-9a-f]{16}\\) started: 3 nodes in 3 batches$`),
    );
    expect(lines.slice(1, 4).map((l) => l.replace(/ in [\d.]+s$/, ""))).toEqual([
      "batch 1/3: 1/1 nodes Ready",
      "batch 2/3: 1/1 nodes Ready",
      "batch 3/3: 1/1 nodes Ready",
    ]);
    expect(lines[4]).toStartWith(`rollout of default/${pod} complete: revision 2 on 3 nodes in 3 batches`);
    const hash = placedHash(rolled.stdout);
    await allAt(hash);
    expect(fleet("describe", "pod", pod).stdout).toContain("Rollout:   3/3 nodes run this manifest");
    const history = fleet("rollout", "history", pod).stdout;
    expect(history).toMatch(/^REVISION\s+MANIFEST\s+CREATED\s+BY\s+CHANGE-CAUSE$/m);
    expect(history).toMatch(/^1\s+[0-9a-f]{16}\s+\S+\s+kubelet fleet apply\s+<none>$/m);
    expect(history).toMatch(new RegExp(`^2 \\*\\s+${hash}\\s+\\S+\\s+\\S+@\\S+\\s+v2 please$`, "m"));
  }, 240_000);

  test("a missing image fails the first batch, which alone ever ran it, and is rolled back", async () => {
    const before = (await running(nodes[0]!)).hash!;
    // Every revisions record written during the rollout, to see which nodes ever ran the bad manifest.
    const seen: Array<{ key: string; value: string }> = [];
    const from = (await client.get("/")).revision + 1;
    const watch: EtcdWatch = await client.watch({ prefix: "/registry/hosts/" }, from, {
      put: (e) => e.key.endsWith("/revisions") && seen.push(e),
      delete: () => {},
    });
    try {
      const missing = `${services.registry}/kubelet-test/no-such-image:1`;
      const rolled = runBinary(
        rolloutArgs(pod, "-f", manifest("bad", missing), "--max-unavailable", "1", "--progress-deadline", "60"),
      );
      expect(rolled.code).toBe(3);
      expect(rolled.stdout).toMatch(/^batch 1\/3: 0\/1 nodes FAILED \((ErrImagePull|ImagePullBackOff)\)/m);
      expect(rolled.stdout).toMatch(/^rollback batch 1\/1: 1\/1 nodes Ready/m);
      expect(rolled.stdout).toMatch(
        new RegExp(`rolled back to revision 2: (ErrImagePull|ImagePullBackOff): node ${nodes[0]}`),
      );
      const bad = (await state()).updateHash;
      await allAt(before);
      const ran = new Set(
        seen.filter((e) => JSON.parse(e.value)[`default/${pod}`] === bad).map((e) => e.key.split("/")[3]),
      );
      expect([...ran]).toEqual([nodes[0]]);
      expect(fleet("rollout", "status", pod).code).toBe(3);
    } finally {
      await watch.cancel();
    }
  }, 240_000);

  test("a CLI killed mid-rollout leaves a rollout that status shows undriven and resume finishes from its batch", async () => {
    const before = (await state()).updateRevision;
    const cli = new KubeletProcess(
      rolloutArgs(pod, "-f", manifest("v3"), "--max-unavailable", "1", "--min-ready-seconds", "4"),
    );
    try {
      await waitFor(
        "the first batch of the new rollout done",
        async () => {
          const now = await state();
          return now.updateRevision > before && now.results.length >= 1 ? true : undefined;
        },
        90_000,
      );
    } finally {
      await cli.stop("SIGKILL");
    }
    const killed = await state();
    expect(killed.phase).toBe("Progressing");
    // status follows it until the dead driver's lease runs out, then says who can finish it.
    const status = fleet("rollout", "status", pod);
    expect(status.code).toBe(5);
    expect(status.stdout).toContain(
      `no command drives it (the one that did stopped): kubelet fleet rollout resume ${pod}`,
    );
    const resumed = runBinary(rolloutArgs("resume", pod));
    expect({ code: resumed.code, stderr: resumed.stderr }).toEqual({ code: 0, stderr: "" });
    expect(resumed.stdout).toMatch(
      new RegExp(`^resuming rollout of default/${pod} to revision 4 at batch [23]/3$`, "m"),
    );
    expect(resumed.stdout).toContain(`rollout of default/${pod} complete: revision 4 on 3 nodes in 3 batches`);
    expect((await state()).results.map((r) => r.index)).toEqual([1, 2, 3]);
    await allAt(killed.hash);
  }, 240_000);

  test("a node down during the rollout counts as unavailable without stalling it, and converges when it returns", async () => {
    // Placed by name now: a node down is still one of the pod's nodes (a selector's are the nodes registered).
    const moved = fleet("apply", "-f", manifest("v3"), "--node", nodes.join(","));
    expect(moved.stdout).toContain(`configured on ${nodes.join(", ")} (was on every node)`);
    await allAt(placedHash(moved.stdout));
    const down = nodes[1]!;
    await kubelets.get(down)!.stop("SIGKILL");
    await waitFor(
      `${down}'s node record gone with its lease`,
      async () => !(await client.get(fleetKeys.node(down))).entry,
      20_000,
    );
    const rolled = runBinary(
      rolloutArgs(pod, "-f", manifest("v4"), "--max-unavailable", "1", "--progress-deadline", "60"),
    );
    expect({ code: rolled.code, stderr: rolled.stderr }).toEqual({ code: 0, stderr: "" });
    expect(rolled.stdout).toMatch(
      new RegExp(`^batch 2/3: 0/1 nodes Ready, 1 unavailable \\(${down} down \\(no lease\\)\\) in [\\d.]+s$`, "m"),
    );
    const hash = placedHash(rolled.stdout);
    await allAt(hash, [nodes[0]!, nodes[2]!]);
    await startNode(down, 1);
    await allAt(hash, [down]);
  }, 240_000);
  test("with --max-surge 1 --max-unavailable 0 every node runs the new pod beside the old first: no node is ever without a Ready copy", async () => {
    await allAt((await running(nodes[0]!)).hash!);
    const { gaps, copies, cancel } = await watchReady();
    try {
      const rolled = runBinary(rolloutArgs(pod, "-f", manifest("v5"), "--max-unavailable", "0", "--max-surge", "1"));
      expect({ code: rolled.code, stderr: rolled.stderr }).toEqual({ code: 0, stderr: "" });
      expect(rolled.stdout).toContain(`rollout of default/${pod} complete: revision`);
      // The copies ran (named by the new revision's hash) and are gone, from etcd and from the runtime.
      await settledAt(placedHash(rolled.stdout), gaps, copies);
    } finally {
      await cancel();
    }
  }, 240_000);

  /** Every node Ready at `hash`, none ever without a Ready copy, the one copy name of `hash` seen and gone. */
  const settledAt = async (hash: string, gaps: string[], copies: Set<string>) => {
    await allAt(hash);
    expect(gaps).toEqual([]);
    expect([...copies]).toEqual([`${pod}-${hash.slice(0, 10)}`]);
    await noCopiesLeft(copies);
  };

  /** The pod placed on every node by name at `version`, Ready on each. */
  const placeAt = async (version: string) => {
    const applied = fleet("apply", "-f", manifest(version), "--node", nodes.join(","));
    expect(applied.code).toBe(0);
    await allAt(placedHash(applied.stdout));
    return placedHash(applied.stdout);
  };

  test("undo of a --max-surge rollout surges back as it went: copies of the old pod beside, no node ever without a Ready copy", async () => {
    const before = await placeAt("s1");
    const rolled = runBinary(rolloutArgs(pod, "-f", manifest("s2"), "--max-unavailable", "0", "--max-surge", "1"));
    expect({ code: rolled.code, stderr: rolled.stderr }).toEqual({ code: 0, stderr: "" });
    const forward = placedHash(rolled.stdout);
    await allAt(forward);
    // The forward rollout's last copy stopped before the watch begins: its statuses are not the undo's.
    await noCopiesLeft([`${pod}-${forward.slice(0, 10)}`]);
    const { gaps, copies, cancel } = await watchReady();
    try {
      // No flags: the undo takes the rollout's own --max-surge 1 --max-unavailable 0.
      const undone = runBinary(rolloutArgs("undo", pod));
      expect({ code: undone.code, stderr: undone.stderr }).toEqual({ code: 0, stderr: "" });
      expect(undone.stdout).toContain(`(manifest ${before}) started: 3 nodes in 3 batches`);
      expect(undone.stdout).toMatch(new RegExp(`rollout of default/${pod} complete: revision \\d+ on 3 nodes`));
      await settledAt(before, gaps, copies);
    } finally {
      await cancel();
    }
  }, 240_000);

  test("a surge rollout's CLI killed while a copy is Ready beside the old pod: status shows the batch, resume finishes with one pod a node", async () => {
    await placeAt("k1");
    const { gaps, copies, cancel } = await watchReady();
    try {
      // --min-ready-seconds holds the batch in its copy step with the copy Ready: the window to kill the CLI in.
      const args = [
        pod,
        "-f",
        manifest("k2"),
        "--max-unavailable",
        "0",
        "--max-surge",
        "1",
        "--min-ready-seconds",
        "8",
      ];
      const cli = new KubeletProcess(rolloutArgs(...args));
      let hash = "";
      try {
        await waitFor(
          "the second batch's surge copy Ready beside the old pod",
          async () => {
            const now = await state();
            if (now.phase !== "Progressing" || now.batch !== 1 || now.surgeStep !== "copy") return undefined;
            hash = now.hash;
            const copy = await client.get(fleetKeys.status(nodes[1]!, "default", `${pod}-${hash.slice(0, 10)}`));
            const s = copy.entry ? (JSON.parse(copy.entry.value) as V1PodStatus) : undefined;
            return s?.conditions?.find((c) => c.type === "Ready")?.status === "True" ? true : undefined;
          },
          120_000,
        );
      } finally {
        await cli.stop("SIGKILL");
      }
      const killed = await state();
      expect([killed.phase, killed.batch, killed.surgeStep]).toEqual(["Progressing", 1, "copy"]);
      // Two pods on that node now, the old one and the copy: the surge, not a leftover.
      expect((await running(nodes[1]!)).hash).toBe(killed.fromHash);
      const status = fleet("rollout", "status", pod);
      expect(status.code).toBe(5);
      expect(status.stdout).toContain("batch 1/3: 1/1 nodes Ready in");
      expect(status.stdout).toContain(
        `no command drives it (the one that did stopped): kubelet fleet rollout resume ${pod} goes on from batch 2`,
      );
      const resumed = runBinary(rolloutArgs("resume", pod));
      expect({ code: resumed.code, stderr: resumed.stderr }).toEqual({ code: 0, stderr: "" });
      expect(resumed.stdout).toMatch(
        new RegExp(`^resuming rollout of default/${pod} to revision \\d+ at batch 2/3$`, "m"),
      );
      expect(resumed.stdout).toContain(`rollout of default/${pod} complete: revision ${killed.revision} on 3 nodes`);
      await settledAt(hash, gaps, copies);
    } finally {
      await cancel();
    }
  }, 240_000);
});
