// Collects a source's snapshots and waits for one that matches, for source tests.
import type { PodSource, SourceSnapshot } from "../sources/source.ts";

export interface SnapshotRecorder {
  snapshots: SourceSnapshot[];
  /** Resolves with the first snapshot (already seen or coming) that satisfies `match`. */
  next(match: (s: SourceSnapshot) => boolean, timeoutMs?: number): Promise<SourceSnapshot>;
  stop(): Promise<void>;
}

export function recordSnapshots(source: PodSource): SnapshotRecorder {
  const snapshots: SourceSnapshot[] = [];
  const waiters: Array<{ match: (s: SourceSnapshot) => boolean; resolve: (s: SourceSnapshot) => void }> = [];
  let seen = 0;
  const stop = source.start((snapshot) => {
    snapshots.push(snapshot);
    for (const w of [...waiters]) {
      if (w.match(snapshot)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(snapshot);
      }
    }
  });
  return {
    snapshots,
    next(match, timeoutMs = 10_000) {
      const found = snapshots.slice(seen).find(match);
      if (found) {
        seen = snapshots.indexOf(found) + 1;
        return Promise.resolve(found);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no matching snapshot within ${timeoutMs} ms; last: ${JSON.stringify(snapshots.at(-1)?.pods.map((p) => p.metadata.name))}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          match,
          resolve: (s) => {
            clearTimeout(timer);
            seen = snapshots.indexOf(s) + 1;
            resolve(s);
          },
        });
      });
    },
    stop,
  };
}

/** Names of a snapshot's pods, for assertions. */
export const names = (s: SourceSnapshot) => s.pods.map((p) => p.metadata.name);
