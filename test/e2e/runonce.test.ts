// `kubelet runonce` end to end: the compiled binary, the example pods, the real dockerd and registry.
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { baseFlags, podContainers, removeDir, removePods, runBinary, tempDir } from "./harness.ts";

describeWithServices("kubelet runonce", (services) => {
  const rootDir = tempDir("runonce");
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
  afterAll(() => {
    removePods(services, "web", "worker", "legacy-sleeper", "e2e-once-badimage", "e2e-once-ok");
    removeDir(rootDir);
  });

  test("starts every example pod in testdata/pods, pulling busybox through the registry, and exits 0", () => {
    const result = runBinary([
      "runonce",
      "-c",
      "testdata/pods",
      ...baseFlags(services, rootDir),
      "--runonce_timeout",
      "90s",
    ]);
    expect(result.stdout + result.stderr).toContain("web");
    expect(result.code).toBe(0);
    for (const [pod, container] of [
      ["web", "httpd"],
      ["worker", "worker"],
      ["legacy-sleeper", "sleeper"],
    ]) {
      const containers = podContainers(services, pod);
      const app = containers.find((c) => c.labels["io.kubernetes.container.name"] === container);
      expect(app?.state).toBe("running");
      expect(app?.name).toMatch(new RegExp(`^k8s_${container}_${pod}_default_[0-9a-f-]+_0$`));
      expect(containers.some((c) => c.name.startsWith(`k8s_POD_${pod}_default_`) && c.state === "running")).toBe(true);
    }
  });

  test("fails with exit 1 and names the image when a pod's image cannot be pulled", () => {
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
    writeOkPod(dir);
    const result = runBinary(["runonce", "-c", dir, ...baseFlags(services, rootDir), "--runonce_timeout", "20s"]);
    removeDir(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/ErrImagePull|ImagePullBackOff/);
    expect(result.stdout).toContain("such-image");
    // The good pod next to the bad one still runs.
    expect(
      podContainers(services, "e2e-once-ok").some(
        (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
      ),
    ).toBe(true);
  });

  test("reports an invalid manifest with file and field path, exits 1, and still starts the valid pods", () => {
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
    writeOkPod(dir);
    const result = runBinary(["runonce", "-c", dir, ...baseFlags(services, rootDir), "--runonce_timeout", "20s"]);
    removeDir(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("broken.yaml");
    expect(result.stdout).toContain("spec.containers[0].image: Required value");
    expect(
      podContainers(services, "e2e-once-ok").some(
        (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
      ),
    ).toBe(true);
  });

  test("refuses --etcd_servers with a usage error (exit 2)", () => {
    const result = runBinary(["runonce", "-c", "testdata/pods", "--etcd_servers", services.etcd]);
    expect(result.code).toBe(2);
  });
});
