// The same source under Deno (`deno run -A bin/kubelet.ts`), against the same dockerd: validate,
// print-config, runonce, and run with the file source and the info server (Deno.serve, with a
// streamed exec through its WebSocket upgrade).
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connectChannels } from "../../lib/testing/channel-client.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import {
  baseFlags,
  freePort,
  KubeletProcess,
  podContainers,
  removeDir,
  removePods,
  runBinary,
  tempDir,
  waitFor,
} from "./harness.ts";

const root = join(import.meta.dir, "../..");
const DENO = [join(root, "node_modules/.bin/deno"), "run", "-A", join(root, "bin/kubelet.ts")];

describeWithServices("kubelet under deno run -A bin/kubelet.ts", (services) => {
  const manifests = tempDir("deno-manifests");
  const rootDir = tempDir("deno-root");
  const pod = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - { name: app, image: ${services.busybox}, command: ["sleep", "600"] }
`;
  const running = (name: string) =>
    podContainers(services, name).find(
      (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
    );
  afterAll(() => {
    removePods(services, "e2e-deno-once", "e2e-deno-run");
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("reports the deno runtime in --version", () => {
    const result = runBinary(["--version"], { command: DENO });
    expect(result.stdout).toMatch(/^kubelet v\d+\.\d+\.\d+ \(commit dev, deno \d+\.\d+\.\d+\)\n$/);
    expect(result.code).toBe(0);
  });

  test("validates the example manifests, and names the field of an invalid one", () => {
    const ok = runBinary(["validate", join(root, "testdata/pods")], { command: DENO });
    expect(ok.stdout).toContain("3 pods valid, 0 invalid");
    expect(ok.code).toBe(0);
    const bad = runBinary(["validate", "-"], {
      command: DENO,
      input: "apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec: { containers: [{ name: a }] }\n",
    });
    expect(bad.stdout).toContain("spec.containers[0].image: Required value");
    expect(bad.code).toBe(1);
  });

  test("prints the effective configuration with its origins", () => {
    const result = runBinary(["print-config", "--sync_frequency", "1m30s", "--show-origin"], { command: DENO });
    expect(result.stdout).toContain("sync_frequency: 1m30s  # flag");
    expect(result.stdout).toContain("port: 10250  # default");
    expect(result.code).toBe(0);
  });

  test("runonce starts a pod on the real dockerd and exits 0", () => {
    const dir = tempDir("deno-once");
    writeFileSync(join(dir, "once.yaml"), pod("e2e-deno-once"));
    const result = runBinary(["runonce", "-c", dir, ...baseFlags(services, rootDir), "--runonce_timeout", "60s"], {
      command: DENO,
    });
    removeDir(dir);
    expect(result.stdout).toContain("default/e2e-deno-once");
    expect(result.code).toBe(0);
    expect(running("e2e-deno-once")).toBeTruthy();
  });

  test("run keeps a watched manifest's pod running, serves /healthz, /pods and a streamed /exec (Deno's WebSocket upgrade), and stops on SIGTERM", async () => {
    const port = await freePort();
    writeFileSync(join(manifests, "run.yaml"), pod("e2e-deno-run"));
    const kubelet = new KubeletProcess(
      ["run", "-c", manifests, ...baseFlags(services, rootDir), "--port", String(port), "--sync_frequency", "2s"],
      DENO,
    );
    try {
      await waitFor("the pod's container to run", () => running("e2e-deno-run"), 60_000);
      const health = await waitFor("/healthz", async () => {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        return response.ok ? response.text() : undefined;
      });
      expect(health).toBe("ok");
      const list = (await (await fetch(`http://127.0.0.1:${port}/pods`)).json()) as {
        items: Array<{ metadata: { name: string }; status: { phase: string } }>;
      };
      expect(list.items.find((p) => p.metadata.name === "e2e-deno-run")?.status.phase).toBe("Running");
      const script = encodeURIComponent("read x; echo got $x; echo err >&2; exit 3");
      const exec = await connectChannels(
        `http://127.0.0.1:${port}/exec/default/e2e-deno-run/app?command=sh&command=-c&command=${script}&input=1&output=1&error=1`,
      );
      exec.send(0, "deno\n");
      const { status } = await exec.finished;
      expect([exec.text(1), exec.text(2)]).toEqual(["got deno\n", "err\n"]);
      expect(status).toMatchObject({ reason: "NonZeroExitCode", details: { causes: [{ message: "3" }] } });
    } finally {
      expect(await kubelet.stop()).toBe(0);
    }
    expect(kubelet.output).toContain("kubelet stopped; containers left running");
    expect(running("e2e-deno-run")).toBeTruthy();
  }, 90_000);
});
