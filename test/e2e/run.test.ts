// `kubelet run` end to end: a watched manifest directory, edits, crashes, a kill -9 and restart,
// removal, the info server and etcd — the compiled binary against the real dockerd and etcd.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import {
  baseFlags,
  freePort,
  KubeletProcess,
  podContainers,
  removeDir,
  removePods,
  tempDir,
  waitFor,
} from "./harness.ts";

const pod = (name: string, body: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
${body}`;

describeWithServices("kubelet run", (services) => {
  const manifests = tempDir("run-manifests");
  const rootDir = tempDir("run-root");
  const pods = ["e2e-run-app", "e2e-run-crash", "e2e-run-backup", "e2e-run-after-backup", "e2e-run-etcd"];
  let port = 0;
  let kubelet: KubeletProcess;
  const start = () =>
    new KubeletProcess([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--port",
      String(port),
      "--sync_frequency",
      "2s",
      "--etcd_servers",
      services.etcd,
      "--hostname_override",
      "e2e-node",
    ]);
  const running = (name: string, container: string) =>
    podContainers(services, name).find(
      (c) => c.labels["io.kubernetes.container.name"] === container && c.state === "running",
    );
  const api = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);

  beforeAll(async () => {
    port = await freePort();
    writeFileSync(
      join(manifests, "app.yaml"),
      pod(
        "e2e-run-app",
        `  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo started $(GREETING); exec sleep 3600"]
      env: [{ name: GREETING, value: v1 }]
`,
      ),
    );
    kubelet = start();
  });

  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    removePods(services, ...pods);
    await fetch(`${services.etcd}/v3/kv/deleterange`, {
      method: "POST",
      body: JSON.stringify({ key: btoa("/registry/hosts/e2e-node/kubelet") }),
    }).catch(() => {});
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("starts a pod written to the manifest directory, with the kubelet's names and labels", async () => {
    const app = await waitFor("app running", () => running("e2e-run-app", "app"));
    expect(app.name).toMatch(/^k8s_app_e2e-run-app_default_[0-9a-f-]+_0$/);
    expect(app.labels["io.kubernetes.pod.namespace"]).toBe("default");
    expect(app.labels["io.kubernetes.container.hash"]).toBeTruthy();
  });

  test("serves /healthz and a PodList in which the pod is Running and Ready", async () => {
    await waitFor("healthz ok", async () => (await api("/healthz")).status === 200);
    const list = await waitFor("pod Running", async () => {
      const body = (await (await api("/pods")).json()) as {
        kind: string;
        items: Array<{
          metadata: { name: string };
          status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
        }>;
      };
      const item = body.items.find((p) => p.metadata.name === "e2e-run-app");
      return item?.status?.phase === "Running" &&
        item.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")
        ? body
        : undefined;
    });
    expect(list.kind).toBe("PodList");
  });

  test("serves the container's logs and runs commands in it, on the real port", async () => {
    const logs = await waitFor("logs", async () => {
      const text = await (await api("/containerLogs/default/e2e-run-app/app?tailLines=5")).text();
      return text.includes("started v1") ? text : undefined;
    });
    expect(logs).toContain("started v1");
    const exec = await api(
      `/run/default/e2e-run-app/app?command=sh&command=-c&command=${encodeURIComponent("echo $GREETING; exit 4")}`,
      { method: "POST" },
    );
    expect(exec.headers.get("x-exit-code")).toBe("4");
    expect(await exec.text()).toBe("v1\n");
    const metrics = await (await api("/metrics")).text();
    expect(metrics).toMatch(
      /kubelet_runtime_operations_total\{operation_type="create_container",runtime_type="docker"\} \d+/,
    );
    expect(metrics).toMatch(/kubelet_running_pods \d+/);
  });

  test("an edit to the manifest replaces the changed container within seconds and keeps the pause container", async () => {
    const before = podContainers(services, "e2e-run-app");
    const pause = before.find((c) => c.name.startsWith("k8s_POD_"))!;
    const app = before.find((c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running")!;
    // An editor's atomic save: write a temp file, rename over the manifest.
    writeFileSync(
      join(manifests, ".app.yaml.tmp"),
      pod(
        "e2e-run-app",
        `  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo started $(GREETING); exec sleep 3600"]
      env: [{ name: GREETING, value: v2 }]
`,
      ),
    );
    renameSync(join(manifests, ".app.yaml.tmp"), join(manifests, "app.yaml"));
    const replaced = await waitFor(
      "app replaced",
      () => {
        const now = running("e2e-run-app", "app");
        return now && now.id !== app.id ? now : undefined;
      },
      15_000,
    );
    expect(replaced.id).not.toBe(app.id);
    expect(
      running("e2e-run-app", "POD")?.id ??
        podContainers(services, "e2e-run-app").find((c) => c.name.startsWith("k8s_POD_") && c.state === "running")?.id,
    ).toBe(pause.id);
  });

  test("editor backup files in the manifest directory are never run", async () => {
    writeFileSync(
      join(manifests, "backup.yaml~"),
      pod(
        "e2e-run-backup",
        `  containers:
    - { name: app, image: ${services.busybox}, command: ["sleep", "3600"] }
`,
      ),
    );
    writeFileSync(join(manifests, ".backup.yaml.swp"), "binary junk");
    // A good manifest written after them: once its pod runs, the kubelet has read the directory with the
    // backup files in it, so their absence below is a decision, not a read that has not happened yet.
    writeFileSync(
      join(manifests, "after-backup.yaml"),
      pod(
        "e2e-run-after-backup",
        `  containers:
    - { name: app, image: ${services.busybox}, command: ["sleep", "3600"] }
`,
      ),
    );
    await waitFor("the pod written after the backups running", () => running("e2e-run-after-backup", "app"));
    expect(podContainers(services, "e2e-run-backup")).toHaveLength(0);
  });

  test("a crashing container is restarted with a growing restart count", async () => {
    writeFileSync(
      join(manifests, "crash.yaml"),
      pod(
        "e2e-run-crash",
        `  containers:
    - { name: crash, image: ${services.busybox}, command: ["sh", "-c", "sleep 0.2; exit 3"] }
`,
      ),
    );
    await waitFor(
      "second attempt",
      () =>
        podContainers(services, "e2e-run-crash").some(
          (c) =>
            c.labels["io.kubernetes.container.name"] === "crash" &&
            Number(c.labels["io.kubernetes.container.restartCount"]) >= 1,
        ),
      20_000,
    );
    rmSync(join(manifests, "crash.yaml"));
  });

  test("a pod written to etcd for this host runs", async () => {
    const manifest = JSON.stringify([
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "e2e-run-etcd" },
        spec: { containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }] },
      },
    ]);
    const put = await fetch(`${services.etcd}/v3/kv/put`, {
      method: "POST",
      body: JSON.stringify({ key: btoa("/registry/hosts/e2e-node/kubelet"), value: btoa(manifest) }),
    });
    expect(put.status).toBe(200);
    await waitFor("etcd pod running", () => running("e2e-run-etcd", "app"), 20_000);
  });

  test("kill -9 of the kubelet and a restart leave healthy containers untouched", async () => {
    const before = running("e2e-run-app", "app")!;
    await kubelet.stop("SIGKILL");
    kubelet = start();
    await waitFor(
      "healthz after restart",
      async () => (await api("/healthz").catch(() => undefined))?.status === 200,
      20_000,
    );
    await Bun.sleep(3000); // more than one sync period
    const after = running("e2e-run-app", "app");
    expect(after?.id).toBe(before.id);
  });

  test("deleting the manifest removes the pod's containers", async () => {
    rmSync(join(manifests, "app.yaml"));
    await waitFor("app gone", () => podContainers(services, "e2e-run-app").length === 0, 60_000);
  });

  test("SIGTERM stops the kubelet with exit 0 and leaves containers running", async () => {
    const etcdPod = running("e2e-run-etcd", "app");
    expect(await kubelet.stop("SIGTERM")).toBe(0);
    expect(running("e2e-run-etcd", "app")?.id).toBe(etcdPod!.id);
  });
});
