// Container logs and the Engine's event stream (the exits and OOM kills the PLEG hears), read until the caller's
// signal ends them (the dockershim's docker_logs.go and its events watch).
import { silentLogger, type Logger } from "../../log.ts";
import { runtimeError, type LogOptions, type Runtime, type RuntimeEvent } from "../runtime.ts";
import { call, mapError, short } from "./docker-calls.ts";
import type { DockerEngine } from "./docker-engine.ts";
import { DOCKER_LIFECYCLE_ACTIONS, demuxFrames, parseEvents } from "./docker-streams.ts";

/** The Engine calls logs and events make. */
export type LogsEngine = Pick<DockerEngine, "inspectContainer" | "readLogs" | "followLogs" | "events">;

/** The container events the kubelet reacts to (see DOCKER_LIFECYCLE_ACTIONS). */
const LIFECYCLE_EVENTS = Object.keys(DOCKER_LIFECYCLE_ACTIONS);

type Source = (AsyncIterable<Uint8Array> | Uint8Array[]) & { destroy?(): void };

/**
 * What `read` makes of `source`, until the source ends or `signal` aborts (which destroys it and ends quietly);
 * a failure of the stream itself is the port's error naming `action`.
 */
async function* untilAborted<T>(
  source: Source,
  read: (source: Source) => AsyncIterable<T>,
  action: string,
  signal: AbortSignal | undefined,
): AsyncGenerator<T> {
  const stop = () => source.destroy?.();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    yield* read(source);
  } catch (error) {
    if (!signal?.aborted) throw mapError(error, action);
  } finally {
    signal?.removeEventListener("abort", stop);
    stop();
  }
}

/** logs and events of the Runtime port over the Engine. */
export function createDockerLogs(
  options: {
    timeoutMs: number;
    log?: Logger;
    /** The events stream opened (true) or ended (false): the PLEG health's threshold follows it. */
    streaming?: (on: boolean) => void;
  },
  deps: { engine: LogsEngine },
): Pick<Runtime, "logs" | "events"> {
  const { engine } = deps;
  const log = options.log ?? silentLogger;
  const limits = (signal?: AbortSignal) => ({ timeoutMs: options.timeoutMs, signal });

  async function* logs(id: string, logOptions: LogOptions = {}): AsyncGenerator<Uint8Array> {
    const action = `read the logs of container ${short(id)}`;
    const { signal } = logOptions;
    const info = await call(action, (abortSignal) => engine.inspectContainer(id, abortSignal), limits(signal));
    const params = {
      stdout: true,
      stderr: true,
      timestamps: logOptions.timestamps ?? false,
      ...(logOptions.tail !== undefined ? { tail: logOptions.tail } : {}),
      ...(logOptions.since ? { since: logOptions.since } : {}),
    };
    let source: Source;
    try {
      source = logOptions.follow
        ? await call(action, (abortSignal) => engine.followLogs(id, params, abortSignal), {
            ...limits(signal),
            stream: true,
          })
        : [await call(action, (abortSignal) => engine.readLogs(id, params, abortSignal), limits(signal))];
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    }
    const tty = info.Config.Tty;
    yield* untilAborted(source, (s) => (tty ? toAsync(s) : dataOf(demuxFrames(s))), action, signal);
  }

  async function* events(signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const action = "watch Docker events";
    let stream: Source & AsyncIterable<Uint8Array>;
    try {
      stream = await call(
        action,
        (abortSignal) => engine.events({ type: ["container"], event: LIFECYCLE_EVENTS }, abortSignal),
        { ...limits(signal), stream: true },
      );
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    const onBadLine = (line: string) => log.debug(`ignoring an unparsable Docker event: ${line.slice(0, 200)}`);
    options.streaming?.(true);
    try {
      yield* untilAborted(stream, () => parseEvents(stream, onBadLine), action, signal);
    } finally {
      options.streaming?.(false);
    }
    if (!signal.aborted)
      throw runtimeError("RuntimeUnavailable", `cannot ${action}: the Docker Engine closed the event stream`);
  }

  return { logs, events };
}

async function* toAsync(source: Source): AsyncGenerator<Uint8Array> {
  yield* source;
}

async function* dataOf(frames: AsyncIterable<{ data: Uint8Array }>): AsyncGenerator<Uint8Array> {
  for await (const frame of frames) yield frame.data;
}
