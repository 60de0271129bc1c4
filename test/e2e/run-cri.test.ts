// `kubelet run --container_runtime remote` end to end on the private containerd: a crash-looping
// pod restarts with back-off, its logs (current and previous) are the CRI log files read by the
// kubelet, exec goes through the CRI, /spec and /metrics name the runtime, and after kill -9 a new
// kubelet adopts what runs: same container ids, zero restarts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCriClient } from "../../lib/container/cri-client.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { freePort, KubeletProcess, removeDir, tempDir, waitFor } from "./harness.ts";

const PODS = ["e2e-cri-steady", "e2e-cri-crasher"];

describeWithServices("kubelet run on containerd", (services) => {
  const dir = tempDir("run-cri-manifests");
  const rootDir = tempDir("run-cri-root");
  const client = createCriClient({ runtimeEndpoint: services.containerd, requestTimeoutMs: 30_000 });
  let port = 0;
  let kubelet: KubeletProcess;
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;
  const start = () =>
    new KubeletProcess([
      "run",
      "-c",
      dir,
      "--container_runtime",
      "remote",
      "--container_runtime_endpoint",
      services.containerd,
      "--pod_logs_dir",
      join(rootDir, "logs"),
      "--root_dir",
      rootDir,
      "--port",
      String(port),
      "--log_format",
      "json",
    ]);
  const containers = async (pod: string) =>
    (await client.listContainers()).filter((c) => c.labels["io.kubernetes.pod.name"] === pod);

  beforeAll(async () => {
    port = await freePort();
    writeFileSync(
      join(dir, "pods.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-cri-steady }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - { name: app, image: ${services.busybox}, command: ["sh", "-c", "echo ready; exec sleep 600"] }
---
apiVersion: v1
kind: Pod
metadata: { name: e2e-cri-crasher }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - { name: app, image: ${services.busybox}, command: ["sh", "-c", "echo attempt; exit 2"] }
`,
    );
    kubelet = start();
    await waitFor("server", async () => (await fetch(url("/healthz")).catch(() => undefined))?.status === 200, 20_000);
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    // A start the killed kubelet asked for may still be in flight ("container is in starting state").
    for (const s of await client.listPodSandbox())
      if (PODS.includes(s.labels["io.kubernetes.pod.name"] ?? "")) {
        await client.stopPodSandbox(s.id);
        await waitFor("sandbox removed", () =>
          client.removePodSandbox(s.id).then(
            () => true,
            () => false,
          ),
        );
      }
    client.close();
    removeDir(dir);
    removeDir(rootDir);
  });

  test("runs the pods, restarts the crashing one, and serves current and previous logs from the CRI log files", async () => {
    await waitFor("steady running", async () =>
      (await containers("e2e-cri-steady")).some((c) => c.state === "CONTAINER_RUNNING"),
    );
    await waitFor("crasher restarted", async () => (await containers("e2e-cri-crasher")).length >= 2, 30_000);
    expect(await (await fetch(url("/containerLogs/default/e2e-cri-steady/app"))).text()).toBe("ready\n");
    expect(await (await fetch(url("/containerLogs/default/e2e-cri-crasher/app?previous=true"))).text()).toBe(
      "attempt\n",
    );
  });

  test("runs a command in a container over the info server", async () => {
    const response = await fetch(
      url(`/run/default/e2e-cri-steady/app?command=sh&command=-c&command=${encodeURIComponent("echo hi; exit 3")}`),
      {
        method: "POST",
      },
    );
    expect(await response.text()).toBe("hi\n");
    expect(response.headers.get("x-exit-code")).toBe("3");
  });

  test("names the runtime in /spec and /metrics", async () => {
    expect(await (await fetch(url("/spec"))).json()).toMatchObject({
      container_runtime: expect.stringMatching(/^containerd:\/\//),
      container_runtime_type: "remote",
    });
    expect(await (await fetch(url("/metrics"))).text()).toMatch(
      /kubelet_runtime_operations_total\{operation_type="create_container",runtime_type="remote"\} \d+/,
    );
  });

  test("after kill -9, a new kubelet adopts the running pod: same container id, no restart", async () => {
    const before = (await containers("e2e-cri-steady")).filter((c) => c.state === "CONTAINER_RUNNING");
    expect(before).toHaveLength(1);
    await kubelet.stop("SIGKILL");
    kubelet = start();
    await waitFor("server", async () => (await fetch(url("/healthz")).catch(() => undefined))?.status === 200, 20_000);
    await waitFor("status", async () => {
      const pod = await (await fetch(url("/pods/default/e2e-cri-steady"))).json().catch(() => undefined);
      return pod?.status?.containerStatuses?.[0]?.state?.running !== undefined;
    });
    const pod = await (await fetch(url("/pods/default/e2e-cri-steady"))).json();
    expect(pod.status.containerStatuses[0]).toMatchObject({
      restartCount: 0,
      containerID: expect.stringContaining(before[0]!.id),
    });
    const after = (await containers("e2e-cri-steady")).filter((c) => c.state === "CONTAINER_RUNNING");
    expect(after.map((c) => c.id)).toEqual(before.map((c) => c.id));
  });
});
