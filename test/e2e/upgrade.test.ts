// In-place upgrades: pods run by an earlier kubelet, built from this repository's history, are
// adopted by dist/kubelet with zero restarts: the same containers, no container created or started,
// restart counts 0. From before the CRI-shaped runtime port (Docker bodies written directly), and
// from before node-scoped pod UIDs (the adopted pods keep their earlier UID; a new pod gets the node's).
import { afterAll, beforeAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nodeUid, sourceUid } from "../../lib/api/pod-uid.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, podContainers, removeCgroupRoot, removeDir, removePods, tempDir } from "./harness.ts";

/** The last commit whose Runtime port took Docker create bodies: the version a node upgrades from. */
const BEFORE_CRI_PORT = "9411637ddf20fb757a97838aa0326abd3d65147e";
/** The last commit whose static pod UIDs left the node out (source and namespace/name only). */
const BEFORE_NODE_UIDS = "2056cf45b08c7f967a5d65d88ec5eac5ae460076";
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
    metadata: { name: string; uid: string };
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
    removePods(services, ...pods, "e2e-up-new");
    removeCgroupRoot(rootDir);
    for (const dir of [manifests, rootDir, oldTree]) removeDir(dir);
  });

  /** Runs the pods with the kubelet of `commit`, then with dist/kubelet: the same containers, none started. */
  async function upgradeFrom(commit: string): Promise<PodItem[]> {
    const tree = join(oldTree, commit.slice(0, 7));
    mkdirSync(tree);
    kubelet = await start([buildKubeletAt(commit, tree)]);
    await waitFor("the old kubelet's pods Running", allRunning, 90_000);
    const before = containers();
    expect(Object.keys(before).length).toBe(8); // 3 pause, 1 init, 4 app containers
    await kubelet.stop("SIGKILL");

    kubelet = await start();
    // Two full syncs of every pod by the new kubelet: each saw, planned and kept what the old one ran. A settled
    // pod's second pass comes with the once-a-minute resync (SETTLED_POD_RESYNC_MS), not the next sync period.
    await waitFor(
      "two syncs of every pod",
      async () => (await metric("kubelet_pod_worker_duration_seconds_count")) >= 2 * pods.length,
      150_000,
    );
    const adopted = await waitFor("the pods Running again", allRunning, 30_000);
    expect(containers()).toEqual(before);
    expect(adopted.flatMap((p) => p.status!.containerStatuses!.map((c) => c.restartCount))).toEqual([0, 0, 0, 0]);
    expect(await metric("kubelet_started_containers_total")).toBe(0);
    expect(await metric('kubelet_runtime_operations_total{operation_type="create_container"}')).toBe(0);
    expect(kubelet.output).not.toContain("recreating the pod");
    return adopted;
  }

  test("pods run by the version before the CRI-shaped port are adopted without one restart", async () => {
    await upgradeFrom(BEFORE_CRI_PORT);
  }, 420_000);

  test("pods run by the version before node-scoped UIDs keep their UIDs and are adopted without one restart; a new pod gets the node's UID", async () => {
    await kubelet.stop("SIGKILL");
    removePods(services, ...pods);
    const adopted = await upgradeFrom(BEFORE_NODE_UIDS);
    expect(Object.fromEntries(adopted.map((p) => [p.metadata.name, p.metadata.uid]))).toEqual(
      Object.fromEntries(pods.map((name) => [name, sourceUid("file", "default", name)])),
    );
    writeFileSync(
      join(manifests, "new.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-up-new }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["sleep", "3600"] }]
`,
    );
    const added = await waitFor("the new pod listed", async () => {
      const list = JSON.parse(await api("/pods")) as { items: PodItem[] };
      return list.items.find((p) => p.metadata.name === "e2e-up-new");
    });
    expect(added.metadata.uid).toBe(nodeUid("e2e-upgrade", "file", "default", "e2e-up-new"));
  }, 420_000);
});
