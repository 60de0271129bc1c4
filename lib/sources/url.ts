// The URL source (--manifest_url): polled every --http_check_frequency with conditional GETs.
// Any failure keeps the pods it last served; failures are logged without flooding.
import { systemClock, type Clock, type Timer } from "../clock.ts";
import { silentLogger, type Logger } from "../log.ts";
import { readManifests } from "../api/manifest.ts";
import { DEFAULT_MAX_MANIFEST_BYTES } from "../api/manifest-text.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { KubeletError } from "../api/types.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";
import { snapshotSignature, type PodSource, type SourceSnapshot } from "./source.ts";

export interface UrlSourceOptions {
  url: string;
  /** --manifest_url_header: header name → values. */
  headers?: Record<string, string[]>;
  /** Poll period, ms (--http_check_frequency). */
  checkFrequency: number;
  timeoutMs?: number;
  /** Largest body accepted, bytes. */
  maxBytes?: number;
  clock?: Clock;
  log?: Logger;
  metrics?: KubeletMetrics;
}

export type UrlSource = PodSource & { readOnce(): Promise<SourceSnapshot> };

const LOUD_FAILURES = 3;
const QUIET_LOG_PERIOD_MS = 60_000;

export function createUrlSource(options: UrlSourceOptions): UrlSource {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  let validators: { etag?: string; lastModified?: string } = {};
  let lastGood: LastGood | undefined;
  let lastSnapshot: SourceSnapshot | undefined;

  /** One GET; resolves to the current snapshot, or throws KubeletError("SourceUnavailable"). */
  const readOnce = async (): Promise<SourceSnapshot> => {
    const headers = new Headers();
    for (const [name, values] of Object.entries(options.headers ?? {}))
      for (const value of values) headers.append(name, value);
    if (lastSnapshot && validators.etag) headers.set("If-None-Match", validators.etag);
    if (lastSnapshot && validators.lastModified) headers.set("If-Modified-Since", validators.lastModified);
    let response: Response;
    try {
      response = await fetch(options.url, {
        headers,
        redirect: "follow",
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      const reason =
        (error as Error).name === "TimeoutError"
          ? `no answer within ${(options.timeoutMs ?? 10_000) / 1000}s`
          : (error as Error).message;
      throw new KubeletError("SourceUnavailable", `cannot get manifests from ${options.url}: ${reason}`, {
        cause: error,
      });
    }
    if (response.status === 304 && lastSnapshot) return lastSnapshot;
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new KubeletError(
        "SourceUnavailable",
        `cannot get manifests from ${options.url}: HTTP ${response.status} ${response.statusText}`,
      );
    }
    const body = await readLimited(response, maxBytes, options.url);
    validators = {
      etag: response.headers.get("etag") ?? undefined,
      lastModified: response.headers.get("last-modified") ?? undefined,
    };
    const read = readKeepingLastGood(body, lastGood, (text) =>
      readManifests(text, { source: "url", origin: options.url }, { maxBytes }),
    );
    lastGood = read.last;
    lastSnapshot = read.snapshot;
    return read.snapshot;
  };

  return {
    name: "url",
    readOnce,
    start(emit) {
      let stopped = false;
      let timer: Timer | undefined;
      let lastSignature: string | undefined;
      let failures = 0;
      let lastLoggedAt = 0;
      let polling: Promise<void> = Promise.resolve();
      const poll = async () => {
        try {
          const snapshot = await readOnce();
          if (failures > 0) log.info(`manifest URL ${options.url} answers again after ${failures} failed polls`);
          failures = 0;
          const signature = snapshotSignature(snapshot);
          if (signature !== lastSignature && !stopped) {
            lastSignature = signature;
            emit(snapshot);
          }
        } catch (error) {
          failures++;
          options.metrics?.sourceError("url");
          const now = clock.now();
          if (failures <= LOUD_FAILURES || now - lastLoggedAt >= QUIET_LOG_PERIOD_MS) {
            lastLoggedAt = now;
            log.warn(
              `${(error as Error).message}; keeping the pods it served before${failures === LOUD_FAILURES ? " (further failures are logged once a minute)" : ""}`,
              { failures },
            );
          }
        }
      };
      const loop = () => {
        polling = poll().then(() => {
          if (!stopped) timer = clock.setTimeout(loop, options.checkFrequency);
        });
      };
      loop();
      return async () => {
        stopped = true;
        timer?.cancel();
        await polling;
      };
    },
  };
}

async function readLimited(response: Response, maxBytes: number, url: string): Promise<Buffer> {
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new KubeletError(
      "SourceUnavailable",
      `manifests at ${url} are ${declared} bytes, over the ${maxBytes}-byte limit`,
    );
  }
  const reader = response.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new KubeletError("SourceUnavailable", `manifests at ${url} are over the ${maxBytes}-byte limit`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
