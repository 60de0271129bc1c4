// While the container runtime does not answer: one line at once and then one every 30 s, with the cause,
// its fix and the pods waiting (namespace/name), instead of a warning from each of the six components that
// called it; one line when it answers again. The Go kubelet's "container runtime is down" PLEG line, once.
import type { Clock } from "../../clock.ts";
import type { Runtime } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";

export interface RuntimeOutageOptions {
  log: Logger;
  clock: Clock;
  /** How often an outage that lasts is said again, ms (default 30 s). */
  everyMs?: number;
}

export interface RuntimeOutage {
  /** The runtime with its calls watched: a RuntimeUnavailable failure starts or continues the outage, an answer ends it. */
  watch(runtime: Runtime): Runtime;
  /** `log` without the lines that repeat the outage's cause while it lasts (its own line says it). */
  readonly log: Logger;
  /** Names (namespace/name) of the pods that wait on the runtime, for the outage's line. */
  waitingPods(pods: () => string[]): void;
}

/** How many waiting pods the line names before it says "and N more". */
const NAMED_PODS = 10;

export function createRuntimeOutage(options: RuntimeOutageOptions): RuntimeOutage {
  const { clock } = options;
  const everyMs = options.everyMs ?? 30_000;
  let pods: () => string[] = () => [];
  let outage: { since: number; said: boolean; causes: Set<string> } | undefined;
  // Kept across outages, so a runtime that comes and goes is said at most once per period too.
  let saidAt = -Infinity;

  const failed = (error: unknown) => {
    if ((error as { code?: string }).code !== "RuntimeUnavailable") return;
    // "cannot list containers: the Docker Engine is unreachable: …": the cause is the same whatever the call.
    const cause = (error as Error).message.replace(/^cannot [^:]+: /, "");
    const now = clock.now();
    outage ??= { since: now, said: false, causes: new Set() };
    outage.causes.add(cause);
    if (now - saidAt < everyMs) return;
    saidAt = now;
    outage.said = true;
    const waiting = pods();
    const named = waiting.slice(0, NAMED_PODS).join(", ");
    const more = waiting.length > NAMED_PODS ? ` and ${waiting.length - NAMED_PODS} more` : "";
    options.log.warn(
      `container runtime unavailable${now > outage.since ? ` for ${Math.round((now - outage.since) / 1000)}s` : ""}: ${cause}${waiting.length ? `; pods waiting: ${named}${more}` : ""} (said again every ${everyMs / 1000}s while it lasts)`,
    );
  };
  const answered = () => {
    if (!outage) return;
    if (outage.said)
      options.log.info(
        `container runtime answers again after ${Math.round((clock.now() - outage.since) / 1000)}s: pods sync now`,
      );
    outage = undefined;
  };

  const quiet = (message: string) => outage !== undefined && [...outage.causes].some((c) => message.includes(c));
  const filtered = (log: Logger): Logger => ({
    debug: log.debug,
    info: log.info,
    warn: (message, fields) => void (!quiet(message) && log.warn(message, fields)),
    error: (message, fields) => void (!quiet(message) && log.error(message, fields)),
    child: (component) => filtered(log.child(component)),
  });

  return {
    log: filtered(options.log),
    waitingPods(list) {
      pods = list;
    },
    watch(runtime) {
      return new Proxy(runtime, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            const result = value.apply(target, args);
            if (result instanceof Promise) result.then(answered, failed);
            return result;
          };
        },
      });
    },
  };
}
