// One Engine call with a deadline and the port's error codes: call() runs it, mapError() names what went wrong.
import type { KubeletError } from "../../api/types.ts";
import { runtimeError } from "../runtime.ts";
import { unreachableFix } from "../unreachable.ts";

/** An error as dockerode throws it: the Engine's HTTP status and message, or the socket's code. */
export type DockerError = Error & { statusCode?: number; code?: string; json?: { message?: string } };

/** Maps dockerode/HTTP errors to the port's codes. */
export function mapError(error: unknown, action: string): KubeletError {
  const e = error as DockerError;
  if (e.name === "KubeletError") return e as KubeletError;
  const message = (e.json?.message ?? e.message ?? String(error)).trim();
  if (e.statusCode === 404) return runtimeError("NotFound", `cannot ${action}: ${message}`, { cause: error });
  if (e.statusCode === 409) return runtimeError("Conflict", `cannot ${action}: ${message}`, { cause: error });
  const unreachable =
    /^(ECONNREFUSED|ENOENT|EPIPE|ECONNRESET|EACCES|ETIMEDOUT|EHOSTUNREACH|ENOTCONN|FailedToOpenSocket|ConnectionRefused)$/;
  if (
    !e.statusCode &&
    ((e.code && unreachable.test(e.code)) || /socket|connect|ECONNREFUSED|ENOENT|No such file/i.test(message))
  ) {
    const fix = unreachableFix(`${e.code ?? ""} ${message}`, { flag: "--docker_endpoint", service: "docker" });
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${action}: the Docker Engine is unreachable: ${message}${fix ? `: ${fix}` : ""}`,
      { cause: error },
    );
  }
  return runtimeError("RuntimeError", `cannot ${action}: ${message}`, { cause: error });
}

/** How long a call may take and what else ends it. */
export interface CallLimits {
  /** Infinity = no deadline of its own (the caller's signal ends it). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** The call opens a stream: the deadline ends at the response, the caller's signal stays linked. */
  stream?: boolean;
}

/**
 * Runs one Engine API call with a deadline and maps its errors. dockerode's own `timeout` is a
 * socket idle timeout that would also cut quiet event and log streams, so deadlines are signals.
 */
export async function call<T>(
  action: string,
  fn: (signal: AbortSignal) => PromiseLike<T>,
  limits: CallLimits,
): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(limits.signal!.reason);
  if (limits.signal?.aborted) onAbort();
  limits.signal?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  const timer = Number.isFinite(limits.timeoutMs)
    ? setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, limits.timeoutMs)
    : undefined;
  // Also race the abort, for the calls (exec start) whose dockerode method takes no signal.
  const aborted = new Promise<never>((_, reject) =>
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
  );
  aborted.catch(() => {});
  try {
    return await Promise.race([fn(controller.signal), aborted]);
  } catch (error) {
    limits.signal?.removeEventListener("abort", onAbort);
    if (timedOut)
      throw runtimeError(
        "RuntimeUnavailable",
        `cannot ${action}: the Docker Engine did not answer within ${limits.timeoutMs} ms`,
        { cause: error },
      );
    if (limits.signal?.aborted) throw limits.signal.reason;
    throw mapError(error, action);
  } finally {
    clearTimeout(timer);
    if (!limits.stream) limits.signal?.removeEventListener("abort", onAbort);
  }
}

/** Runs `fn`, taking the Engine's answer with one of `codes` as done (304: already stopped/started; 404: gone). */
export async function tolerating(codes: number[], fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    if (!codes.includes((error as DockerError).statusCode ?? 0)) throw error;
  }
}

/** The short form of an id that messages name (Docker's 12 characters). */
export const short = (id: string): string => id.slice(0, 12);
