// Container logs as the CRI runtimes write them (one file per container instance, each line
// `<RFC3339Nano> <stdout|stderr> <P|F> <text>`): the kubelet reads them itself, as the Go kubelet's
// kuberuntime/logs does, with tail, since, timestamps and follow (across a rotation of the file).
import { open, stat, type FileHandle } from "node:fs/promises";
import type { LogOptions } from "../runtime.ts";

/** One parsed CRI log line; `partial` lines (P) continue in the next entry. */
export interface CriLogLine {
  time: string;
  stream: "stdout" | "stderr";
  partial: boolean;
  text: string;
}

/** Parses one line of a CRI log file; undefined when it is not in that format. */
export function parseCriLogLine(line: string): CriLogLine | undefined {
  const first = line.indexOf(" ");
  const second = line.indexOf(" ", first + 1);
  const third = line.indexOf(" ", second + 1);
  if (first < 0 || second < 0) return undefined;
  const stream = line.slice(first + 1, second);
  if (stream !== "stdout" && stream !== "stderr") return undefined;
  const tag = third < 0 ? line.slice(second + 1) : line.slice(second + 1, third);
  return {
    time: line.slice(0, first),
    stream,
    partial: tag.split(":")[0] === "P",
    text: third < 0 ? "" : line.slice(third + 1),
  };
}

/** The text a reader sees for one log entry: a full entry ends its line, a partial one does not. */
function render(entry: CriLogLine, timestamps: boolean): string {
  return `${timestamps ? `${entry.time} ` : ""}${entry.text}${entry.partial ? "" : "\n"}`;
}

function select(lines: CriLogLine[], options: LogOptions): CriLogLine[] {
  let chosen = options.since ? lines.filter((l) => Date.parse(l.time) / 1000 >= options.since!) : lines;
  if (options.tail !== undefined) {
    // tail counts whole lines: a run of partial entries and their final one is one line.
    let count = 0;
    let start = chosen.length;
    while (start > 0 && count < options.tail) {
      start--;
      if (!chosen[start]!.partial) count++;
      while (start > 0 && chosen[start - 1]!.partial) start--;
    }
    chosen = chosen.slice(start);
  }
  return chosen;
}

/**
 * Reads a CRI log file. With `follow`, keeps reading what is appended until the signal aborts or
 * `running()` says the container has ended (checked while the file is quiet); when the log manager
 * rotated the file, the rest of the old one is read and then the new one from its start.
 */
export async function* readCriLog(
  path: string,
  options: LogOptions & { running?: () => Promise<boolean>; pollMs?: number },
): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder();
  const timestamps = options.timestamps ?? false;
  const chunk = (lines: CriLogLine[]) => encoder.encode(lines.map((l) => render(l, timestamps)).join(""));
  let handle: FileHandle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    let offset = 0;
    let rest = "";
    const readMore = async (): Promise<CriLogLine[]> => {
      const size = (await handle.stat()).size;
      if (size <= offset) return [];
      const buffer = Buffer.alloc(size - offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      offset += bytesRead;
      const text = rest + buffer.subarray(0, bytesRead).toString("utf8");
      const end = text.lastIndexOf("\n");
      rest = text.slice(end + 1);
      return text
        .slice(0, end + 1)
        .split("\n")
        .map(parseCriLogLine)
        .filter((l): l is CriLogLine => l !== undefined);
    };
    const first = select(await readMore(), options);
    if (first.length) yield chunk(first);
    if (!options.follow) return;
    const pollMs = options.pollMs ?? 100;
    while (!options.signal?.aborted) {
      // Seen before the read: once rotated, the old file is complete when read to its end (the runtime writes only
      // to the new one after its reopen).
      const moved = await rotated(path, handle);
      const lines = await readMore();
      if (lines.length) yield chunk(lines);
      if (moved) {
        await handle.close();
        handle = await open(path, "r");
        offset = 0;
        rest = "";
      }
      if (lines.length || moved) continue;
      if (options.running && !(await options.running())) {
        // The runtime flushes the last lines before it reports the exit: one more read.
        const last = await readMore();
        if (last.length) yield chunk(last);
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        options.signal?.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
    }
  } finally {
    await handle.close();
  }
}

/** Whether `path` now names another file than the open one (renamed away, a new one in its place). */
async function rotated(path: string, handle: FileHandle): Promise<boolean> {
  const [current, opened] = await Promise.all([stat(path).catch(() => undefined), handle.stat()]);
  return current !== undefined && (current.ino !== opened.ino || current.dev !== opened.dev);
}
