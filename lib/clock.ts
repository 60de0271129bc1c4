// Time as an injected dependency, so loops and back-offs are testable without sleeping.

/** A cancellable timer handle. */
export interface Timer {
  cancel(): void;
}

/** The clock every timed part of the kubelet receives instead of calling Date/setTimeout. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Runs `fn` now and then every `ms` until the signal aborts; a failing run is reported and the next one still comes. */
export async function every(
  clock: Clock,
  ms: number,
  signal: AbortSignal,
  fn: () => Promise<unknown>,
  onError: (error: Error) => void,
): Promise<void> {
  while (!signal.aborted) {
    await fn().catch(onError);
    await clock.sleep(ms, signal).catch(() => {});
  }
}

/** `work`'s result, or undefined as soon as `signal` aborts (the work itself carries on, unobserved). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  },
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const handle = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(handle);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};
