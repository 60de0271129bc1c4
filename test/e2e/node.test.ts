// An operator's node, end to end: KubeletConfiguration files, QoS cgroups read back from
// /sys/fs/cgroup and /proc, node allocatable, orphaned pod cgroups, resolv.conf per dnsPolicy, and
// one kubelet per root dir — the compiled binary against the real dockerd.
import { afterAll, beforeAll, expect } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import {
  type Kubelet,
  KubeletProcess,
  killKubeletsAfterAll,
  killLiveKubelets,
  startKubelet,
  test,
  waitFor,
} from "./harness-kubelet.ts";
import { testCgroupRoot } from "./harness-runtimes.ts";
import { baseFlags, docker, podContainers, removeDir, runBinary, tempDir } from "./harness.ts";

const operators = join(import.meta.dir, "../../testdata/config/operators");
const cgroup = (controller: string, path: string, file: string) =>
  readFileSync(join("/sys/fs/cgroup", controller, path, file), "utf8").trim();

describeWithServices("an operator's node", (services) => {
  const manifests = tempDir("node-manifests");
  const rootDir = tempDir("node-root");
  const config = join(rootDir, "kubelet.yaml");
  const root = testCgroupRoot(rootDir);
  const pods = [
    "e2e-qos-guaranteed",
    "e2e-qos-burstable",
    "e2e-qos-besteffort",
    "e2e-dns-cluster",
    "e2e-dns-default",
    "e2e-dns-none",
    "e2e-dns-host",
  ];
  let kubelet: Kubelet;
  const manifest = (name: string, spec: string) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `apiVersion: v1\nkind: Pod\nmetadata: { name: ${name}, namespace: ops }\nspec:\n  terminationGracePeriodSeconds: 1\n${spec}`,
    );
  const app = (resources = "") =>
    `  containers:\n    - name: app\n      image: ${services.busybox}\n      command: ["sleep", "3600"]\n${resources}`;
  const running = (name: string) =>
    waitFor(
      `${name} running`,
      () =>
        podContainers(services, name, "ops").find(
          (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
        ),
      60_000,
    );
  const inspect = (id: string) =>
    JSON.parse(docker(services, "inspect", id))[0] as {
      State: { Pid: number };
      HostConfig: { CgroupParent: string };
      Config: { Labels: Record<string, string> };
    };

  beforeAll(async () => {
    writeFileSync(
      config,
      readFileSync(join(operators, "reserved.yaml"), "utf8").replace(
        "staticPodPath: /etc/kubernetes/manifests",
        `staticPodPath: ${manifests}\nclusterDNS: [127.0.0.10]\nclusterDomain: cluster.local`,
      ),
    );
    writeFileSync(join(rootDir, "host-resolv.conf"), "nameserver 127.0.0.53\nsearch corp.example\noptions edns0\n");
    manifest("e2e-qos-guaranteed", app(`      resources: { limits: { cpu: 250m, memory: 64Mi } }\n`));
    manifest(
      "e2e-qos-burstable",
      app(`      resources: { requests: { cpu: 100m, memory: 32Mi }, limits: { cpu: 500m } }\n`),
    );
    manifest("e2e-qos-besteffort", app());
    manifest("e2e-dns-cluster", app());
    manifest("e2e-dns-default", `  dnsPolicy: Default\n${app()}`);
    manifest(
      "e2e-dns-none",
      `  dnsPolicy: None\n  dnsConfig: { nameservers: [127.0.0.99], searches: [only.example], options: [{ name: ndots, value: "2" }] }\n${app()}`,
    );
    manifest("e2e-dns-host", `  hostNetwork: true\n  dnsPolicy: ClusterFirstWithHostNet\n${app()}`);
    kubelet = await startKubelet([
      "run",
      "--config_file",
      config,
      ...baseFlags(services, rootDir),
      "--resolv_conf",
      join(rootDir, "host-resolv.conf"),
    ]);
  });

  killKubeletsAfterAll();
  afterAll(() => {
    const ids = pods.flatMap((name) => podContainers(services, name, "ops").map((c) => c.id));
    if (ids.length) docker(services, "rm", "-f", ...ids);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("each QoS class runs in its pod cgroup with the limits, pids limit and oom_score_adj the kubelet sets", async () => {
    const expected = {
      "e2e-qos-guaranteed": { parent: "kubepods/pod", quota: "25000", memory: String(64 * 2 ** 20), shares: "256" },
      "e2e-qos-burstable": {
        parent: "kubepods/burstable/pod",
        quota: "50000",
        memory: "9223372036854771712",
        shares: "102",
      },
      "e2e-qos-besteffort": {
        parent: "kubepods/besteffort/pod",
        quota: "-1",
        memory: "9223372036854771712",
        shares: "2",
      },
    };
    for (const [name, want] of Object.entries(expected)) {
      const container = inspect((await running(name)).id);
      const uid = container.Config.Labels["io.kubernetes.pod.uid"];
      const podPath = `${root}/${want.parent}${uid}`;
      expect(container.HostConfig.CgroupParent).toBe(podPath);
      expect(readFileSync(`/proc/${container.State.Pid}/cgroup`, "utf8")).toContain(`:cpu:${podPath}/`);
      // the pause container shares the pod cgroup
      const pause = podContainers(services, name, "ops").find(
        (c) => c.labels["io.kubernetes.container.name"] === "POD",
      )!;
      expect(inspect(pause.id).HostConfig.CgroupParent).toBe(podPath);
      expect(cgroup("cpu", podPath, "cpu.cfs_quota_us")).toBe(want.quota);
      expect(cgroup("cpu", podPath, "cpu.shares")).toBe(want.shares);
      expect(cgroup("memory", podPath, "memory.limit_in_bytes")).toBe(want.memory);
      expect(cgroup("pids", podPath, "pids.max")).toBe("1024");
    }
    const oom = async (name: string) =>
      Number(readFileSync(`/proc/${inspect((await running(name)).id).State.Pid}/oom_score_adj`, "utf8"));
    // Guaranteed asks for -997; this kernel refuses negative values, so the kubelet clamps to 0 and says so.
    expect(await oom("e2e-qos-guaranteed")).toBe(0);
    expect(kubelet.output).toContain("the kernel refuses negative oom_score_adj here");
    expect(await oom("e2e-qos-besteffort")).toBe(1000);
    expect(await oom("e2e-qos-burstable")).toBe(1000 - Math.trunc((1000 * 32 * 2 ** 20) / totalmem()));
    const list = (await (await kubelet.api("/pods")).json()) as {
      items: Array<{ metadata: { name: string }; status: { qosClass: string } }>;
    };
    const qos = Object.fromEntries(list.items.map((p) => [p.metadata.name, p.status.qosClass]));
    expect(qos).toMatchObject({
      "e2e-qos-guaranteed": "Guaranteed",
      "e2e-qos-burstable": "Burstable",
      "e2e-qos-besteffort": "BestEffort",
    });
  }, 120_000);

  test("kubepods is bounded by node allocatable: capacity − kubeReserved − systemReserved − evictionHard", () => {
    const memory = totalmem() - 256 * 2 ** 20 - 128 * 2 ** 20 - 200 * 2 ** 20;
    // The kernel rounds memory limits down to a page.
    expect(Number(cgroup("memory", `${root}/kubepods`, "memory.limit_in_bytes"))).toBe(
      Math.floor(memory / 4096) * 4096,
    );
    expect(cgroup("cpu", `${root}/kubepods`, "cpu.shares")).toBe(
      String(Math.floor(((cpus().length * 1000 - 200) * 1024) / 1000)),
    );
  });

  test("/stats/summary reads pod usage from the pod cgroup", async () => {
    await running("e2e-qos-besteffort");
    type Summary = {
      pods: Array<{
        podRef: { name: string };
        memory?: { usageBytes: number };
        cpu?: { usageCoreNanoSeconds: number };
      }>;
    };
    // The resource analyzer collects every 10 s: wait for a collection that has the pod.
    const pod = await waitFor("the pod in /stats/summary", async () => {
      const response = await kubelet.api("/stats/summary");
      if (response.status !== 200) return undefined;
      return ((await response.json()) as Summary).pods.find((p) => p.podRef.name === "e2e-qos-besteffort");
    });
    expect(pod.memory!.usageBytes).toBeGreaterThan(0);
    expect(pod.cpu!.usageCoreNanoSeconds).toBeGreaterThan(0);
  });

  test("resolv.conf inside the container follows each dnsPolicy", async () => {
    const resolv = async (name: string) =>
      docker(services, "exec", (await running(name)).id, "cat", "/etc/resolv.conf");
    expect(await resolv("e2e-dns-cluster")).toBe(
      "nameserver 127.0.0.10\nsearch ops.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5",
    );
    expect(await resolv("e2e-dns-default")).toBe("nameserver 127.0.0.53\nsearch corp.example\noptions edns0");
    expect(await resolv("e2e-dns-none")).toBe("nameserver 127.0.0.99\nsearch only.example\noptions ndots:2");
    expect(await resolv("e2e-dns-host")).toContain("nameserver 127.0.0.10");
  }, 120_000);

  test("a deleted pod's cgroup is removed", async () => {
    const container = inspect((await running("e2e-qos-burstable")).id);
    const podPath = container.HostConfig.CgroupParent;
    rmSync(join(manifests, "e2e-qos-burstable.yaml"));
    // Each controller's directory goes in turn: wait for every one of them, not the first.
    const left = () => ["memory", "cpu", "pids"].filter((c) => existsSync(join("/sys/fs/cgroup", c, podPath)));
    await waitFor("the pod cgroup removed from every controller", () => left().length === 0, 60_000);
    expect(left()).toEqual([]);
  }, 90_000);

  test("a second kubelet on the same root dir exits naming the first one's pid", () => {
    const second = runBinary(
      ["run", "-c", manifests, ...baseFlags(services, rootDir), "--port", "0", "--enable_server=false"],
      {
        timeoutMs: 30_000,
      },
    );
    expect(second.code).toBe(1);
    expect(second.stdout + second.stderr).toContain(`another kubelet (pid ${kubelet.child.pid}) holds --lock_file`);
  });
});

describeWithServices("exit on lock contention", (services) => {
  const rootDir = tempDir("lock-root");
  const lockFile = join(rootDir, "lock");
  killKubeletsAfterAll();
  afterAll(() => removeDir(rootDir));
  // No /healthz to wait for: the newer kubelet waits for the lock before it serves anything.
  const start = () =>
    new KubeletProcess([
      "run",
      ...baseFlags(services, rootDir),
      "--port",
      "0",
      "--lock_file",
      lockFile,
      "--exit_on_lock_contention",
    ]);

  test("the running kubelet releases the lock and exits when a newer one asks; the newer one takes over", async () => {
    const first = start();
    await waitFor("the first kubelet to hold the lock", () =>
      readFileSync(lockFile, "utf8").startsWith(`${first.child.pid} `),
    );
    const exited = new Promise<number | null>((resolve) => first.child.once("exit", (code) => resolve(code)));
    const second = start();
    expect(await exited).toBe(0);
    expect(first.output).toContain("a newer kubelet asked for --lock_file");
    await waitFor("the newer kubelet to hold the lock", () =>
      readFileSync(lockFile, "utf8").startsWith(`${second.child.pid} `),
    );
  }, 60_000);
});

describeWithServices("operators' KubeletConfiguration files", (services) => {
  for (const file of ["kubeadm.yaml", "reserved.yaml", "hardened.yaml"]) {
    test(`${file} prints with origins and runs`, async () => {
      const rootDir = tempDir(`operator-${file.replace(".yaml", "")}`);
      // kubeadm's CA is not on a test machine: without it the protected routes must stay closed
      const path = join(rootDir, file);
      writeFileSync(path, readFileSync(join(operators, file), "utf8").replace("/etc/kubernetes/pki/ca.crt", '""'));
      const printed = runBinary(["print-config", "--config_file", path, "--show-origin"]);
      expect(printed.code).toBe(0);
      expect(printed.stdout).toMatch(/# file \(/);
      const manifests = tempDir(`operator-manifests-${file.replace(".yaml", "")}`);
      try {
        const kubelet = await startKubelet(
          [
            "run",
            "--config_file",
            path,
            "-c",
            manifests,
            ...baseFlags(services, rootDir),
            "--cgroup_driver",
            "cgroupfs", // this test daemon's driver; flags win over the file
            "--verbosity",
            "1",
          ],
          // kubeadm's and the hardened file turn anonymous access off: every route of the port, /healthz too, is 401.
          { healthyWithinMs: 30_000, healthzStatus: file === "reserved.yaml" ? 200 : 401 },
        );
        expect(kubelet.output).toContain("effective settings");
        if (file !== "reserved.yaml") expect(kubelet.output).toContain("is accepted but not applicable here");
        if (file === "kubeadm.yaml") {
          expect(kubelet.output).toContain("failing closed");
          for (const path of ["/containerLogs/ops/x/app", "/pods", "/metrics"])
            expect({ path, status: (await kubelet.api(path)).status }).toEqual({ path, status: 401 });
        }
      } finally {
        await killLiveKubelets();
        removeDir(manifests);
        removeDir(rootDir);
      }
    }, 60_000);
  }
});
