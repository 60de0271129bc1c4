// Kernel-generated files (cgroup counters, /proc) kept open and read again in place: the kernel writes
// their content afresh on every read from offset 0, and opening one costs most of reading it (~10 µs of
// ~12 for a cgroup v1 counter; the stats collection reads about a thousand every 10 s with 110 pods).
// A file not read in the last few sweeps is closed, so the files of a pod that went are let go; one
// that fails to read (a removed cgroup answers ENODEV) is closed at once and opened again next time.
import { closeSync, openSync, readFileSync, readSync } from "node:fs";

export interface OpenFiles {
  /**
   * The file's content now ("" when it does not exist or cannot be read), its descriptor kept for the next read.
   * One read while it fits the buffer: for a file the kernel generates record by record (cgroup.procs) that may be
   * its first records only, which is all the reader of such a file here uses.
   */
  read(path: string): string;
  /** Ends a round of reads: files not read in the last `SWEEPS_KEPT` rounds are closed. */
  sweep(): void;
  /** Closes the file if it is open: the next read opens it again. */
  forget(path: string): void;
  /** How many files are open. */
  size(): number;
}

/** Rounds a file stays open without being read (a metrics scrape between two collections reads fewer files). */
const SWEEPS_KEPT = 3;

/** Keeps at most `limit` files open; reads beyond it open and close their file as readFileSync does. */
export function createOpenFiles(
  options: { limit: number },
  deps: { readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number } = {
    readSync,
  },
): OpenFiles {
  const open = new Map<string, { fd: number; round: number }>();
  let round = 0;
  let buffer = Buffer.allocUnsafe(16_384);

  const readAt = (fd: number): string => {
    let length = 0;
    for (;;) {
      const n = deps.readSync(fd, buffer, length, buffer.length - length, length);
      length += n;
      // A read that left room in the buffer had it all: a cgroup file is generated in one piece, and asking again
      // at its end would have the kernel generate it afresh (a seq_file read past offset 0 replays it from the
      // start) only to answer 0, which was half of a collection's system time.
      if (n === 0 || length < buffer.length) return buffer.toString("latin1", 0, length);
      const bigger = Buffer.allocUnsafe(buffer.length * 2);
      buffer.copy(bigger);
      buffer = bigger;
    }
  };
  const drop = (path: string) => {
    const entry = open.get(path);
    if (!entry) return;
    open.delete(path);
    try {
      closeSync(entry.fd);
    } catch {
      // already unusable: nothing to release
    }
  };

  return {
    read(path) {
      try {
        let entry = open.get(path);
        if (!entry) {
          if (open.size >= options.limit) return readFileSync(path, "latin1");
          entry = { fd: openSync(path, "r"), round };
          open.set(path, entry);
        }
        entry.round = round;
        return readAt(entry.fd);
      } catch {
        drop(path);
        return "";
      }
    },
    sweep() {
      round++;
      for (const [path, entry] of open) if (round - entry.round > SWEEPS_KEPT) drop(path);
    },
    forget: drop,
    size: () => open.size,
  };
}

/** A quarter of the soft RLIMIT_NOFILE (/proc/self/limits), 256 where it cannot be read: the rest is the kubelet's. */
export function openFilesLimit(limits = "/proc/self/limits"): number {
  try {
    const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync(limits, "latin1"))?.[1]);
    return Number.isFinite(soft) && soft > 0 ? Math.floor(soft / 4) : 256;
  } catch {
    return 256;
  }
}
