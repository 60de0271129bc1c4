// The CRI's PortForward on the Docker Engine, the dockershim's way: a host-network sandbox's ports are the host's, so
// 127.0.0.1 is dialled directly; any other sandbox's port is reached inside its pause container's network namespace
// by a relay run under nsenter (socat, as the dockershim used, or busybox nc where socat is missing).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { connectTcp, pipeStream } from "../port-forward-stream.ts";
import { LABEL, POD_INFRA_CONTAINER_NAME, runtimeError, type PortForwardStream } from "../runtime.ts";
import { call, short } from "./docker-calls.ts";
import type { DockerEngine } from "./docker-engine.ts";

/** The relay command that joins stdin/stdout to 127.0.0.1:`port` (socat first), or undefined when none is installed. */
export function relayCommand(port: number, onPath: (name: string) => boolean): string[] | undefined {
  if (onPath("socat")) return ["socat", "-", `TCP4:127.0.0.1:${port}`];
  if (onPath("busybox")) return ["busybox", "nc", "127.0.0.1", String(port)];
  return undefined;
}

/** Whether `name` is an executable on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin")
    .split(delimiter)
    .some((dir) => existsSync(join(dir, name)));
}

/** PortForward over the Engine at hand; `timeoutMs` bounds the sandbox's inspection. */
export function createDockerPortForward(
  options: { timeoutMs: number },
  deps: { engine: Pick<DockerEngine, "inspectContainer">; onPath?: (name: string) => boolean },
): (podSandboxId: string, port: number) => Promise<PortForwardStream> {
  return async (id, port) => {
    const action = `forward port ${port} of pod sandbox ${short(id)}`;
    const sandbox = await call(action, (signal) => deps.engine.inspectContainer(id, signal), options);
    if (sandbox.Config.Labels?.[LABEL.containerName] !== POD_INFRA_CONTAINER_NAME)
      throw runtimeError("NotFound", `cannot ${action}: ${short(id)} is not a pod sandbox`);
    if (!sandbox.State.Running || !sandbox.State.Pid)
      throw runtimeError("Conflict", `cannot ${action}: the pod sandbox is not running`);
    if (sandbox.HostConfig.NetworkMode === "host") return connectTcp("127.0.0.1", port, "on the host network");
    const relay = relayCommand(port, deps.onPath ?? onPath);
    if (!relay)
      throw runtimeError(
        "RuntimeError",
        `cannot ${action}: reaching a port inside a pod's network namespace needs socat or busybox on the kubelet's PATH (install socat)`,
      );
    const child = spawn("nsenter", ["-t", String(sandbox.State.Pid), "-n", "--", ...relay], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const finished = new Promise<void>((resolve, reject) => {
      child.once("error", (error) =>
        reject(runtimeError("RuntimeError", `cannot ${action}: nsenter: ${error.message}`)),
      );
      child.once("close", (code) =>
        code === 0 || code === null
          ? resolve()
          : reject(
              runtimeError(
                "RuntimeError",
                `failed to connect to localhost:${port} inside the network namespace of pod sandbox ${short(id)}: ${stderr.trim() || `${relay[0]} exited with ${code}`}`,
              ),
            ),
      );
    });
    return pipeStream({ input: child.stdin, output: child.stdout, finished, destroy: () => child.kill() });
  };
}
