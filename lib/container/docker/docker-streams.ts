// Docker Engine stream formats, parsed from plain byte streams: multiplexed stdout/stderr frames
// (logs and exec without a TTY) and the JSON lines of /events.
import type { ContainerState, LifecycleEventType, PullProgress, RuntimeEvent } from "../runtime.ts";

/** One frame of a multiplexed stream: 1 = stdout, 2 = stderr (0 = stdin). */
export interface Frame {
  stream: number;
  data: Uint8Array;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (!a.length) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Splits Docker's 8-byte-header frames (type, 0, 0, 0, big-endian size) out of a byte stream. */
export async function* demuxFrames(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Frame> {
  let pending: Uint8Array = new Uint8Array(0);
  for await (const chunk of source) {
    pending = concat(pending, chunk);
    while (pending.length >= 8) {
      const size = new DataView(pending.buffer, pending.byteOffset, 8).getUint32(4);
      if (pending.length < 8 + size) break;
      yield { stream: pending[0]!, data: pending.slice(8, 8 + size) };
      pending = pending.subarray(8 + size);
    }
  }
}

interface DockerEventLine {
  Type?: string;
  Action?: string;
  status?: string;
  id?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
  timeNano?: number;
}

/**
 * The Engine's container actions the kubelet reacts to, as the Go PLEG's event types (exec_* events, one per exec
 * probe, and attach noise stay on the daemon): an OOM kill is followed by its "die", both a death.
 */
export const DOCKER_LIFECYCLE_ACTIONS: Record<string, LifecycleEventType> = {
  create: "ContainerChanged",
  start: "ContainerStarted",
  restart: "ContainerStarted",
  unpause: "ContainerStarted",
  die: "ContainerDied",
  oom: "ContainerDied",
  kill: "ContainerChanged",
  stop: "ContainerChanged",
  pause: "ContainerChanged",
  destroy: "ContainerRemoved",
};

/**
 * An Engine container state ("running", "exited", …) as the CRI's, as the dockershim mapped them: a paused or
 * restarting container is still running; one being removed, or dead, is unknown.
 */
export function criState(dockerState: string): ContainerState {
  if (dockerState === "running" || dockerState === "paused" || dockerState === "restarting") return "CONTAINER_RUNNING";
  if (dockerState === "exited") return "CONTAINER_EXITED";
  if (dockerState === "created") return "CONTAINER_CREATED";
  return "CONTAINER_UNKNOWN";
}

/** Parses one /events JSON line into a RuntimeEvent; undefined for non-container, non-lifecycle or unparsable lines. */
export function parseEventLine(line: string): RuntimeEvent | undefined {
  let e: DockerEventLine;
  try {
    e = JSON.parse(line) as DockerEventLine;
  } catch {
    return undefined;
  }
  const type = DOCKER_LIFECYCLE_ACTIONS[e.Action ?? e.status ?? ""];
  if ((e.Type && e.Type !== "container") || !type) return undefined;
  const time = e.timeNano ? Math.floor(e.timeNano / 1e6) : (e.time ?? 0) * 1000;
  return {
    type,
    containerId: e.Actor?.ID ?? e.id ?? "",
    labels: e.Actor?.Attributes ?? {},
    time,
  };
}

/** The lines of a newline-delimited byte stream (JSON progress and event streams), trimmed, non-empty. */
export async function* lines(source: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of source) {
    pending += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line) yield line;
    }
  }
  if (pending.trim()) yield pending.trim();
}

/** The container events of a /events byte stream, one per JSON line. */
export async function* parseEvents(
  source: AsyncIterable<Uint8Array>,
  onBadLine: (line: string) => void,
): AsyncGenerator<RuntimeEvent> {
  for await (const line of lines(source)) {
    const event = parseEventLine(line);
    if (event) yield event;
    else onBadLine(line);
  }
}

/**
 * The first error a pull's progress stream carries (Docker reports pull failures in-band), or
 * undefined; every other message goes to `onProgress` as Docker prints it ("abc123: Downloading 1.2MB/4MB"),
 * with the bytes downloaded so far over every layer.
 */
export async function pullError(
  source: AsyncIterable<Uint8Array>,
  onProgress?: (progress: PullProgress) => void,
): Promise<string | undefined> {
  const downloaded = new Map<string, number>();
  let bytes = 0;
  for await (const line of lines(source)) {
    try {
      const message = JSON.parse(line) as {
        error?: string;
        errorDetail?: { message?: string };
        id?: string;
        status?: string;
        progress?: string;
        progressDetail?: { current?: number; total?: number };
      };
      if (message.error || message.errorDetail?.message) return message.errorDetail?.message ?? message.error;
      const { current, total } = message.progressDetail ?? {};
      if (message.id && message.status === "Downloading" && typeof current === "number") {
        bytes += current - (downloaded.get(message.id) ?? 0);
        downloaded.set(message.id, current);
      }
      onProgress?.({
        message: [message.id ? `${message.id}:` : "", message.status ?? "", message.progress ?? ""]
          .filter(Boolean)
          .join(" "),
        ...(message.id ? { layer: message.id } : {}),
        status: message.status ?? "",
        ...(typeof current === "number" ? { current } : {}),
        ...(typeof total === "number" && total > 0 ? { total } : {}),
        bytes,
      });
    } catch {
      return `unparsable pull progress: ${line.slice(0, 200)}`;
    }
  }
  return undefined;
}
