// Runtime calls are timed and counted under the real kubelet's operation names.
import { describe, expect, test } from "bun:test";
import { noopMetrics, type KubeletMetrics } from "../metrics.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../testing/cri-configs.ts";
import { instrumentRuntime } from "./instrumented.ts";

function recording() {
  const recorded: Array<[string, boolean]> = [];
  const metrics: KubeletMetrics = {
    ...noopMetrics,
    runtimeOperation: (operation, seconds, failed) => {
      expect(seconds).toBeGreaterThanOrEqual(0);
      recorded.push([operation, failed]);
    },
  };
  return { recorded, metrics };
}

describe("instrumented runtime", () => {
  test("records each call under the Go kubelet's CRI operation name and whether it failed", async () => {
    const fake = new FakeRuntime();
    const { recorded, metrics } = recording();
    const runtime = instrumentRuntime(fake, metrics);
    const sandbox = testSandboxConfig("u", "p");
    const sandboxId = await runtime.runPodSandbox(sandbox);
    const config = testContainerConfig(sandbox, "app", 0, "local/busybox:stable", ["sleep", "60"]);
    const id = await runtime.createContainer(sandboxId, config, sandbox);
    await runtime.startContainer(id);
    await runtime.listContainers();
    await runtime.exec(id, ["true"]);
    await expect(runtime.inspectContainer("missing")).rejects.toMatchObject({ code: "NotFound" });
    await runtime.imageStatus("busybox");
    await runtime.pullImage("busybox");
    await runtime.stopContainer(id, 1);
    await runtime.removeContainer(id);
    await runtime.listPodSandboxes();
    await runtime.podSandboxStatus(sandboxId);
    await runtime.stopPodSandbox(sandboxId);
    await runtime.removePodSandbox(sandboxId);
    await runtime.imageFsInfo();
    await runtime.version();
    await runtime.status();
    expect(recorded).toEqual([
      ["run_podsandbox", false],
      ["create_container", false],
      ["start_container", false],
      ["list_containers", false],
      ["exec_sync", false],
      ["container_status", true],
      ["image_status", false],
      ["pull_image", false],
      ["stop_container", false],
      ["remove_container", false],
      ["list_podsandbox", false],
      ["podsandbox_status", false],
      ["stop_podsandbox", false],
      ["remove_podsandbox", false],
      ["image_fs_info", false],
      ["version", false],
      ["status", false],
    ]);
  });

  test("passes streams through unmeasured", async () => {
    const fake = new FakeRuntime();
    const { recorded, metrics } = recording();
    const runtime = instrumentRuntime(fake, metrics);
    const id = fake.seed({ name: "k8s_app_p_default_u_0", image: "x", labels: {} });
    fake.setLogs(id, "hello\n");
    let text = "";
    for await (const chunk of runtime.logs(id)) text += new TextDecoder().decode(chunk);
    expect(text).toBe("hello\n");
    expect(recorded).toEqual([]);
  });

  test("counts a followed log stream as open until its reader leaves", async () => {
    const fake = new FakeRuntime();
    let open = 0;
    const runtime = instrumentRuntime(fake, { ...noopMetrics, runtimeStream: (_type, delta) => (open += delta) });
    const id = fake.seed(
      { name: "k8s_app_p_default_u_0", image: "x", labels: {} },
      { running: true, state: "CONTAINER_RUNNING" },
    );
    fake.setLogs(id, "hello\n");
    const abort = new AbortController();
    const stream = runtime.logs(id, { follow: true, signal: abort.signal })[Symbol.asyncIterator]();
    expect(new TextDecoder().decode((await stream.next()).value)).toBe("hello\n");
    expect(open).toBe(1);
    const pending = stream.next(); // waits for a line that never comes, as a follow does
    abort.abort();
    expect((await pending).done).toBe(true);
    expect(open).toBe(0);
  });

  test("times exec and attach set-ups as exec and attach, and counts each session as open until it is closed", async () => {
    const fake = new FakeRuntime();
    const { recorded, metrics } = recording();
    const open: Record<string, number> = { exec: 0, attach: 0 };
    const runtime = instrumentRuntime(fake, { ...metrics, runtimeStream: (type, delta) => (open[type]! += delta) });
    const id = fake.seed(
      { name: "k8s_app_p_default_u_0", image: "x", labels: {} },
      { running: true, state: "CONTAINER_RUNNING" },
    );
    const exec = await runtime.execStream(id, ["sh"], { stdout: true });
    const attach = await runtime.attach(id, { stdout: true });
    expect(recorded).toEqual([
      ["exec", false],
      ["attach", false],
    ]);
    expect(open).toEqual({ exec: 1, attach: 1 });
    exec.close();
    exec.close();
    attach.close();
    expect(open).toEqual({ exec: 0, attach: 0 });
  });
});
