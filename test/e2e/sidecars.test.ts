// Native sidecars (KEP-753) end to end, on each runtime of the matrix: an init container with restartPolicy Always
// starts in its place and the next init container waits for its startup probe; it runs beside the app and is
// restarted when killed, even in a restartPolicy Never pod; a Job-style pod ends Succeeded once its app is done,
// its sidecar stopped; deleting a pod stops the app before the sidecar (their preStop hooks write the order).
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type ApiPod, type Kubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

/** A loop that exits at once on SIGTERM (sh as PID 1 would otherwise ignore it and wait out the grace period). */
const LOOP = "trap 'exit 0' TERM; while true; do sleep 0.2; done";

describeOnRuntimes("sidecars", (services, rt) => {
  const node = staticPodNode("sc", services, rt, ["e2e-sc-web", "e2e-sc-job"]);
  const { write } = node;
  const marks = tempDir("sc-marks");
  let kubelet: Kubelet;
  const container = (name: string, script: string, extra: Record<string, unknown> = {}) => ({
    name,
    image: services.busybox,
    command: ["sh", "-c", script],
    volumeMounts: [
      { name: "shared", mountPath: "/shared" },
      { name: "marks", mountPath: "/marks" },
    ],
    ...extra,
  });
  const volumes = [
    { name: "shared", emptyDir: {} },
    { name: "marks", hostPath: { path: marks } },
  ];
  /** Writes its name to /marks/order when the kubelet stops it. */
  const marksStop = (name: string, delay = "") => ({
    lifecycle: { preStop: { exec: { command: ["sh", "-c", `${delay}echo ${name} >> /marks/order`] } } },
  });
  // The sidecar is up 2 s after it starts, as its startup probe finds; the second init container fails without it,
  // which fails the pod (restartPolicy Never).
  const proxy = container("proxy", `sleep 2; touch /shared/up; ${LOOP}`, {
    restartPolicy: "Always",
    startupProbe: { exec: { command: ["test", "-e", "/shared/up"] }, periodSeconds: 1, failureThreshold: 30 },
    ...marksStop("proxy"),
  });
  const status = (pod: ApiPod, name: string) =>
    [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
      (s) => s.name === name,
    );

  beforeAll(async () => {
    write("e2e-sc-web", {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 20,
      volumes,
      initContainers: [proxy, container("setup", "test -e /shared/up")],
      containers: [container("app", LOOP, marksStop("app", "sleep 1; "))],
    });
    kubelet = await node.start();
  });
  afterAll(() => removeDir(marks));

  test("a pod whose second init container needs its sidecar started runs, the sidecar started and ready", async () => {
    const pod = await kubelet.waitForPod("e2e-sc-web", "Running", (p) => p.status?.phase === "Running", 90_000);
    expect(status(pod, "setup")).toMatchObject({ restartCount: 0, state: { terminated: { exitCode: 0 } } });
    await kubelet.waitForPod("e2e-sc-web", "the sidecar started and ready", (p) => {
      const s = status(p, "proxy");
      return s?.state?.running && s.started && s.ready;
    });
    expect((await kubelet.pod("e2e-sc-web"))!.status!.conditions).toContainEqual(
      expect.objectContaining({ type: "Initialized", status: "True" }),
    );
    expect(await rt.running("e2e-sc-web", "app")).toBeDefined();
  }, 120_000);

  test("the sidecar runs beside the app and is restarted when killed, though the pod's restartPolicy is Never", async () => {
    const sidecar = (await kubelet.waitFor("the sidecar running", () => rt.running("e2e-sc-web", "proxy")))!;
    const app = (await rt.running("e2e-sc-web", "app"))!;
    await rt.runtime.stopContainer(sidecar.id, 0);
    const restarted = await kubelet.waitFor(
      "a new sidecar container",
      async () => {
        const now = await rt.running("e2e-sc-web", "proxy");
        return now && now.id !== sidecar.id ? now : undefined;
      },
      60_000,
    );
    expect(restarted.id).not.toBe(sidecar.id);
    expect((await rt.running("e2e-sc-web", "app"))?.id).toBe(app.id);
    const pod = await kubelet.waitForPod("e2e-sc-web", "the sidecar restarted once", (p) => {
      const s = status(p, "proxy");
      return s?.restartCount === 1 && s.state?.running;
    });
    expect(pod.status?.phase).toBe("Running");
  }, 90_000);

  test("a Job-style pod with a sidecar ends Succeeded once its app is done, the sidecar stopped", async () => {
    write("e2e-sc-job", {
      restartPolicy: "Never",
      volumes,
      initContainers: [{ ...proxy, lifecycle: undefined }],
      containers: [container("work", "sleep 1; exit 0")],
    });
    const pod = await kubelet.waitForPod("e2e-sc-job", "Succeeded", (p) => p.status?.phase === "Succeeded", 90_000);
    expect(status(pod, "work")).toMatchObject({ state: { terminated: { exitCode: 0 } } });
    expect(status(pod, "proxy")?.state?.running).toBeUndefined();
    expect(await rt.running("e2e-sc-job", "proxy")).toBeUndefined();
  }, 120_000);

  test("deleting the pod stops the app before the sidecar", async () => {
    rmSync(join(node.manifests, "e2e-sc-web.yaml"));
    await kubelet.waitFor(
      "the pod's containers gone",
      async () => (await rt.podContainers("e2e-sc-web")).length === 0,
      60_000,
    );
    // The app's preStop hook takes a second: had the sidecar been stopped beside it, its mark would come first.
    expect(readFileSync(join(marks, "order"), "utf8")).toBe("app\nproxy\n");
  }, 90_000);
});
