// The CRI's ExecSync on the Docker Engine: a command run in a container to its end (probes, hooks), its output
// gathered, under a timeout; streamed exec and attach are docker-exec.ts's.
import { runtimeError, type ExecResult } from "../runtime.ts";
import { call, mapError, short } from "./docker-calls.ts";
import type { DockerEngine } from "./docker-engine.ts";
import { execExitCode } from "./docker-exec.ts";
import { demuxFrames } from "./docker-streams.ts";

/** The Engine calls a blocking exec makes. */
export type ExecSyncEngine = Pick<DockerEngine, "createExec">;

/** Runs `cmd` in container `id` until it exits (ExecTimeout past `timeoutMs`), with its stdout and stderr. */
export type ExecSync = (
  id: string,
  cmd: string[],
  options?: { timeoutMs?: number; signal?: AbortSignal },
) => Promise<ExecResult>;

/** The Runtime port's exec over the Engine; `timeoutMs` bounds each call that sets it up. */
export function createDockerExecSync(options: { timeoutMs: number }, deps: { engine: ExecSyncEngine }): ExecSync {
  const { engine } = deps;
  const { timeoutMs } = options;
  return async function exec(id, cmd, execOptions = {}) {
    const action = `exec ${JSON.stringify(cmd)} in container ${short(id)}`;
    // A probe's timeout also bounds setting the exec up.
    const setup = { timeoutMs: Math.min(timeoutMs, execOptions.timeoutMs || timeoutMs), signal: execOptions.signal };
    const body = { Cmd: cmd, AttachStdout: true, AttachStderr: true };
    const instance = await call(action, (signal) => engine.createExec(id, body, signal), setup);
    const socket = await call(action, () => instance.start({ stdin: false }), setup);
    let timedOut = false;
    const stop = () => socket.destroy();
    const timer = execOptions.timeoutMs
      ? setTimeout(() => ((timedOut = true), stop()), execOptions.timeoutMs)
      : undefined;
    execOptions.signal?.addEventListener("abort", stop, { once: true });
    // An abort between the start's answer and the listener above has no event left to hear.
    if (execOptions.signal?.aborted) stop();
    const output: Uint8Array[][] = [[], [], []];
    try {
      for await (const frame of demuxFrames(socket)) output[frame.stream === 2 ? 2 : 1]!.push(frame.data);
    } catch (error) {
      if (!timedOut && !execOptions.signal?.aborted) throw mapError(error, action);
    } finally {
      clearTimeout(timer);
      execOptions.signal?.removeEventListener("abort", stop);
      stop();
    }
    if (timedOut) throw runtimeError("ExecTimeout", `cannot ${action}: no exit within ${execOptions.timeoutMs} ms`);
    if (execOptions.signal?.aborted) throw execOptions.signal.reason;
    const exitCode = await execExitCode(() => call(action, () => instance.inspect(), { timeoutMs }));
    const text = (chunks: Uint8Array[]) => Buffer.concat(chunks).toString("utf8");
    return { exitCode, stdout: text(output[1]!), stderr: text(output[2]!) };
  };
}
