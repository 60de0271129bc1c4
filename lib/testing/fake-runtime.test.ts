// The fake runtime keeps the same contract as the real Docker runtime, and its test hooks work on fake time.
import { describe, expect, test } from "bun:test";
import { CONTRACT_SCRIPTS, runtimeContract } from "./runtime-contract.ts";
import { LABEL, type ExecResult } from "../container/runtime.ts";
import { FakeClock } from "./fake-clock.ts";
import { testContainerConfig, testSandboxConfig } from "./cri-configs.ts";
import { FakeRuntime } from "./fake-runtime.ts";

const scripts = Object.values(CONTRACT_SCRIPTS);
const scripted = (cmd: string[] | undefined) => scripts.find((s) => JSON.stringify(s.cmd) === JSON.stringify(cmd));

runtimeContract(
  "FakeRuntime",
  () => {
    const runtime = new FakeRuntime();
    runtime.program = (config) => scripted(config.command)?.program;
    runtime.execHandler = async (_id, cmd): Promise<ExecResult> => {
      const script = scripted(cmd);
      if (script && "exec" in script) {
        await runtime.clock.sleep(("takesMs" in script.exec ? script.exec.takesMs : 0) ?? 0);
        return script.exec.result;
      }
      return { exitCode: cmd[0] === "true" ? 0 : 127, stdout: "", stderr: "" };
    };
    return runtime;
  },
  { image: "local/busybox:stable", prefix: "fake-" },
);

describe("FakeRuntime hooks", () => {
  /** A created container of pod web, in its sandbox. */
  const created = async (runtime: FakeRuntime) => {
    const sandbox = testSandboxConfig("u1", "web");
    const id = await runtime.runPodSandbox(sandbox);
    return runtime.createContainer(
      id,
      testContainerConfig(sandbox, "app", 0, "local/busybox:stable", ["sleep", "60"]),
      sandbox,
    );
  };

  test("seeds containers, and lists only those with a dockershim name and a pod uid label", async () => {
    const runtime = new FakeRuntime();
    const image = "local/busybox:stable";
    const mine = runtime.seed({ name: "k8s_app_web_default_u1_0", image, labels: { [LABEL.podUid]: "u1" } });
    runtime.seed({ name: "k8s_app_web_default_u2_0", image, labels: {} });
    runtime.seed({ name: "stranger", image, labels: { [LABEL.podUid]: "u1" } });
    expect((await runtime.listContainers()).map((c) => c.id)).toEqual([mine]);
  });

  test("a programmed container prints and exits on fake time", async () => {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    runtime.program = () => ({
      output: [
        { atMs: 0, text: "hello\n" },
        { atMs: 5000, text: "bye\n" },
      ],
      exitCode: 2,
    });
    const id = await created(runtime);
    await runtime.startContainer(id);
    await clock.advance(0);
    expect(runtime.logsOf(id)).toBe("hello\n");
    await clock.advance(5000);
    expect(runtime.logsOf(id)).toBe("hello\nbye\n");
    expect(await runtime.inspectContainer(id)).toMatchObject({ running: false, exitCode: 2 });
  });

  test("exit() ends a container, OOM-killed if asked, with a ContainerDied event", async () => {
    const runtime = new FakeRuntime(new FakeClock());
    const abort = new AbortController();
    const id = await created(runtime);
    await runtime.startContainer(id);
    const events = runtime.events(abort.signal)[Symbol.asyncIterator]();
    const next = events.next();
    runtime.exit(id, 137, { oomKilled: true });
    expect((await next).value).toMatchObject({ type: "ContainerDied", containerId: id });
    abort.abort();
    expect(await runtime.inspectContainer(id)).toMatchObject({
      running: false,
      exitCode: 137,
      oomKilled: true,
      state: "CONTAINER_EXITED",
    });
  });

  test("failNext fails one call; an unavailable runtime fails every call", async () => {
    const runtime = new FakeRuntime();
    runtime.failNext("listContainers", new Error("boom"));
    await expect(runtime.listContainers()).rejects.toThrow("boom");
    expect(await runtime.listContainers()).toEqual([]);
    runtime.available = false;
    await expect(runtime.status()).rejects.toMatchObject({ code: "RuntimeUnavailable" });
    expect(runtime.calls.map((c) => c.method)).toEqual(["listContainers", "listContainers", "status"]);
  });

  test("a pull takes pullDelayMs of fake time, then the image is present", async () => {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    runtime.pullDelayMs = 2000;
    let done = false;
    void runtime.pullImage("busybox:1.35").then(() => (done = true));
    await clock.advance(1999);
    expect(done).toBe(false);
    await clock.advance(1);
    expect(done).toBe(true);
    expect((await runtime.imageStatus("busybox:1.35"))?.id).toBe("sha256:busybox:1.35");
  });

  test("logs honour since and timestamps", async () => {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    const id = await created(runtime);
    runtime.writeLogs(id, "old\n");
    await clock.advance(10_000);
    runtime.writeLogs(id, "new\n");
    let text = "";
    for await (const chunk of runtime.logs(id, { since: clock.now() / 1000, timestamps: true }))
      text += new TextDecoder().decode(chunk);
    expect(text).toBe(`${new Date(clock.now()).toISOString()} new\n`);
  });
});
