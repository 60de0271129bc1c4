// `kubelet run` end to end on each runtime of the matrix: a watched manifest directory, env, init
// containers and volumes, logs (current, previous, followed) and exec over the info server, edits,
// crash back-off, etcd, adoption after kill -9, removal and SIGTERM — the compiled binary against
// the real dockerd or containerd, observed through the kubelet's own Runtime port.
import { afterAll, beforeAll, expect } from "bun:test";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type ApiPod,
  describeOnRuntimes,
  Kubelet,
  removeDir,
  startKubelet,
  tempDir,
  test,
  waitFor,
} from "./harness.ts";

const pod = (name: string, body: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
${body}`;

const appPod = (greeting: string, image: string) =>
  pod(
    "e2e-run-app",
    `  containers:
    - name: app
      image: ${image}
      command: ["sh", "-c", "echo started $(GREETING); exec sleep 3600"]
      env: [{ name: GREETING, value: ${greeting} }]
`,
  );

const status = (p: ApiPod, container: string) => p.status?.containerStatuses?.find((s) => s.name === container);

describeOnRuntimes("run lifecycle", (services, rt) => {
  const manifests = tempDir("run-manifests");
  const rootDir = tempDir("run-root");
  const hostDir = tempDir("run-host");
  const pods = [
    "e2e-run-app",
    "e2e-run-spec",
    "e2e-run-crash",
    "e2e-run-backup",
    "e2e-run-after-backup",
    "e2e-run-etcd",
  ];
  const node = `e2e-node-${rt.label}`;
  const etcdKey = btoa(`/registry/hosts/${node}/kubelet`);
  let kubelet: Kubelet;
  const start = () =>
    startKubelet([
      "run",
      "-c",
      manifests,
      ...rt.flags(rootDir),
      "--sync_frequency",
      "2s",
      "--etcd_servers",
      services.etcd,
      "--hostname_override",
      node,
    ]);
  const exec = async (name: string, container: string, script: string) => {
    const response = await kubelet.admin(
      `/run/default/${name}/${container}?command=sh&command=-c&command=${encodeURIComponent(script)}`,
      { method: "POST" },
    );
    return { exitCode: response.headers.get("x-exit-code"), output: await response.text() };
  };

  const forgetEtcdPod = () =>
    fetch(`${services.etcd}/v3/kv/deleterange`, { method: "POST", body: JSON.stringify({ key: etcdKey }) }).catch(
      () => {},
    );

  beforeAll(async () => {
    // A run that died before its clean-up must not hand this one a pod already running.
    await forgetEtcdPod();
    writeFileSync(join(manifests, "app.yaml"), appPod("v1", services.busybox));
    kubelet = await start();
  });

  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(...pods);
    await forgetEtcdPod();
    removeDir(manifests);
    removeDir(rootDir);
    removeDir(hostDir);
  });

  test("starts a pod written to the manifest directory, with the kubelet's names and labels", async () => {
    const app = await waitFor("app running", () => rt.running("e2e-run-app", "app"));
    expect(app.name).toMatch(/^k8s_app_e2e-run-app_default_[0-9a-f-]+_0$/);
    expect(app.labels["io.kubernetes.pod.namespace"]).toBe("default");
    expect(app.labels["io.kubernetes.container.hash"]).toBeTruthy();
  });

  test("serves a PodList in which the pod is Running and Ready, with container ids naming the runtime", async () => {
    await kubelet.waitForPod(
      "e2e-run-app",
      "Running and Ready",
      (p) =>
        p.status?.phase === "Running" && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
    const list = (await (await kubelet.api("/pods")).json()) as { kind: string; items: ApiPod[] };
    expect(list.kind).toBe("PodList");
    expect(list.items.map((p) => p.metadata.name)).toContain("e2e-run-app");
    // Container ids name the runtime, as the Go kubelet's do: docker://… or containerd://….
    const app = (await kubelet.pod("e2e-run-app"))!;
    expect(status(app, "app")?.containerID).toBe(`${rt.label}://${(await rt.running("e2e-run-app", "app"))!.id}`);
  });

  test("init containers run to completion first; env, the downward API, volumes and limits reach the app", async () => {
    writeFileSync(join(hostDir, "greeting"), "hi from the host\n");
    writeFileSync(
      join(manifests, "spec.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-run-spec, labels: { tier: web } }
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
    - { name: init-1, image: ${services.busybox}, command: ["sh", "-c", "echo one > /scratch/order"], volumeMounts: [{ name: scratch, mountPath: /scratch }] }
    - { name: init-2, image: ${services.busybox}, command: ["sh", "-c", "echo two >> /scratch/order"], volumeMounts: [{ name: scratch, mountPath: /scratch }] }
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo $(B) $$(B) > /scratch/out; exec sleep 3600"]
      env:
        - { name: A, value: one }
        - { name: B, value: "$(A)-two" }
        - { name: C, value: "$$(A)" }
        - { name: POD, valueFrom: { fieldRef: { fieldPath: metadata.name } } }
        - { name: TIER, valueFrom: { fieldRef: { fieldPath: "metadata.labels['tier']" } } }
      resources: { requests: { cpu: 250m, memory: 32Mi }, limits: { cpu: 500m, memory: 64Mi } }
      volumeMounts:
        - { name: scratch, mountPath: /scratch }
        - { name: host, mountPath: /host, readOnly: true }
  volumes:
    - { name: scratch, emptyDir: {} }
    - { name: host, hostPath: { path: ${hostDir}, type: Directory } }
`,
    );
    const spec = await kubelet.waitForPod("e2e-run-spec", "Running", (p) => p.status?.phase === "Running");
    expect(spec.status?.initContainerStatuses?.map((s) => [s.name, s.state?.terminated?.reason])).toEqual([
      ["init-1", "Completed"],
      ["init-2", "Completed"],
    ]);
    const env = (await exec("e2e-run-spec", "app", "env")).output.split("\n");
    expect(env).toEqual(expect.arrayContaining(["A=one", "B=one-two", "C=$(A)", "POD=e2e-run-spec", "TIER=web"]));
    // `$$(B)` reaches the container as the literal `$(B)`, which the shell then runs as a command (empty output).
    expect(await exec("e2e-run-spec", "app", "cat /scratch/order /scratch/out /host/greeting")).toEqual({
      exitCode: "0",
      output: "one\ntwo\none-two\nhi from the host\n",
    });
    expect((await exec("e2e-run-spec", "app", "touch /host/x")).exitCode).not.toBe("0");
    // The limits as the kernel enforces them (the container's own cgroup, cgroup v1).
    expect(
      await exec(
        "e2e-run-spec",
        "app",
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.shares",
      ),
    ).toEqual({ exitCode: "0", output: `${64 * 2 ** 20}\n50000\n256\n` });
  });

  test("serves the container's logs, follows them, and runs commands in it, on the real port", async () => {
    const logs = await kubelet.waitFor("logs", async () => {
      const text = await (await kubelet.admin("/containerLogs/default/e2e-run-app/app?tailLines=5")).text();
      return text.includes("started v1") ? text : undefined;
    });
    expect(logs).toBe("started v1\n");
    const follow = await kubelet.admin("/containerLogs/default/e2e-run-app/app?follow=true");
    const reader = follow.body!.getReader();
    let followed = "";
    const more = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return followed;
        followed += new TextDecoder().decode(value);
        if (followed.includes("later\n")) return followed;
      }
    })();
    // A line written to the container's stdout after the stream opened.
    expect((await exec("e2e-run-app", "app", "echo later > /proc/1/fd/1")).exitCode).toBe("0");
    expect(await more).toBe("started v1\nlater\n");
    await reader.cancel();
    expect(await exec("e2e-run-app", "app", "echo $GREETING; exit 4")).toEqual({ exitCode: "4", output: "v1\n" });
    const metrics = await (await kubelet.api("/metrics")).text();
    expect(metrics).toMatch(/kubelet_runtime_operations_total\{operation_type="create_container"\} \d+/);
    expect(metrics).toMatch(/kubelet_running_pods \d+/);
  });

  test("names the runtime in /spec", async () => {
    expect(await (await kubelet.api("/spec")).json()).toMatchObject({
      container_runtime: expect.stringMatching(new RegExp(`^${rt.label}://`)),
      container_runtime_type: rt.kind,
    });
  });

  test("an edit to the manifest replaces the changed container within seconds and keeps the pod sandbox", async () => {
    const sandbox = await rt.readySandbox("e2e-run-app");
    const app = await rt.running("e2e-run-app", "app");
    expect(sandbox).toBeDefined();
    // An editor's atomic save: write a temp file, rename over the manifest.
    writeFileSync(join(manifests, ".app.yaml.tmp"), appPod("v2", services.busybox));
    renameSync(join(manifests, ".app.yaml.tmp"), join(manifests, "app.yaml"));
    const replaced = await kubelet.waitFor(
      "app replaced",
      async () => {
        const now = await rt.running("e2e-run-app", "app");
        return now && now.id !== app!.id ? now : undefined;
      },
      15_000,
    );
    expect(replaced.id).not.toBe(app!.id);
    expect((await rt.readySandbox("e2e-run-app"))?.id).toBe(sandbox!.id);
    expect((await exec("e2e-run-app", "app", "echo $GREETING")).output).toBe("v2\n");
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
    await kubelet.waitFor("the pod written after the backups running", () => rt.running("e2e-run-after-backup", "app"));
    expect(await rt.podContainers("e2e-run-backup")).toHaveLength(0);
  });

  test("a crashing container is restarted, backs off (CrashLoopBackOff), and serves the logs of the attempt that crashed last as previous", async () => {
    writeFileSync(
      join(manifests, "crash.yaml"),
      pod(
        "e2e-run-crash",
        `  containers:
    - { name: crash, image: ${services.busybox}, command: ["sh", "-c", "echo attempt $RANDOM$RANDOM; exit 3"] }
`,
      ),
    );
    const crashed = await kubelet.waitForPod(
      "e2e-run-crash",
      "CrashLoopBackOff after a restart",
      (p) => {
        const s = status(p, "crash");
        return (s?.restartCount ?? 0) >= 1 && s?.state?.waiting?.reason === "CrashLoopBackOff";
      },
      30_000,
    );
    expect(status(crashed, "crash")?.lastState?.terminated?.exitCode).toBe(3);
    const attempts = (await rt.podContainers("e2e-run-crash")).filter(
      (c) => c.labels["io.kubernetes.container.name"] === "crash",
    );
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    const current = await (await kubelet.admin("/containerLogs/default/e2e-run-crash/crash")).text();
    const previous = await (await kubelet.admin("/containerLogs/default/e2e-run-crash/crash?previous=true")).text();
    expect(current).toMatch(/^attempt \d+\n$/);
    expect(previous).toMatch(/^attempt \d+\n$/);
    // As the Go kubelet: while it waits in CrashLoopBackOff, both read the container lastState names, the one
    // that crashed last (the second-newest attempt is not "previous").
    expect(previous).toBe(current);
    rmSync(join(manifests, "crash.yaml"));
  });

  test("a pod written to etcd for this host runs", async () => {
    const manifest = JSON.stringify([
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "e2e-run-etcd" },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }],
        },
      },
    ]);
    const put = await fetch(`${services.etcd}/v3/kv/put`, {
      method: "POST",
      body: JSON.stringify({ key: etcdKey, value: btoa(manifest) }),
    });
    expect(put.status).toBe(200);
    await kubelet.waitFor("etcd pod running", () => rt.running("e2e-run-etcd", "app"), 20_000);
  });

  test("after kill -9, a new kubelet adopts the running pods: same container ids, no restart", async () => {
    const adoptable = ["e2e-run-app", "e2e-run-after-backup", "e2e-run-etcd"];
    const containers = async () =>
      [
        ...(await Promise.all(adoptable.map((p) => rt.podContainers(p)))).flat().map((c) => `${c.id} ${c.state}`),
        ...(await Promise.all(adoptable.map((p) => rt.podSandboxes(p)))).flat().map((s) => `${s.id} ${s.state}`),
      ].sort();
    const statuses = async () =>
      Promise.all(
        adoptable.map(async (p) => {
          const app = status((await kubelet.pod(p))!, "app");
          return { pod: p, restartCount: app?.restartCount, containerID: app?.containerID };
        }),
      );
    // The runtime shows a container running a moment before the kubelet's status does (the etcd pod's
    // test waits on the runtime): the snapshot waits for the status, or it races the sync that writes it.
    for (const p of adoptable)
      await kubelet.waitForPod(p, "running before the kill", (pod) => status(pod, "app")?.state?.running);
    const before = { containers: await containers(), statuses: await statuses() };
    // Never edited, never crashed: its zero must survive the restart.
    expect(before.statuses[1]).toMatchObject({ pod: "e2e-run-after-backup", restartCount: 0 });
    await kubelet.stop("SIGKILL");
    kubelet = await start();
    // The first status of the new kubelet comes from its first sync of each pod: what it decided is done.
    for (const p of adoptable)
      await kubelet.waitForPod(p, "running after the restart", (pod) => status(pod, "app")?.state?.running);
    expect(await statuses()).toEqual(before.statuses);
    expect(await containers()).toEqual(before.containers);
  });

  test("deleting the manifest removes the pod's containers and its sandbox", async () => {
    rmSync(join(manifests, "app.yaml"));
    await kubelet.waitFor(
      "app gone",
      async () =>
        (await rt.podContainers("e2e-run-app")).length === 0 && (await rt.podSandboxes("e2e-run-app")).length === 0,
      60_000,
    );
    expect(await rt.podContainers("e2e-run-app")).toEqual([]);
    expect(await rt.podSandboxes("e2e-run-app")).toEqual([]);
    expect(await kubelet.pod("e2e-run-app")).toBeUndefined();
  });

  test("SIGTERM stops the kubelet with exit 0 and leaves containers running", async () => {
    const etcdPod = await rt.running("e2e-run-etcd", "app");
    expect(await kubelet.stop("SIGTERM")).toBe(0);
    expect((await rt.running("e2e-run-etcd", "app"))?.id).toBe(etcdPod!.id);
  });
});
