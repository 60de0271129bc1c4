// `kubelet fleet rollout …`: its flags, the command line as a request, and its exit codes. Loaded with
// the CLI, so it imports nothing of etcd (fleet-rollout-command.ts, which answers, loads when run).
import { parseIntOrPercent } from "./fleet-rollout-plan.ts";
import type { RolloutStrategy } from "./fleet-rollout.ts";

/** Exit codes of `rollout`, `undo`, `resume` and `status`. */
export const ROLLOUT_EXIT = {
  /** Every batch Ready: the rollout is complete (or there was nothing to change). */
  complete: 0,
  /** An error, or a rollback that itself failed. */
  failed: 1,
  /** A wrong command line. */
  usage: 2,
  /** A batch failed and the rollout was rolled back to the previous revision. */
  rolledBack: 3,
  /** Paused: by `pause`, by --on-failure pause after a failed batch, or because the placement changed under it. */
  paused: 4,
  /** (`status`) under way, but no command drives it (the one that did was stopped): `resume` finishes it. */
  undriven: 5,
} as const;

const SUBVERBS = ["status", "history", "undo", "pause", "resume"] as const;

export type RolloutRequest =
  | {
      verb: "start";
      pod?: string;
      namespace: string;
      file: string;
      strategy: RolloutStrategy;
      changeCause?: string;
      allowPrivileged?: boolean;
    }
  | { verb: "status" | "history" | "pause" | "resume"; pod: string; namespace: string }
  | {
      verb: "undo";
      pod: string;
      namespace: string;
      toRevision?: number;
      strategy: RolloutStrategy;
      /** The strategy's fields given on the command line: the rest are the undone rollout's own (its --max-surge). */
      given: Partial<RolloutStrategy>;
    };

/** Adds the rollout flags to the fleet command (-f and -n are the placement ones). */
export function rolloutOptions(command: { option(name: string, description: string): unknown }): void {
  command.option("--max-unavailable <value>", "rollout: nodes (or N%) updated per batch (default 25%)");
  command.option("--max-surge <value>", "rollout: nodes per batch where the new pod starts beside the old (default 0)");
  command.option("--min-ready-seconds <seconds>", "rollout: a new pod counts once Ready this long (default 0)");
  command.option("--progress-deadline <seconds>", "rollout: a batch not Ready within this fails (default 600)");
  command.option("--on-failure <action>", "rollout: rollback (default) or pause after a failed batch");
  command.option("--revision-history-limit <n>", "rollout: old revisions kept in etcd (default 10)");
  command.option("--to-revision <n>", "rollout undo: the revision to go back to (default: the previous one)");
  command.option("--change-cause <text>", "rollout: why, recorded with the revision (kubernetes.io/change-cause)");
}

/**
 * As a Deployment's validation: the error when no batch could be taken (a percentage rounding to 0 nodes is resolved
 * to 1 node), or undefined.
 */
export function noBatchTaken(strategy: Pick<RolloutStrategy, "maxUnavailable" | "maxSurge">): string | undefined {
  const { maxUnavailable, maxSurge } = strategy;
  if (!/^0+%?$/.test(maxUnavailable) || !/^0+%?$/.test(maxSurge)) return undefined;
  return `--max-unavailable "${maxUnavailable}": Invalid value: may not be 0 when \`maxSurge\` is 0 (give --max-unavailable 1 or --max-surge 1)`;
}

/** Option name → the strategy field it sets. */
const STRATEGY_FLAGS: Record<string, keyof RolloutStrategy> = {
  maxUnavailable: "maxUnavailable",
  maxSurge: "maxSurge",
  minReadySeconds: "minReadySeconds",
  progressDeadline: "progressDeadlineSeconds",
  onFailure: "onFailure",
  revisionHistoryLimit: "revisionHistoryLimit",
};

const seconds = (value: unknown, flag: string, fallback: number, usage: (m: string) => Error) => {
  if (value === undefined) return fallback;
  const n = Number(String(value).replace(/s$/, ""));
  if (!Number.isInteger(n) || n < 0)
    throw usage(`${flag} "${value}": expected a whole number of seconds (e.g. ${flag} 30)`);
  return n;
};

function strategyOf(options: Record<string, unknown>, usage: (m: string) => Error): RolloutStrategy {
  const intOrPercent = (value: unknown, flag: string, fallback: string) => {
    if (value === undefined) return fallback;
    if (!parseIntOrPercent(String(value)))
      throw usage(`${flag} "${value}": expected a number of nodes or a percentage (e.g. ${flag} 10%)`);
    return String(value);
  };
  const onFailure = options.onFailure ?? "rollback";
  if (onFailure !== "rollback" && onFailure !== "pause")
    throw usage(`--on-failure "${onFailure}": expected rollback or pause`);
  const maxUnavailable = intOrPercent(options.maxUnavailable, "--max-unavailable", "25%");
  const maxSurge = intOrPercent(options.maxSurge, "--max-surge", "0");
  const noBatch = noBatchTaken({ maxUnavailable, maxSurge });
  if (noBatch) throw usage(noBatch);
  return {
    maxUnavailable,
    maxSurge,
    minReadySeconds: seconds(options.minReadySeconds, "--min-ready-seconds", 0, usage),
    progressDeadlineSeconds: seconds(options.progressDeadline, "--progress-deadline", 600, usage),
    onFailure,
    revisionHistoryLimit: seconds(options.revisionHistoryLimit, "--revision-history-limit", 10, usage),
  };
}

/** `fleet rollout …` as a request; `usage` builds the error for a wrong one. */
export function rolloutRequest(
  names: string[],
  options: Record<string, unknown>,
  usage: (message: string) => Error,
): RolloutRequest {
  const namespace = typeof options.namespace === "string" ? options.namespace : "default";
  const file = typeof options.filename === "string" ? options.filename : undefined;
  const [first, second, ...rest] = names;
  if (first && (SUBVERBS as readonly string[]).includes(first) && !file) {
    if (!second || rest.length > 0) throw usage(`fleet rollout ${first} needs one POD`);
    if (first === "undo") {
      const to = options.toRevision === undefined ? undefined : Number(options.toRevision);
      if (to !== undefined && (!Number.isInteger(to) || to < 1))
        throw usage(
          `--to-revision "${options.toRevision}": expected a revision number (kubelet fleet rollout history ${second})`,
        );
      const strategy = strategyOf(options, usage);
      const given = Object.fromEntries(
        Object.entries(STRATEGY_FLAGS)
          .filter(([option]) => options[option] !== undefined)
          .map(([, field]) => [field, strategy[field]]),
      );
      return { verb: "undo", pod: second, namespace, toRevision: to, strategy, given };
    }
    return { verb: first as "status" | "history" | "pause" | "resume", pod: second, namespace };
  }
  if (!file || names.length > 1)
    throw usage("fleet rollout needs POD -f FILE, or one of status, history, undo, pause, resume and a POD");
  const changeCause = typeof options.changeCause === "string" ? options.changeCause : undefined;
  const allowPrivileged = options.allowPrivileged === true || options.allowPrivileged === "true";
  return {
    verb: "start",
    pod: first,
    namespace,
    file,
    strategy: strategyOf(options, usage),
    changeCause,
    allowPrivileged,
  };
}
