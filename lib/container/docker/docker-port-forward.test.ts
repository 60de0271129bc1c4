import { describe, expect, test } from "bun:test";
import { createDockerPortForward, relayCommand } from "./docker-port-forward.ts";
import type { EngineContainerInspect } from "./docker-engine.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME } from "../runtime.ts";

/** An Engine whose one container is `inspect`. */
const engine = (inspect: Partial<EngineContainerInspect>) => ({
  inspectContainer: async () => inspect as EngineContainerInspect,
});
const sandbox = (over: { running?: boolean; pid?: number; networkMode?: string } = {}) => ({
  Config: { Labels: { [LABEL.containerName]: POD_INFRA_CONTAINER_NAME }, Image: "pause", Tty: false },
  State: { Running: over.running ?? true, Pid: over.pid ?? 1234 } as EngineContainerInspect["State"],
  HostConfig: { NetworkMode: over.networkMode ?? "none" },
});
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: Error & { code?: string }) => ({ code: error.code, message: error.message }),
  );

describe("Docker port forward", () => {
  test("the relay is socat where installed (as the dockershim), else busybox nc, else none", () => {
    expect(relayCommand(80, () => true)).toEqual(["socat", "-", "TCP4:127.0.0.1:80"]);
    expect(relayCommand(80, (name) => name === "busybox")).toEqual(["busybox", "nc", "127.0.0.1", "80"]);
    expect(relayCommand(80, () => false)).toBeUndefined();
  });

  test("a container that is no sandbox is NotFound, a stopped sandbox a Conflict", async () => {
    const app = { ...sandbox(), Config: { Labels: { [LABEL.containerName]: "app" }, Image: "x", Tty: false } };
    expect(await failure(createDockerPortForward({ timeoutMs: 1000 }, { engine: engine(app) })("abc", 80))).toEqual({
      code: "NotFound",
      message: "cannot forward port 80 of pod sandbox abc: abc is not a pod sandbox",
    });
    const stopped = createDockerPortForward({ timeoutMs: 1000 }, { engine: engine(sandbox({ running: false })) });
    expect((await failure(stopped("abc", 80)))?.code).toBe("Conflict");
  });

  test("without socat or busybox the error says what to install", async () => {
    const forward = createDockerPortForward({ timeoutMs: 1000 }, { engine: engine(sandbox()), onPath: () => false });
    expect(await failure(forward("abc", 80))).toEqual({
      code: "RuntimeError",
      message:
        "cannot forward port 80 of pod sandbox abc: reaching a port inside a pod's network namespace needs socat or busybox on the kubelet's PATH (install socat)",
    });
  });
});
