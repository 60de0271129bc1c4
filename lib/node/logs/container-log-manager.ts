// The Go kubelet's container log manager (pkg/kubelet/logs/container_log_manager.go) for CRI runtimes,
// which write container logs but never rotate them: every containerLogMonitorInterval, up to
// containerLogMaxWorkers containers at once, a running container's log above containerLogMaxSize is
// renamed `<log>.<timestamp>` and the runtime reopens its log (ReopenContainerLog); older rotated
// files are gzipped and at most containerLogMaxFiles are kept, the current one included. Unlike the Go
// kubelet, a container's log path is asked of the runtime (ContainerStatus) once, not at every pass: the
// CRI fixes it at creation (ContainerConfig.log_path), and 110 status calls every 10 s were most of an idle
// CRI kubelet's gRPC traffic.
import { createReadStream, createWriteStream } from "node:fs";
import { readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { parseQuantity } from "../../api/quantity.ts";
import { KubeletError } from "../../api/types.ts";
import { every, type Clock } from "../../clock.ts";
import type { Runtime } from "../../container/runtime.ts";
import { listedContainers, LOG_LISTING_MAX_AGE_MS } from "../../container/shared-listing.ts";
import type { Logger } from "../../log.ts";

/** The four KubeletConfiguration fields as the config has them (a quantity, a count, a count, milliseconds). */
export interface LogRotationSettings {
  containerLogMaxSize: string;
  containerLogMaxFiles: number;
  containerLogMaxWorkers: number;
  containerLogMonitorInterval: number;
}

/** The four KubeletConfiguration fields, checked and in bytes and milliseconds. */
export interface LogRotationPolicy {
  maxSizeBytes: number;
  maxFiles: number;
  maxWorkers: number;
  monitorIntervalMs: number;
}

/** The policy the settings give; throws InvalidValue naming the flag and the field for a value the Go kubelet refuses. */
export function logRotationPolicy(config: LogRotationSettings): LogRotationPolicy {
  const invalid = (flag: string, field: string, why: string) =>
    new KubeletError("InvalidValue", `--${flag} (${field}): ${why}`);
  const maxSizeBytes = parseQuantity(config.containerLogMaxSize);
  if (maxSizeBytes === undefined || maxSizeBytes <= 0)
    throw invalid(
      "container_log_max_size",
      "containerLogMaxSize",
      `${JSON.stringify(config.containerLogMaxSize)} is not a positive quantity: use a size such as 10Mi`,
    );
  if (config.containerLogMaxFiles < 2)
    throw invalid(
      "container_log_max_files",
      "containerLogMaxFiles",
      `must be greater than 1 (the current file and at least one rotated one), got ${config.containerLogMaxFiles}`,
    );
  if (config.containerLogMaxWorkers < 1)
    throw invalid(
      "container_log_max_workers",
      "containerLogMaxWorkers",
      `must be greater than or equal to 1, got ${config.containerLogMaxWorkers}`,
    );
  if (config.containerLogMonitorInterval < 3000)
    throw invalid(
      "container_log_monitor_interval",
      "containerLogMonitorInterval",
      `must be a positive time duration greater than or equal to 3s, got ${config.containerLogMonitorInterval}ms`,
    );
  return {
    maxSizeBytes: Math.floor(maxSizeBytes),
    maxFiles: config.containerLogMaxFiles,
    maxWorkers: config.containerLogMaxWorkers,
    monitorIntervalMs: config.containerLogMonitorInterval,
  };
}

export interface ContainerLogManagerDeps {
  runtime: Pick<Runtime, "listContainers" | "lastListing" | "inspectContainer" | "reopenContainerLog">;
  clock: Clock;
  log: Logger;
}

export interface ContainerLogManager {
  /** One pass over the running containers: rotates each log above the size. */
  rotateOnce(): Promise<void>;
  /** Passes every monitor interval until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
}

const COMPRESS_SUFFIX = ".gz";
const TMP_SUFFIX = ".tmp";

/** `20060102-150405` (the Go kubelet's timestampFormat), in UTC. */
export function rotationTimestamp(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2006-01-02T15:04:05.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

export function createContainerLogManager(
  policy: LogRotationPolicy,
  deps: ContainerLogManagerDeps,
): ContainerLogManager {
  const { runtime, clock, log } = deps;
  /** Containers whose runtime refused ReopenContainerLog: logged once, then left alone while they run. */
  const refused = new Set<string>();

  const reopen = async (id: string, path: string): Promise<boolean> => {
    try {
      await runtime.reopenContainerLog!(id);
      return true;
    } catch (error) {
      refused.add(id);
      log.warn(
        `cannot reopen the log of container ${id.slice(0, 12)} (${path}): ${(error as Error).message}; its log is no longer rotated`,
      );
      return false;
    }
  };

  /** The rotated files beside `path` (`<path>.*`), oldest first; leftovers of an interrupted pass removed. */
  const rotatedFiles = async (path: string): Promise<string[]> => {
    const dir = dirname(path);
    const prefix = `${basename(path)}.`;
    const names = (await readdir(dir)).filter((n) => n.startsWith(prefix)).sort();
    const kept: string[] = [];
    for (const name of names) {
      // A compression cut short, or an uncompressed file whose compressed copy is complete.
      if (name.endsWith(TMP_SUFFIX) || names.includes(`${name}${COMPRESS_SUFFIX}`)) await rm(join(dir, name));
      else kept.push(join(dir, name));
    }
    return kept;
  };

  const compress = async (file: string) => {
    const tmp = `${file}${TMP_SUFFIX}`;
    await pipeline(createReadStream(file), createGzip(), createWriteStream(tmp, { mode: 0o644 }));
    await rename(tmp, `${file}${COMPRESS_SUFFIX}`);
    await rm(file);
  };

  const rotate = async (id: string, path: string) => {
    let rotated = await rotatedFiles(path);
    // The current file and the one about to be rotated count too.
    const excess = rotated.length - (policy.maxFiles - 2);
    if (excess > 0) {
      await Promise.all(rotated.slice(0, excess).map((f) => rm(f, { force: true })));
      rotated = rotated.slice(excess);
    }
    // Every earlier rotated file is gzipped (its runtime reopened in the pass that renamed it); only the one renamed
    // now stays plain until the next rotation, as in the Go kubelet's rotateLog.
    for (const file of rotated) if (!file.endsWith(COMPRESS_SUFFIX)) await compress(file);
    const target = `${path}.${rotationTimestamp(clock.now())}`;
    if (rotated.some((f) => f === target || f === `${target}${COMPRESS_SUFFIX}`)) return; // rotated this second
    await rename(path, target);
    // The runtime keeps writing to the renamed file until it reopens; a refusal puts the file back.
    if (!(await reopen(id, path))) await rename(target, path);
  };

  /** Running containers' log paths, asked once each. */
  const logPaths = new Map<string, string>();

  const processContainer = async (id: string) => {
    const path = logPaths.get(id) ?? (await runtime.inspectContainer(id)).logPath;
    if (!path) return;
    logPaths.set(id, path);
    const size = await stat(path).then(
      (s) => s.size,
      (error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
        return undefined;
      },
    );
    // A reopen that failed after the rename leaves no file: ask the runtime for one again.
    if (size === undefined) {
      await reopen(id, path);
      return;
    }
    if (size >= policy.maxSizeBytes) await rotate(id, path);
  };

  const rotateOnce = async () => {
    if (!runtime.reopenContainerLog) return;
    const running = (await listedContainers(runtime, LOG_LISTING_MAX_AGE_MS))
      .filter((c) => c.state === "CONTAINER_RUNNING")
      .map((c) => c.id);
    const listed = new Set(running);
    for (const id of refused) if (!listed.has(id)) refused.delete(id);
    for (const id of logPaths.keys()) if (!listed.has(id)) logPaths.delete(id);
    const queue = running.filter((id) => !refused.has(id));
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift())
        await processContainer(id).catch((error: Error) =>
          log.warn(`cannot rotate the log of container ${id!.slice(0, 12)}: ${error.message}`),
        );
    };
    await Promise.all(Array.from({ length: Math.min(policy.maxWorkers, queue.length) }, worker));
  };

  return {
    rotateOnce,
    run: (signal) =>
      every(clock, policy.monitorIntervalMs, signal, rotateOnce, (error) =>
        log.warn(`container log rotation failed: ${error.message}`),
      ),
  };
}
