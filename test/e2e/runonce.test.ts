// `kubelet runonce` end to end on each runtime of the matrix: the compiled binary runs the example
// pods (pulling busybox through the loopback registry), adopts them on a second run, and reports
// a pull failure and an invalid manifest while the good pods still start.
import { afterAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { describeOnRuntimes, removeDir, runBinary, tempDir, test } from "./harness.ts";

describeOnRuntimes("kubelet runonce", (services, rt) => {
  const rootDir = tempDir("runonce");
  const flags = rt.flags(rootDir);
  const writeOkPod = (dir: string) =>
    writeFileSync(
      join(dir, "ok.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-once-ok }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - { name: app, image: ${services.busybox}, command: ["sleep", "600"] }
`,
    );
  // Removed first, so its running afterwards is this run's doing.
  const freshOkPod = async (dir: string) => {
    await rt.removePods("e2e-once-ok");
    writeOkPod(dir);
  };
  const okRunning = async () => (await rt.running("e2e-once-ok", "app")) !== undefined;
  afterAll(async () => {
    await rt.removePods("web", "worker", "legacy-sleeper", "e2e-once-badimage", "e2e-once-ok");
    removeDir(rootDir);
  });

  test("starts every example pod in testdata/pods, prints the table naming the runtime, and a second run adopts them", async () => {
    const first = runBinary(["runonce", "-c", "testdata/pods", ...flags, "--runonce_timeout", "90s"]);
    expect(first.stdout).toMatch(
      rt.kind === "docker"
        ? /^RUNTIME docker \S+ \(Docker Engine at unix:\/\//m
        : /^RUNTIME containerd \S+ \(CRI runtime at unix:\/\//m,
    );
    expect(first.stdout).toContain("default/web");
    expect(first.stdout).toContain("3 pods running or completed");
    expect(first.code).toBe(0);
    const running = [];
    const sandboxes = [];
    for (const [pod, container] of [
      ["web", "httpd"],
      ["worker", "worker"],
      ["legacy-sleeper", "sleeper"],
    ] as const) {
      const app = await rt.running(pod, container);
      expect(app?.name).toMatch(new RegExp(`^k8s_${container}_${pod}_default_[0-9a-f-]+_0$`));
      const sandbox = await rt.readySandbox(pod);
      expect(sandbox?.metadata).toMatchObject({ name: pod, namespace: "default", attempt: 0 });
      running.push(app!.id);
      sandboxes.push(sandbox!.id);
    }

    const second = runBinary(["runonce", "-c", "testdata/pods", ...flags, "--runonce_timeout", "90s"]);
    expect(second.code).toBe(0);
    const after = (await Promise.all(["web", "worker", "legacy-sleeper"].map((p) => rt.podContainers(p)))).flat();
    expect(after.filter((c) => c.state === "CONTAINER_RUNNING").map((c) => c.id)).toEqual(
      expect.arrayContaining(running),
    );
    expect(after.every((c) => c.labels["io.kubernetes.container.restartCount"] === "0")).toBe(true);
    const sandboxesAfter = await Promise.all(["web", "worker", "legacy-sleeper"].map((p) => rt.readySandbox(p)));
    expect(sandboxesAfter.map((s) => s?.id)).toEqual(sandboxes);
  });

  test("fails with exit 1 and names the image when a pod's image cannot be pulled", async () => {
    const dir = tempDir("runonce-bad");
    writeFileSync(
      join(dir, "bad.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-once-badimage }
spec:
  containers:
    - { name: app, image: "${services.registry}/no/such-image:1.0", command: ["sleep", "60"] }
`,
    );
    await freshOkPod(dir);
    const result = runBinary(["runonce", "-c", dir, ...flags, "--runonce_timeout", "20s"]);
    removeDir(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/ErrImagePull|ImagePullBackOff/);
    expect(result.stdout).toContain("such-image");
    // The good pod next to the bad one still runs.
    expect(await okRunning()).toBe(true);
  });

  test("reports an invalid manifest with file and field path, exits 1, and still starts the valid pods", async () => {
    const dir = tempDir("runonce-invalid");
    writeFileSync(
      join(dir, "broken.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-once-broken }
spec:
  containers:
    - { name: app }
`,
    );
    await freshOkPod(dir);
    const result = runBinary(["runonce", "-c", dir, ...flags, "--runonce_timeout", "20s"]);
    removeDir(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("broken.yaml");
    expect(result.stdout).toContain("spec.containers[0].image: Required value");
    expect(await okRunning()).toBe(true);
  });
});

describeWithServices("kubelet runonce flags", (services) => {
  test("refuses --etcd_servers with a usage error (exit 2)", () => {
    const result = runBinary(["runonce", "-c", "testdata/pods", "--etcd_servers", services.etcd]);
    expect(result.code).toBe(2);
  });
});
