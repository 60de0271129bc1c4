// The file source (-c/--config): a manifest file or a directory of them (pods, ConfigMaps, Secrets), watched so
// an edit is seen at once, and re-listed every --file_check_frequency in case a watch event was lost.
import { watch, type ChokidarOptions } from "chokidar";
import { existsSync, statSync } from "node:fs";
import { stat } from "node:fs/promises";
import { dirname } from "node:path";
import { systemClock, type Clock, type Timer } from "../clock.ts";
import { silentLogger, type Logger } from "../log.ts";
import { isManifestFile, listManifestFiles, readManifestFile } from "../api/manifest-files.ts";
import { readManifests, type ManifestResult } from "../api/manifest.ts";
import { formatIssue } from "../api/types.ts";
import { DEFAULT_MAX_MANIFEST_BYTES, tooLarge } from "../api/manifest-text.ts";
import type { KubeletMetrics } from "../metrics.ts";
import type { ConfigObject } from "../api/config-objects.ts";
import { watchDirectory } from "./dir-watch.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";
import { KEEPING, snapshotSignature, type PodSource, type SourceSnapshot } from "./source.ts";

/** The part of a chokidar watcher the source uses. */
export interface ManifestWatcher {
  on(event: "all", listener: (event: string, path: string) => void): unknown;
  on(event: "ready", listener: () => void): unknown;
  on(event: "error", listener: (error: unknown) => void): unknown;
  close(): Promise<void>;
}

/** Starts watching paths (chokidar's `watch`; tests pass a watcher that sees nothing). */
export type WatchManifests = (paths: string[], options: ChokidarOptions) => ManifestWatcher;

export interface FileSourceOptions {
  path: string;
  /** Full re-list period, ms (--file_check_frequency). */
  checkFrequency: number;
  clock?: Clock;
  log?: Logger;
  metrics?: KubeletMetrics;
  /** Quiet time after a watch event before re-reading, ms; coalesces an editor's write bursts. */
  debounceMs?: number;
  /** Default: one watch on a directory (dir-watch.ts), chokidar for a single file or a path still to appear. */
  watch?: WatchManifests;
  /** Largest manifest file read, bytes (--max_manifest_bytes); larger ones are refused unread. */
  maxBytes?: number;
  /** Default: readManifestFile (tests count the reads). */
  readFile?: typeof readManifestFile;
}

export type FileSource = PodSource & { readOnce(): Promise<SourceSnapshot> };

/** A directory that exists: one watch on it (dir-watch.ts); a single file or a path still to appear: chokidar. */
const watchManifests: WatchManifests = (paths, options) =>
  paths.length === 1 && statSync(paths[0]!, { throwIfNoEntry: false })?.isDirectory()
    ? watchDirectory(paths[0]!)
    : watch(paths, options);

/** What one manifest file gave at its last read, and the stat fingerprint it was read at. */
interface FileRead {
  fingerprint: string;
  pods: SourceSnapshot["pods"];
  configs: ConfigObject[];
  rejected: SourceSnapshot["rejected"];
}

/**
 * Device, inode, size, modification and change times (ns): a write, a truncation or a rename over the file
 * changes one of them; ctime cannot be set back by a user, so an edit that restores mtime is still seen.
 */
async function fingerprint(file: string): Promise<string | undefined> {
  try {
    const s = await stat(file, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return undefined; // unreadable or gone: the read below says why
  }
}

/** How often a source that stays not ready says so again. */
const NOT_READY_REPEAT_MS = 60_000;

/**
 * Why a file given as the path is no pod source at all: no document in it is a pod, ConfigMap or Secret,
 * and each was refused for its kind (a KubeletConfiguration, say, meant for --config_file).
 */
function notAManifest(read: ManifestResult): string | undefined {
  if (read.pods.length || read.configs.length || !read.rejected.length) return undefined;
  const kinds = read.rejected.flatMap((r) => r.issues.filter((i) => i.path === "kind" || i.path.endsWith(".kind")));
  if (kinds.length < read.rejected.length) return undefined;
  const suffix = "no pod is started or stopped on its account";
  if (kinds.some((i) => i.value === "KubeletConfiguration"))
    return `is a KubeletConfiguration, not a pod manifest: pass it with --config_file (-c/--config names the static pod manifest file or directory); ${suffix}`;
  return `is not a pod manifest (${formatIssue(kinds[0]!)}): point -c/--config at a Pod manifest or a directory of them; ${suffix}`;
}

export function createFileSource(options: FileSourceOptions): FileSource {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const lastGood = new Map<string, LastGood>();
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  // The periodic re-list stats every file and parses only the ones that changed: 110 unchanged manifests
  // cost 110 stats every --file_check_frequency, not 110 reads and YAML parses.
  const reads = new Map<string, FileRead>();
  const readFile = options.readFile ?? readManifestFile;

  /** Reads every manifest file whose fingerprint changed; a file that stops parsing keeps its last good pods. */
  const readOnce = async (): Promise<SourceSnapshot> => {
    let files: string[];
    try {
      files = await listManifestFiles(options.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      lastGood.clear();
      return {
        pods: [],
        rejected: [],
        notReady: `manifest path "${options.path}" does not exist: no pod is started or stopped on its account until it appears; check -c/--config for a typo or a volume not mounted yet`,
      };
    }
    const snapshot: SourceSnapshot & { configs: ConfigObject[] } = { pods: [], rejected: [], configs: [] };
    for (const file of files) {
      const seen = await fingerprint(file);
      const cached = reads.get(file);
      if (seen !== undefined && cached?.fingerprint === seen) {
        snapshot.pods.push(...cached.pods);
        snapshot.configs.push(...cached.configs);
        snapshot.rejected.push(...cached.rejected);
        continue;
      }
      reads.delete(file);
      let text: Buffer | undefined;
      try {
        text = await readFile(file, maxBytes);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue; // deleted between list and read
        snapshot.rejected.push({
          source: "file",
          origin: file,
          issues: [
            {
              path: "<file>",
              type: "Invalid value",
              detail: `cannot read manifest: ${(error as Error).message}`,
              severity: "error",
            },
          ],
        });
        continue;
      }
      if (!text) {
        const previous = lastGood.get(file);
        const issue = tooLarge(undefined, maxBytes);
        if (previous) issue.detail = `${issue.detail}; ${KEEPING} of its pods`;
        snapshot.rejected.push({ source: "file", origin: file, document: 0, issues: [issue] });
        if (previous) snapshot.pods.push(...previous.pods), snapshot.configs.push(...previous.configs);
        continue;
      }
      const { snapshot: read, last } = readKeepingLastGood(text, lastGood.get(file), (text) =>
        readManifests(text, { source: "file", origin: file }, { maxBytes }),
      );
      const reason = file === options.path ? notAManifest(read) : undefined;
      if (reason) return { pods: [], rejected: [], notReady: `"${options.path}" ${reason}` };
      if (last) lastGood.set(file, last);
      if (seen !== undefined)
        reads.set(file, { fingerprint: seen, pods: read.pods, configs: read.configs, rejected: read.rejected });
      snapshot.pods.push(...read.pods);
      snapshot.configs.push(...read.configs);
      snapshot.rejected.push(...read.rejected);
    }
    const listed = new Set(files);
    for (const file of lastGood.keys()) if (!listed.has(file)) lastGood.delete(file);
    for (const file of reads.keys()) if (!listed.has(file)) reads.delete(file);
    return snapshot;
  };

  return {
    name: "file",
    readOnce,
    start(emit) {
      let stopped = false;
      let lastSignature: string | undefined;
      let pending: Timer | undefined;
      let relist: Timer | undefined;
      let reading: Promise<void> = Promise.resolve();
      // Not ready is said at once, again every minute while it lasts, and its end once.
      let notReadySince: { reason: string; loggedAt: number } | undefined;
      const reportReadiness = (reason: string | undefined) => {
        if (reason === undefined) {
          if (notReadySince) log.info(`manifest path "${options.path}" is readable now: its pods are synced`);
          notReadySince = undefined;
        } else if (notReadySince?.reason !== reason || clock.now() - notReadySince.loggedAt >= NOT_READY_REPEAT_MS) {
          log.warn(reason);
          notReadySince = { reason, loggedAt: clock.now() };
        }
      };
      const refresh = () => {
        reading = reading.then(async () => {
          if (stopped) return;
          try {
            const snapshot = await readOnce();
            reportReadiness(snapshot.notReady);
            const signature = snapshotSignature(snapshot);
            if (signature === lastSignature || stopped) return;
            lastSignature = signature;
            emit(snapshot);
          } catch (error) {
            options.metrics?.sourceError("file");
            log.warn(`cannot read manifests from "${options.path}": ${(error as Error).message}`);
          }
        });
        return reading;
      };
      let trailing: Timer | undefined;
      const schedule = () => {
        pending?.cancel();
        pending = clock.setTimeout(() => void refresh(), options.debounceMs ?? 5);
        // chokidar drops a second change of the same file within its 50 ms throttle window: look once
        // more after the burst, so back-to-back edits are never left to the periodic re-list.
        trailing?.cancel();
        trailing = clock.setTimeout(() => void refresh(), 60);
      };
      let restartIfMoved = () => {};
      const tick = () => {
        relist = clock.setTimeout(
          () =>
            void refresh().then(() => {
              if (stopped) return;
              restartIfMoved();
              tick();
            }),
          options.checkFrequency,
        );
      };
      // A missing path is watched through its parent, so it is noticed when it appears; an existing one only
      // by itself: the parent (often /tmp, or beside the root dir the kubelet writes to) can change many
      // times a second, and each change would cost chokidar a look. The watcher starts over whenever the
      // path appears or goes, seen by an event or at the latest by the periodic re-list.
      let watcher: ManifestWatcher;
      let watching: Promise<void> = Promise.resolve();
      const startWatcher = () => {
        const existed = existsSync(options.path);
        watcher = (options.watch ?? watchManifests)(existed ? [options.path] : [options.path, dirname(options.path)], {
          ignoreInitial: true,
          depth: 0,
          atomic: true,
          ignored: (path: string, stats?: { isFile(): boolean }) =>
            !!stats?.isFile() && path !== options.path && !isManifestFile(path),
        });
        restartIfMoved = () => {
          if (stopped || existsSync(options.path) === existed) return;
          restartIfMoved = () => {};
          watching = watcher.close().then(() => void (!stopped && startWatcher()));
        };
        watcher.on("all", (_event: string, path: string) => {
          // A watch event always re-reads its file, even when the fingerprint looks the same (Deno's ctime is in
          // whole seconds: two same-size writes in one second would look alike).
          reads.delete(path);
          if (path === options.path) restartIfMoved();
          if (path === options.path || path.startsWith(options.path + "/") || dirname(options.path) === path)
            schedule();
        });
        // Changes made while chokidar scanned are not reported as events: look again when it is ready.
        watcher.on("ready", () => {
          restartIfMoved();
          schedule();
        });
        watcher.on("error", (error: unknown) =>
          log.warn(
            `watching "${options.path}" failed: ${(error as Error).message}; re-listing every ${options.checkFrequency / 1000}s`,
          ),
        );
      };
      startWatcher();
      void refresh();
      tick();
      return async () => {
        stopped = true;
        pending?.cancel();
        trailing?.cancel();
        relist?.cancel();
        await watching;
        await watcher!.close();
        await reading;
      };
    },
  };
}
