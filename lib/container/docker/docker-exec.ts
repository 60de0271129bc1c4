// Streamed exec and attach on the Docker Engine: hijacked connections (stdin written to the socket,
// stdout/stderr read from it, multiplexed unless there is a TTY) turned into the port's StreamSession.
// createDockerStreaming owns the streams over the calls handed in; dockerStreamCalls makes those calls on the Engine.
import type { KubeletError } from "../../api/types.ts";
import { call, mapError, short } from "./docker-calls.ts";
import type { DockerEngine } from "./docker-engine.ts";
import { demuxFrames } from "./docker-streams.ts";
import {
  streamFlags,
  type OutputChunk,
  type StreamingRuntime,
  type StreamOptions,
  type StreamSession,
  type TerminalSize,
} from "../runtime.ts";

/** A hijacked Engine connection: readable output, writable stdin (end() half-closes: the process reads EOF). */
export interface HijackedStream extends AsyncIterable<Uint8Array> {
  write(data: Uint8Array): unknown;
  end(): unknown;
  destroy(): unknown;
}

/** An exec instance as the Engine reports it. */
export interface ExecInspect {
  Running: boolean;
  ExitCode: number | null;
}

/** One created exec instance. */
export interface DockerExecHandle {
  start(options: { stdin: boolean; tty: boolean }): Promise<HijackedStream>;
  inspect(): Promise<ExecInspect>;
  resize(size: TerminalSize): Promise<void>;
}

/** The Engine calls streaming needs, with deadlines and error mapping applied (dockerStreamCalls). */
export interface DockerStreamCalls {
  createExec(id: string, config: { cmd: string[] } & Required<StreamOptions>): Promise<DockerExecHandle>;
  /** Whether the container runs with a TTY (its Config.Tty). */
  containerTty(id: string): Promise<boolean>;
  attach(id: string, options: Required<Omit<StreamOptions, "tty">>): Promise<HijackedStream>;
  resizeContainer(id: string, size: TerminalSize): Promise<void>;
  /** Turns an error of the stream itself into the port's KubeletError. */
  mapError(error: unknown, action: string): KubeletError;
}

/**
 * The exec's exit code once its stream ended. The code can trail the stream's end by a moment, so a
 * still-running exec is inspected again, every 10 ms for up to half a second.
 */
export async function execExitCode(inspect: () => Promise<ExecInspect>): Promise<number> {
  let inspected = await inspect();
  for (let i = 0; inspected.Running && i < 50; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    inspected = await inspect();
  }
  return inspected.ExitCode ?? -1;
}

/** A session over one hijacked stream; `exitCode` runs once the output ended (not after close()). */
export function hijackedSession(
  stream: HijackedStream,
  options: {
    tty: boolean;
    action: string;
    mapError: DockerStreamCalls["mapError"];
    exitCode(): Promise<number | undefined>;
    resize(size: TerminalSize): Promise<void>;
  },
): StreamSession {
  let closed = false;
  let ended!: (failure: unknown) => void;
  const end = new Promise<unknown>((resolve) => (ended = resolve));
  async function* output(): AsyncGenerator<OutputChunk> {
    let failure: unknown;
    try {
      if (options.tty) for await (const data of stream) yield { stream: 1, data };
      else
        for await (const frame of demuxFrames(stream))
          if (frame.stream === 1 || frame.stream === 2) yield { stream: frame.stream, data: frame.data };
    } catch (error) {
      if (!closed) failure = options.mapError(error, options.action);
    } finally {
      ended(failure);
    }
  }
  const exit = end.then((failure) => {
    if (failure) throw failure;
    return closed ? undefined : options.exitCode();
  });
  // Whoever reads the output awaits exit; a session dropped unread must not crash the process.
  exit.catch(() => {});
  return {
    output: output(),
    write: (data) => void (closed || stream.write(data)),
    closeStdin: () => void (closed || stream.end()),
    resize: (size) => void (closed || !options.tty || options.resize(size).catch(() => {})),
    exit,
    close() {
      if (closed) return;
      closed = true;
      stream.destroy();
    },
  };
}

/** execStream and attach over the Engine calls. */
export function createDockerStreaming(calls: DockerStreamCalls): Pick<StreamingRuntime, "execStream" | "attach"> {
  return {
    async execStream(id, cmd, options) {
      const flags = streamFlags(options);
      const { tty } = flags;
      const exec = await calls.createExec(id, { cmd, ...flags });
      const stream = await exec.start({ stdin: flags.stdin, tty });
      return hijackedSession(stream, {
        tty,
        action: `exec ${JSON.stringify(cmd)} in container ${id.slice(0, 12)}`,
        mapError: calls.mapError,
        exitCode: () => execExitCode(() => exec.inspect()),
        resize: (size) => exec.resize(size),
      });
    },
    async attach(id, options) {
      const tty = await calls.containerTty(id);
      const { stdin, stdout, stderr } = streamFlags({ ...options, tty });
      const stream = await calls.attach(id, { stdin, stdout, stderr });
      return hijackedSession(stream, {
        tty,
        action: `attach to container ${id.slice(0, 12)}`,
        mapError: calls.mapError,
        exitCode: async () => undefined,
        resize: (size) => calls.resizeContainer(id, size),
      });
    },
  };
}

/** The Engine calls streamed exec and attach make. */
export type StreamEngine = Pick<DockerEngine, "createExec" | "inspectContainer" | "attach" | "resizeContainer">;

/** The calls streaming needs, made on the Engine: the deadline covers setting a stream up, never the stream itself. */
export function dockerStreamCalls(options: { timeoutMs: number }, deps: { engine: StreamEngine }): DockerStreamCalls {
  const { engine } = deps;
  const limits = { timeoutMs: options.timeoutMs };
  return {
    async createExec(id, config) {
      const action = `exec ${JSON.stringify(config.cmd)} in container ${short(id)}`;
      const body = {
        Cmd: config.cmd,
        AttachStdin: config.stdin,
        AttachStdout: config.stdout,
        AttachStderr: config.stderr,
        Tty: config.tty,
      };
      const instance = await call(action, (signal) => engine.createExec(id, body, signal), limits);
      return {
        start: ({ stdin, tty }) => call(action, () => instance.start({ stdin, tty }), limits),
        inspect: () => call(action, () => instance.inspect(), limits),
        resize: async ({ width, height }) =>
          void (await call(`resize the TTY of ${action}`, () => instance.resize({ w: width, h: height }), limits)),
      };
    },
    async containerTty(id) {
      const info = await call(
        `inspect container ${short(id)}`,
        (signal) => engine.inspectContainer(id, signal),
        limits,
      );
      return info.Config.Tty;
    },
    attach: (id, { stdin, stdout, stderr }) =>
      call(`attach to container ${short(id)}`, () => engine.attach(id, { stdin, stdout, stderr }), limits),
    resizeContainer: async (id, { width, height }) =>
      void (await call(
        `resize the TTY of container ${short(id)}`,
        (signal) => engine.resizeContainer(id, { w: width, h: height }, signal),
        limits,
      )),
    mapError,
  };
}
