// The audit log's writer: one JSON line per event to a 0600 file rotated by size as kube-apiserver's
// lumberjack rotates it (<name>-<timestamp>.<ext>, --audit_log_maxsize/maxbackup/maxage), or to stdout.
// Writing never blocks a request: events queue (bounded) and one loop writes them as they come.
import { chmod, open, readdir, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { AuditEvent } from "./event.ts";

export interface AuditLogOptions {
  /** --audit_log_path: the file, or "-" for stdout. */
  path: string;
  /** --audit_log_maxsize: megabytes before the file is rotated (0 = lumberjack's default, 100). */
  maxSizeMB?: number;
  /** --audit_log_maxbackup: rotated files kept (0 = all). */
  maxBackups?: number;
  /** --audit_log_maxage: days a rotated file is kept, by the time in its name (0 = no limit). */
  maxAgeDays?: number;
  /** Events waiting to be written before new ones are dropped (and counted). */
  maxQueued?: number;
}

export interface AuditLogDeps {
  clock: Pick<Clock, "now">;
  /** Where "-" writes (process.stdout in the composition root). */
  stdout?: { write(text: string): unknown };
  log?: Logger;
}

/** The sink the audit middleware writes to. */
export interface AuditLog {
  /** Queues one event; never waits. */
  write(event: AuditEvent): void;
  /** Resolves once every queued event is written. */
  flush(): Promise<void>;
  /** Events dropped because the queue was full. */
  dropped(): number;
  /** Writes what is queued and closes the file. */
  close(): Promise<void>;
}

const MB = 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/** lumberjack's backup name: "2006-01-02T15-04-05.000" in UTC between the name and the extension. */
export function backupName(path: string, ms: number): string {
  const ext = extname(path);
  const stamp = new Date(ms).toISOString().replace(/:/g, "-").replace(/Z$/, "");
  return join(dirname(path), `${basename(path, ext)}-${stamp}${ext}`);
}

/** The time in a backup's name, or undefined when the file is not one of this log's backups. */
function backupTime(path: string, file: string): number | undefined {
  const ext = extname(path);
  const prefix = `${basename(path, ext)}-`;
  if (!file.startsWith(prefix) || !file.endsWith(ext)) return undefined;
  const stamp = file.slice(prefix.length, file.length - ext.length);
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2}\.\d{3})$/.exec(stamp);
  return match ? Date.parse(`${match[1]}T${match[2]}:${match[3]}:${match[4]}Z`) : undefined;
}

/** Opens the audit log; the file is created 0600 (and an existing one made 0600). */
export function createAuditLog(options: AuditLogOptions, deps: AuditLogDeps): AuditLog {
  const maxBytes = (options.maxSizeMB || 100) * MB;
  const maxQueued = options.maxQueued ?? 10_000;
  const queue: string[] = [];
  let dropped = 0;
  let warned = false;
  let file: FileHandle | undefined;
  let size = 0;
  let writing: Promise<void> | undefined;

  const openFile = async () => {
    file = await open(options.path, "a", 0o600);
    await chmod(options.path, 0o600);
    size = (await file.stat()).size;
  };

  const removeOldBackups = async () => {
    if (!options.maxBackups && !options.maxAgeDays) return;
    const dir = dirname(options.path);
    const backups = (await readdir(dir))
      .map((name) => ({ name, time: backupTime(options.path, name) }))
      .filter((b): b is { name: string; time: number } => b.time !== undefined)
      .sort((a, b) => b.time - a.time);
    const cutoff = options.maxAgeDays ? deps.clock.now() - options.maxAgeDays * DAY_MS : -Infinity;
    const doomed = backups.filter((b, i) => (options.maxBackups && i >= options.maxBackups) || b.time < cutoff);
    await Promise.all(doomed.map((b) => rm(join(dir, b.name), { force: true })));
  };

  const rotate = async () => {
    await file?.close();
    file = undefined;
    await rename(options.path, backupName(options.path, deps.clock.now()));
    await openFile();
    await removeOldBackups();
  };

  /** Writes `lines` in as few writes as rotation allows, counting in `done` those that reached the file. */
  const writeLines = async (lines: string[], done: { count: number }) => {
    if (options.path === "-") {
      deps.stdout?.write(lines.join(""));
      done.count = lines.length;
      return;
    }
    if (!file) await openFile();
    let batch: string[] = [];
    let batchBytes = 0;
    const flushBatch = async () => {
      if (batch.length) await file!.write(batch.join(""));
      size += batchBytes;
      done.count += batch.length;
      batch = [];
      batchBytes = 0;
    };
    for (const line of lines) {
      const bytes = Buffer.byteLength(line);
      // As lumberjack: a line that would take the file past its size goes to a fresh one (an oversized line too).
      if (size + batchBytes > 0 && size + batchBytes + bytes > maxBytes) {
        await flushBatch();
        await rotate();
      }
      batch.push(line);
      batchBytes += bytes;
    }
    await flushBatch();
  };

  const drain = async () => {
    while (queue.length) {
      // What queued while the last write ran goes out together: a burst costs a write, not one per event.
      const lines = queue.splice(0);
      const done = { count: 0 };
      try {
        await writeLines(lines, done);
      } catch (error) {
        dropped += lines.length - done.count;
        deps.log?.error(
          `cannot write the audit log "${options.path}": ${(error as Error).message}; ${lines.length - done.count} event(s) lost`,
        );
      }
    }
    writing = undefined;
  };

  return {
    write(event) {
      if (queue.length >= maxQueued) {
        dropped++;
        if (!warned)
          deps.log?.warn(
            `audit log "${options.path}" is behind by ${maxQueued} events: dropping events until it catches up`,
          );
        warned = true;
        return;
      }
      warned = false;
      queue.push(JSON.stringify(event) + "\n");
      writing ??= drain();
    },
    flush: async () => {
      while (writing) await writing;
    },
    dropped: () => dropped,
    async close() {
      while (writing) await writing;
      await file?.close();
      file = undefined;
    },
  };
}
