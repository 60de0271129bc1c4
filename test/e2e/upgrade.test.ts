// An in-place upgrade across the CRI-shaped runtime port: pods run by the kubelet built from the
// commit before it (Docker bodies written directly) are adopted by dist/kubelet (the Docker shim)
// with zero restarts: the same containers, no container created or started, restart counts 0.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, podContainers, removeCgroupRoot, removeDir, removePods, tempDir } from "./harness.ts";

/** The last commit whose Runtime port took Docker create bodies: the version a node upgrades from. */
const BEFORE_CRI_PORT = "9411637ddf20fb757a97838aa0326abd3d65147e";
const root = join(import.meta.dir, "../..");
const bun = join(root, "node_modules/.bin/bun");

/** Builds the kubelet of `commit` from this repository's history into `dir`; returns the binary. */
function buildKubeletAt(commit: string, dir: string): string {
  const archive = spawnSync("sh", ["-c", `git -C "${root}" archive ${commit} | tar -x -C "${dir}"`], {
    encoding: "utf8",
  });
  if (archive.status !== 0) throw new Error(`cannot extract commit ${commit}: ${archive.stderr}`);
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  const binary = join(dir, "kubelet-old");
  const build = spawnSync(bun, ["build", "--compile", "bin/kubelet.ts", "--outfile", binary], {
    cwd: dir,
    encoding: "utf8",
  });
  if (build.status !== 0) throw new Error(`cannot build the kubelet of ${commit}: ${build.stderr}`);
  return binary;
}

describeWithServices("upgrade in place", (services) => {
  const manifests = tempDir("upgrade-manifests");
  const rootDir = tempDir("upgrade-root");
  const oldTree = tempDir("upgrade-old");
  const pods = ["e2e-up-app", "e2e-up-host", "e2e-up-vol"];
  let kubelet: Kubelet;
  const start = (command?: string[]) =>
    startKubelet(
      [
        "run",
        "-c",
        manifests,
        ...baseFlags(services, rootDir),
        "--network_container_image",
        services.pause,
        "--sync_frequency",
        "1s",
        "--hostname_override",
        "e2e-upgrade",
      ],
      { command },
    );
  const api = async (path: string) => (await kubelet.api(path)).text();
  type PodItem = {
    metadata: { name: string };
    status?: { phase?: string; containerStatuses?: Array<{ restartCount: number; ready: boolean }> };
  };
  const allRunning = async () => {
    const list = JSON.parse(await api("/pods").catch(() => '{"items":[]}')) as { items: PodItem[] };
    const mine = list.items.filter((p) => pods.includes(p.metadata.name));
    return mine.length === pods.length &&
      mine.every((p) => p.status?.phase === "Running" && p.status.containerStatuses?.every((c) => c.ready))
      ? mine
      : undefined;
  };
  /** Every container of the pods, by name: id and state. */
  const containers = () =>
    Object.fromEntries(pods.flatMap((p) => podContainers(services, p)).map((c) => [c.name, `${c.id} ${c.state}`]));
  /** The sum of a metric's samples in /metrics. */
  const metric = async (name: string) =>
    (await api("/metrics"))
      .split("\n")
      .filter((line) => line.startsWith(name))
      .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);

  beforeAll(async () => {
    writeFileSync(
      join(manifests, "app.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-up-app, labels: { tier: web } }
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Always
  initContainers:
    - name: init
      image: ${services.busybox}
      command: ["sh", "-c", "echo ready > /work/flag"]
      volumeMounts: [{ name: work, mountPath: /work }]
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "cat /work/flag; exec sleep 3600"]
      args: []
      env: [{ name: POD, valueFrom: { fieldRef: { fieldPath: metadata.name } } }, { name: MODE, value: "$(POD)-fast" }]
      resources: { limits: { memory: 64Mi, cpu: 200m } }
      volumeMounts: [{ name: work, mountPath: /work }]
  volumes: [{ name: work, emptyDir: {} }]
`,
    );
    writeFileSync(
      join(manifests, "host.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-up-host }
spec:
  terminationGracePeriodSeconds: 1
  hostNetwork: true
  containers:
    - name: a
      image: ${services.busybox}
      command: ["sleep", "3600"]
    - name: b
      image: ${services.busybox}
      command: ["sleep", "3600"]
      securityContext: { runAsUser: 1000, runAsGroup: 1000, readOnlyRootFilesystem: true, capabilities: { drop: [NET_RAW] } }
`,
    );
    writeFileSync(
      join(manifests, "vol.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-up-vol }
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: OnFailure
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sleep", "3600"]
      terminationMessagePath: /dev/termination-log
      readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 }
`,
    );
  });

  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, ...pods);
    removeCgroupRoot(rootDir);
    for (const dir of [manifests, rootDir, oldTree]) removeDir(dir);
  });

  test("pods run by the previous version are adopted without one restart", async () => {
    kubelet = await start([buildKubeletAt(BEFORE_CRI_PORT, oldTree)]);
    await waitFor("the old kubelet's pods Running", allRunning, 90_000);
    const before = containers();
    expect(Object.keys(before).length).toBe(8); // 3 pause, 1 init, 4 app containers
    await kubelet.stop("SIGKILL");

    kubelet = await start();
    // Two full syncs of every pod by the new kubelet: each saw, planned and kept what the old one ran.
    await waitFor(
      "two syncs of every pod",
      async () => (await metric("kubelet_pod_worker_duration_seconds_count")) >= 2 * pods.length,
      60_000,
    );
    const adopted = await waitFor("the pods Running again", allRunning, 30_000);
    expect(containers()).toEqual(before);
    expect(adopted.flatMap((p) => p.status!.containerStatuses!.map((c) => c.restartCount))).toEqual([0, 0, 0, 0]);
    expect(await metric("kubelet_started_containers_total")).toBe(0);
    expect(await metric('kubelet_runtime_operations_total{operation_type="create_container"}')).toBe(0);
    expect(kubelet.output).not.toContain("recreating the pod");
  }, 240_000);
});
