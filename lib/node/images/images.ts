// Image pulls: pull policy, a token bucket over all pulls (--registry_qps/--registry_burst),
// one pull per image at a time, pulls one after another (--serialize_image_pulls) or a bounded
// number at once (--max_parallel_image_pulls), a pull that makes no progress cancelled
// (--image_pull_progress_deadline, on a runtime that reports progress: Docker, not the CRI), and
// per-image back-off (ErrImagePull → ImagePullBackOff).
import { Backoff, type BackoffPersistence } from "../flowcontrol/backoff.ts";
import { systemClock, type Clock, type Timer } from "../../clock.ts";
import {
  isRuntimeError,
  type ImageStatus,
  type LayerProgress,
  type PullProgress,
  type RegistryAuth,
  type Runtime,
} from "../../container/runtime.ts";
import {
  credentialsFor,
  credentialsFromAuths,
  defaultDockerConfigPaths,
  type AuthEntry,
} from "../../container/docker/docker-credentials.ts";
import { configBytes, type ConfigLookup } from "../../api/config-objects.ts";
import type { EventRecorder } from "../events/events.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { KubeletMetrics } from "../../metrics.ts";
import { KubeletError, type Pod } from "../../api/types.ts";
import { lastingPullFailure, withOfflineHint } from "../../container/pull-failure.ts";

/** A container's imagePullPolicy. */
export type PullPolicy = "Always" | "IfNotPresent" | "Never";

/** Makes images present before their containers are created. */
export interface ImageManager {
  /**
   * Ensures the image per policy and returns its status as the runtime answered it (the container's config reads its
   * user from it: no second ImageStatus); throws ErrImagePull, ImagePullBackOff or ErrImageNeverPull.
   */
  ensureImage(image: string, policy: PullPolicy, pod: Pod): Promise<ImageStatus>;
}

/** qps/burst: --registry_qps/--registry_burst (qps 0 = unlimited); dockerConfigPaths default to Docker's own. */
export interface ImageManagerOptions {
  qps: number;
  burst: number;
  /** --serialize_image_pulls: one pull at a time (default true, as the kubelet). */
  serialize?: boolean;
  /** --max_parallel_image_pulls: pulls at once when not serialized (0 = no limit). */
  maxParallel?: number;
  /**
   * --image_pull_progress_deadline: a pull with no progress message for this long is cancelled (ms, default 1m);
   * only on a runtime that reports pull progress (Docker), never on the CRI.
   */
  progressDeadlineMs?: number;
  dockerConfigPaths?: string[];
  /** Where the pod's imagePullSecrets (kubernetes.io/dockerconfigjson Secrets) are found. */
  configs?: ConfigLookup;
  clock?: Clock;
  log?: Logger;
  metrics?: KubeletMetrics;
  events?: EventRecorder;
  /** Refuses a pull that would fill the image filesystem (image GC's check); throws with the reason. */
  checkSpace?: (image: string) => Promise<void>;
  /** Keeps the image-pull back-off across kubelet restarts. */
  backoffPersistence?: BackoffPersistence;
  /** Hears each pull start, move and end (runonce shows them). */
  pulls?: PullObserver;
}

/** What a display of pulls hears. */
export interface PullObserver {
  started(image: string): void;
  progress(image: string, detail: LayerProgress): void;
  /** `sizeBytes` once pulled; an error when it failed. */
  finished(image: string, outcome: { seconds: number; sizeBytes?: number; error?: string }): void;
}

/** A token bucket: `burst` pulls at once, refilled at `qps` per second; waits, never drops. */
export class TokenBucket {
  #tokens: number;
  #updated: number;
  #queue: Promise<void> = Promise.resolve();

  constructor(
    readonly qps: number,
    readonly burst: number,
    readonly clock: Clock,
  ) {
    this.#tokens = Math.max(1, burst);
    this.#updated = clock.now();
  }

  /** Resolves when a token is available (immediately when qps is 0, unlimited). */
  take(): Promise<void> {
    if (this.qps <= 0) return Promise.resolve();
    const turn = this.#queue.then(async () => {
      const now = this.clock.now();
      this.#tokens = Math.min(Math.max(1, this.burst), this.#tokens + ((now - this.#updated) / 1000) * this.qps);
      this.#updated = now;
      if (this.#tokens < 1) {
        await this.clock.sleep(((1 - this.#tokens) / this.qps) * 1000);
        this.#tokens = 1;
        this.#updated = this.clock.now();
      }
      this.#tokens -= 1;
    });
    this.#queue = turn;
    return turn;
  }
}

/** A counting semaphore: at most `limit` holders, the others wait in arrival order. */
function slots(limit: number): () => Promise<() => void> {
  let free = limit;
  const queue: Array<() => void> = [];
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else free++;
  };
  return () =>
    free > 0 ? (free--, Promise.resolve(release)) : new Promise((resolve) => queue.push(() => resolve(release)));
}

/** The image manager over a runtime: policy, QPS bucket, shared pulls, back-off, credentials, events. */
export function createImageManager(options: ImageManagerOptions, runtime: Runtime): ImageManager {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const bucket = new TokenBucket(options.qps, options.burst, clock);
  const backoff = new Backoff(10_000, 300_000, clock, options.backoffPersistence);
  const failures = new Map<string, string>();
  const inflight = new Map<string, Promise<ImageStatus>>();
  const configPaths = options.dockerConfigPaths ?? defaultDockerConfigPaths();
  const parallel = (options.serialize ?? true) ? 1 : options.maxParallel || Infinity;
  const acquire = slots(parallel);
  const deadline = options.progressDeadlineMs ?? 60_000;

  /**
   * One pull on the runtime, cancelled when no progress message arrives for the deadline (the
   * dockershim's progress reporter): a stalled registry must not hold the pull slot for ever. A runtime
   * that reports no progress (the CRI's PullImage) gets no deadline, as in the Go kubelet.
   */
  const pullWithDeadline = async (image: string, auth: RegistryAuth | undefined) => {
    if (!runtime.reportsPullProgress) return runtime.pullImage(image, { auth });
    const controller = new AbortController();
    let latest: PullProgress = { message: "", status: "", bytes: 0 };
    let timer: Timer | undefined;
    const arm = () => {
      timer?.cancel();
      timer = clock.setTimeout(() => {
        const reason = `Cancel pulling image "${image}" because of no progress for ${deadline / 1000}s, latest progress: "${latest.message}" (${latest.bytes} bytes received)`;
        controller.abort(new KubeletError("ImagePullStalled", reason));
      }, deadline);
    };
    arm();
    try {
      await runtime.pullImage(image, {
        auth,
        signal: controller.signal,
        onProgress: (progress) => {
          latest = progress;
          arm();
          options.pulls?.progress(image, progress);
        },
      });
    } finally {
      timer?.cancel();
    }
  };

  /** The pod's imagePullSecrets come first, as in Kubernetes; the node's config.json is the fallback. */
  const pullSecretCredentials = (image: string, pod: Pod) => {
    for (const ref of pod.spec.imagePullSecrets ?? []) {
      const secret = options.configs?.get("Secret", pod.metadata.namespace, ref.name ?? "");
      const json = secret && configBytes(secret).get(".dockerconfigjson");
      if (!json) continue;
      try {
        const auths = (JSON.parse(json.toString("utf8")) as { auths?: Record<string, AuthEntry> }).auths ?? {};
        const found = credentialsFromAuths(image, auths);
        if (found) return found;
      } catch {
        // validated on admission; an unreadable one is simply not used
      }
    }
    return undefined;
  };

  const pull = async (image: string, pod: Pod): Promise<ImageStatus> => {
    const release = await acquire();
    try {
      return await pullNow(image, pod);
    } finally {
      release();
    }
  };

  const pullNow = async (image: string, pod: Pod): Promise<ImageStatus> => {
    await bucket.take();
    options.events?.record(pod, "Normal", "Pulling", `Pulling image "${image}"`);
    options.pulls?.started(image);
    const started = clock.now();
    try {
      await options.checkSpace?.(image);
      await pullWithDeadline(image, pullSecretCredentials(image, pod) ?? credentialsFor(image, configPaths));
      const status = await runtime.imageStatus(image);
      if (!status?.id) throw new KubeletError("ImagePullFailed", `image ${image} is missing right after its pull`);
      const seconds = (clock.now() - started) / 1000;
      options.pulls?.finished(image, { seconds, sizeBytes: status.sizeBytes });
      options.metrics?.imagePull(seconds, false);
      options.metrics?.podImagePulled(pod.metadata.uid, started, clock.now());
      options.events?.record(pod, "Normal", "Pulled", `Successfully pulled image "${image}" in ${seconds.toFixed(3)}s`);
      backoff.reset(image);
      failures.delete(image);
      return status;
    } catch (error) {
      options.metrics?.imagePull((clock.now() - started) / 1000, true);
      options.metrics?.podImagePulled(pod.metadata.uid, started, clock.now());
      options.pulls?.finished(image, { seconds: (clock.now() - started) / 1000, error: (error as Error).message });
      const failure = `Failed to pull image "${image}": ${(error as Error).message}`;
      // A registry that does not resolve, or has no such image, needs the operator: say where to read how.
      const message = lastingPullFailure(failure) ? withOfflineHint(failure) : failure;
      options.events?.record(pod, "Warning", "Failed", message);
      // A daemon outage is not the image's fault: no image back-off, the sync loop retries.
      if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
      const delay = backoff.next(image);
      failures.set(image, message);
      log.warn(`${message}; next attempt in ${delay / 1000}s`);
      throw new KubeletError("ErrImagePull", message, { cause: error });
    }
  };

  return {
    async ensureImage(image, policy, pod) {
      if (policy !== "Always") {
        const present = await runtime.imageStatus(image);
        if (present?.id) return present;
        if (policy === "Never") {
          throw new KubeletError(
            "ErrImageNeverPull",
            `Container image "${image}" is not present with pull policy of Never`,
          );
        }
      }
      const running = inflight.get(image);
      if (running) return running;
      const wait = backoff.remaining(image);
      if (wait > 0) {
        options.events?.record(pod, "Normal", "BackOff", `Back-off pulling image "${image}"`);
        throw new KubeletError(
          "ImagePullBackOff",
          `Back-off pulling image "${image}" (${Math.ceil(wait / 1000)}s left): ${failures.get(image) ?? ""}`,
        );
      }
      const attempt = pull(image, pod).finally(() => inflight.delete(image));
      inflight.set(image, attempt);
      return attempt;
    },
  };
}
