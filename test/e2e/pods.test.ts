// What the kubelet makes of a pod spec on each runtime of the matrix: probes (exec and HTTP, run in
// the kubelet), lifecycle hooks, and image pulls through the loopback registry: the pull policies,
// --registry_qps, and a registry outage.
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type ApiPod,
  describeOnRuntimes,
  docker,
  freePort,
  type Kubelet,
  removeDir,
  runBinary,
  startKubelet,
  tempDir,
  test,
} from "./harness.ts";

const ready = (p: ApiPod) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
const app = (p: ApiPod) => p.status?.containerStatuses?.find((s) => s.name === "app");

describeOnRuntimes("pods", (services, rt) => {
  const rootDir = tempDir("pods-root");
  const manifests = tempDir("pods-manifests");
  const pods = [
    "e2e-probe-exec",
    "e2e-probe-http",
    "e2e-hooks",
    "e2e-pull-never",
    "e2e-pull-ifnotpresent",
    "e2e-pull-always",
    "e2e-pull-present",
    "e2e-qps-0",
    "e2e-qps-1",
    "e2e-qps-2",
    "e2e-outage",
  ];
  let kubelet: Kubelet;
  const manifest = (name: string, body: string, meta = "") =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: { name: ${name}${meta} }
spec:
  terminationGracePeriodSeconds: 1
${body}`,
    );
  /** Pushes busybox to the loopback registry as `image`, and leaves no copy in dockerd (containerd never had one). */
  const publish = (image: string) => {
    docker(services, "tag", services.busybox, image);
    docker(services, "push", image);
    docker(services, "rmi", image);
  };
  const pullingEvents = async (pod: string) => {
    const events = (await (await kubelet.api("/events")).json()) as {
      items: Array<{ reason: string; message: string; involvedObject: { name: string } }>;
    };
    return events.items.filter((e) => e.involvedObject.name === pod && e.reason === "Pulling");
  };

  beforeAll(async () => {
    kubelet = await startKubelet(["run", "-c", manifests, ...rt.flags(rootDir), "--sync_frequency", "2s"]);
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(...pods);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("an exec readiness probe makes the pod Ready; failing its liveness probe restarts the container", async () => {
    manifest(
      "e2e-probe-exec",
      `  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 3600"]
      readinessProbe: { exec: { command: ["test", "-e", "/tmp/healthy"] }, periodSeconds: 1 }
      livenessProbe: { exec: { command: ["test", "-e", "/tmp/healthy"] }, periodSeconds: 1, failureThreshold: 2 }
`,
    );
    await kubelet.waitForPod("e2e-probe-exec", "Ready", ready, 20_000);
    const restarted = await kubelet.waitForPod(
      "e2e-probe-exec",
      "a restart after the liveness failures",
      (p) => app(p)?.restartCount === 1 && app(p)?.state?.running,
      30_000,
    );
    expect(app(restarted)?.lastState?.terminated).toBeDefined();
    const attempts = (await rt.podContainers("e2e-probe-exec")).filter(
      (c) => c.labels["io.kubernetes.container.name"] === "app",
    );
    expect(attempts.map((c) => c.labels["io.kubernetes.container.restartCount"]).sort()).toEqual(["0", "1"]);
  });

  test("an HTTP readiness probe on a host-network pod is sent by the kubelet (no curl in the image)", async () => {
    const port = await freePort();
    manifest(
      "e2e-probe-http",
      `  hostNetwork: true
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "mkdir -p /www && echo ok > /www/ready && exec httpd -f -p 127.0.0.1:${port} -h /www"]
      readinessProbe: { httpGet: { host: 127.0.0.1, port: ${port}, path: /ready }, periodSeconds: 1 }
`,
    );
    const pod = await kubelet.waitForPod("e2e-probe-http", "Ready", ready, 20_000);
    expect(app(pod)?.ready).toBe(true);
    expect(await (await fetch(`http://127.0.0.1:${port}/ready`)).text()).toBe("ok\n");
  });

  test("runs postStart after the start and preStop before the stop, within the grace period", async () => {
    const marks = tempDir("pods-hooks-marks");
    try {
      manifest(
        "e2e-hooks",
        `  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "trap 'echo term >> /marks/log; exit 0' TERM; while true; do sleep 0.1; done"]
      lifecycle:
        postStart: { exec: { command: ["sh", "-c", "echo post-start >> /marks/log"] } }
        preStop: { exec: { command: ["sh", "-c", "echo pre-stop >> /marks/log"] } }
      volumeMounts: [{ name: marks, mountPath: /marks }]
  volumes: [{ name: marks, hostPath: { path: ${marks} } }]
`,
      );
      await kubelet.waitFor("postStart", () => readFileSync(join(marks, "log"), "utf8").includes("post-start"), 20_000);
      rmSync(join(manifests, "e2e-hooks.yaml"));
      await kubelet.waitFor("the pod gone", async () => (await rt.podContainers("e2e-hooks")).length === 0, 30_000);
      expect(readFileSync(join(marks, "log"), "utf8").split("\n").filter(Boolean)).toEqual([
        "post-start",
        "pre-stop",
        "term",
      ]);
    } finally {
      removeDir(marks);
    }
  });

  test("pull policies through the registry: Never waits for the image, IfNotPresent pulls once, Always pulls again", async () => {
    const image = `${services.registry}/policy/app${Date.now()}:1`;
    publish(image);
    const pod = (policy: string) => `  containers:
    - { name: app, image: "${image}", imagePullPolicy: ${policy}, command: ["sleep", "3600"] }
`;
    manifest("e2e-pull-never", pod("Never"));
    const never = await kubelet.waitForPod(
      "e2e-pull-never",
      "ErrImageNeverPull",
      (p) => app(p)?.state?.waiting?.reason === "ErrImageNeverPull",
    );
    expect(app(never)?.state?.waiting?.message).toContain(`Container image "${image}" is not present`);

    manifest("e2e-pull-ifnotpresent", pod("IfNotPresent"));
    await kubelet.waitForPod("e2e-pull-ifnotpresent", "running", (p) => app(p)?.state?.running);
    expect(await pullingEvents("e2e-pull-ifnotpresent")).toHaveLength(1);
    // Once the image is there, the Never pod uses it.
    await kubelet.waitForPod("e2e-pull-never", "running with the pulled image", (p) => app(p)?.state?.running);
    expect(await pullingEvents("e2e-pull-never")).toHaveLength(0);

    manifest("e2e-pull-always", pod("Always"));
    await kubelet.waitForPod("e2e-pull-always", "running", (p) => app(p)?.state?.running);
    expect((await pullingEvents("e2e-pull-always")).map((e) => e.message)).toEqual([`Pulling image "${image}"`]);

    manifest("e2e-pull-present", pod("IfNotPresent"));
    await kubelet.waitForPod("e2e-pull-present", "running", (p) => app(p)?.state?.running);
    expect(await pullingEvents("e2e-pull-present")).toHaveLength(0);
  });

  test("a registry outage becomes ImagePullBackOff and the pod starts once the image can be pulled", async () => {
    const image = `${services.registry}/outage/app${Date.now()}:1`;
    manifest("e2e-outage", `  containers: [{ name: app, image: "${image}", command: ["sleep", "3600"] }]\n`);
    const backingOff = await kubelet.waitForPod(
      "e2e-outage",
      "ImagePullBackOff",
      (p) => app(p)?.state?.waiting?.reason === "ImagePullBackOff",
      20_000,
    );
    expect(app(backingOff)?.state?.waiting?.message).toContain(image);
    publish(image);
    const started = await kubelet.waitForPod(
      "e2e-outage",
      "running after the back-off",
      (p) => app(p)?.state?.running,
      40_000,
    );
    expect(app(started)).toMatchObject({ restartCount: 0, state: { running: { startedAt: expect.any(String) } } });
  }, 90_000);

  // Last: a kubelet stops the pods it does not know, so the shared one must not watch this runonce's.
  test("pulls through the registry honour --registry_qps", async () => {
    expect(await kubelet.stop()).toBe(0);
    const dir = tempDir("pods-qps");
    const tag = Date.now();
    for (let i = 0; i < 3; i++) {
      publish(`${services.registry}/qps/app${i}:${tag}`);
      writeFileSync(
        join(dir, `p${i}.yaml`),
        `apiVersion: v1
kind: Pod
metadata: { name: e2e-qps-${i} }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: "${services.registry}/qps/app${i}:${tag}", command: ["sleep", "3600"] }]
`,
      );
    }
    const started = Date.now();
    const result = runBinary([
      "runonce",
      "-c",
      dir,
      ...rt.flags(rootDir),
      "--registry_qps",
      "1",
      "--registry_burst",
      "1",
      "--runonce_timeout",
      "60s",
    ]);
    removeDir(dir);
    expect(result.stdout).toContain("3 pods running");
    // Three pulls at one per second with a burst of one cannot finish in under two seconds.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  }, 60_000);
});
