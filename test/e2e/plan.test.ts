// `kubelet plan` end to end: the compiled binary against the real dockerd on an empty node, after a
// change of image and on a converged node — and Docker's state (and event stream) untouched by each.
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { baseFlags, docker, removeDir, removePods, runBinary, startKubelet, tempDir } from "./harness.ts";

describeWithServices("kubelet plan on the real Docker Engine", (services) => {
  const manifests = tempDir("plan-manifests");
  const rootDir = tempDir("plan-root");
  afterAll(() => {
    removePods(services, "e2e-plan");
    removeDir(manifests);
    removeDir(rootDir);
  });
  const flags = () => ["-c", manifests, ...baseFlags(services, rootDir), "--network_container_image", services.pause];
  const write = (image: string) =>
    writeFileSync(
      join(manifests, "plan.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-plan }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${image}
      imagePullPolicy: IfNotPresent
      command: ["sleep", "3600"]
`,
    );
  /** Everything a side effect would change: containers (with state), images, volumes, networks. */
  const dockerState = () =>
    [
      docker(services, "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}} {{.Image}} {{.State}} {{.Labels}}"),
      docker(services, "images", "-a", "--no-trunc", "--format", "{{.ID}} {{.Repository}}:{{.Tag}}"),
      docker(services, "volume", "ls", "-q"),
      docker(services, "network", "ls", "-q"),
    ]
      .map((section) => section.split("\n").sort().join("\n")) // Docker lists images of one id in any order
      .join("\n---\n");
  /** Runs plan and checks that Docker's state and event stream show nothing happened. */
  const plan = (...extra: string[]) => {
    const before = dockerState();
    const since = docker(services, "system", "info", "--format", "{{.SystemTime}}");
    const result = runBinary(["plan", ...flags(), ...extra]);
    const until = docker(services, "system", "info", "--format", "{{.SystemTime}}");
    expect(dockerState()).toBe(before);
    expect(docker(services, "events", "--since", since, "--until", until, "--format", "{{.Type}} {{.Action}}")).toBe(
      "",
    );
    return result;
  };

  test("on an empty node: the pod would be created (exit 2), and nothing is touched", () => {
    removePods(services, "e2e-plan");
    write(services.busybox);
    const result = plan();
    expect(result.stdout).toContain("pod default/e2e-plan");
    expect(result.stdout).toContain("create-pod: not on the node");
    expect(result.stdout).toContain(`start-container app (${services.busybox}): new`);
    expect(result.code).toBe(2);
  });

  test("on a converged node: exit 0 and no output but `no changes`", () => {
    const run = runBinary(["runonce", ...flags(), "--runonce_timeout", "60s"]);
    expect(run.code).toBe(0);
    const result = plan();
    expect(result.stdout).toBe("no changes\n");
    expect(result.code).toBe(0);
  });

  test("after a change of image: the container would be replaced, naming the field and the pull (exit 2; -o json)", () => {
    write(`${services.registry}/e2e/plan-missing:1`);
    const result = plan();
    expect(result.stdout).toContain("replace-container app");
    expect(result.stdout).toContain("spec changed: image");
    expect(result.stdout).toContain(`pull-image ${services.registry}/e2e/plan-missing:1: not present`);
    expect(result.code).toBe(2);
    const json = JSON.parse(plan("-o", "json").stdout) as {
      changes: boolean;
      pods: Array<{ actions: Array<{ action: string; fields?: string[] }> }>;
    };
    expect(json.changes).toBe(true);
    expect(json.pods[0]!.actions.find((a) => a.action === "replace-container")?.fields).toEqual(["image"]);
  });

  test("an invalid manifest is an error (exit 1) naming the file and the field", () => {
    writeFileSync(
      join(manifests, "broken.yaml"),
      "apiVersion: v1\nkind: Pod\nmetadata: { name: e2e-plan-broken }\nspec: { containers: [{ name: c }] }\n",
    );
    const result = plan();
    expect(result.stdout).toContain(`invalid pod default/e2e-plan-broken in ${join(manifests, "broken.yaml")}`);
    expect(result.stdout).toContain("spec.containers[0].image: Required value");
    expect(result.code).toBe(1);
  });

  test("a container backing off shows as waiting with the back-off the kubelet persisted, not as a restart", async () => {
    const crashManifests = tempDir("plan-crash-manifests");
    const crashFlags = [
      "-c",
      crashManifests,
      ...baseFlags(services, rootDir),
      "--network_container_image",
      services.pause,
    ];
    const app = { name: "app", image: services.busybox, command: ["sh", "-c", "exit 1"] };
    const spec = { terminationGracePeriodSeconds: 1, containers: [app] };
    // JSON is YAML: the file source reads it as such.
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "e2e-plan-crash" }, spec };
    writeFileSync(join(crashManifests, "crash.yaml"), JSON.stringify(pod));
    try {
      const kubelet = await startKubelet(["run", ...crashFlags]);
      // The second back-off (20 s) leaves the plan below ample time to run inside it.
      await kubelet.waitForPod(
        "e2e-plan-crash",
        "backing off 20s",
        (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.message?.includes("back-off 20s"),
        60_000,
      );
      await kubelet.stop();
      const result = runBinary(["plan", ...crashFlags]);
      expect(result.stdout).toContain(
        "!   wait app: CrashLoopBackOff: back-off 20s restarting failed container=app pod=e2e-plan-crash_default(",
      );
      expect(result.stdout).not.toContain("restart-container");
      expect(result.code).toBe(0);
    } finally {
      removePods(services, "e2e-plan-crash");
      removeDir(crashManifests);
    }
  }, 90_000);
});
