// `kubelet reset`: removes the pods (sandboxes, containers) and the state the kubelet created on this
// node, one line per removal as it happens and the pods' stops as they wait (reset-progress.ts); `--dry-run`
// prints the same lines and changes nothing. Refuses while a kubelet holds the lock file. Exit 0 done (or
// nothing to do), 1 errors.
import { systemClock, type Clock } from "../clock.ts";
import type { KubeletConfig } from "../config/config-types.ts";
import type { Logger } from "../log.ts";
import type { ResetStep } from "../node/reset/node-reset.ts";
import { createResetProgress } from "./reset-progress.ts";

export interface ResetCommandOptions {
  dryRun: boolean;
  out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  err: NodeJS.WritableStream;
  log: Logger;
  /** For the terminal's countdown (default the system clock). */
  clock?: Clock;
}

/** Runs the reset and reports it; resolves to the exit code. */
export async function resetCommand(config: KubeletConfig, options: ResetCommandOptions): Promise<number> {
  const { resetOnce } = await import("../kubelet.ts");
  const verb = options.dryRun ? "would remove" : "removing";
  const progress = createResetProgress({
    out: options.out,
    tty: options.out.isTTY === true,
    clock: options.clock ?? systemClock,
  });
  try {
    const { runtime, steps } = await resetOnce(config, {
      log: options.log,
      dryRun: options.dryRun,
      onStep: (step) => progress.line(`${verb} ${step.kind} ${step.target}${podSuffix(step)}`),
      onPodStopping: progress.stopping,
      onPodStopped: progress.stopped,
    });
    progress.close();
    options.out.write(`${resetSummary(steps, { dryRun: options.dryRun, runtime, rootDir: config.rootDir })}\n`);
    return 0;
  } catch (error) {
    progress.close();
    options.err.write(`kubelet: reset: ${(error as Error).message}\n`);
    return 1;
  }
}

const podSuffix = (step: ResetStep) => (step.pod && step.kind === "container" ? ` (pod ${step.pod})` : "");

/** The last line: what was (or would be) removed, counted by kind, or that there was nothing to remove. */
export function resetSummary(steps: ResetStep[], where: { dryRun: boolean; runtime: string; rootDir: string }): string {
  if (steps.length === 0)
    return `nothing to reset: no pods of this kubelet on the ${where.runtime} and no state under ${where.rootDir}`;
  const count = (kind: ResetStep["kind"], one: string, many = `${one}s`) => {
    const n = steps.filter((s) => s.kind === kind).length;
    return n ? [`${n} ${n === 1 ? one : many}`] : [];
  };
  const parts = [
    ...count("pod sandbox", "pod sandbox", "pod sandboxes"),
    ...count("container", "container"),
    ...count("pod cgroup", "pod cgroup"),
    ...count("pod directory", "pod directory", "pod directories"),
    ...count("pod log directory", "pod log directory", "pod log directories"),
    ...count("state", "state directory", "state directories"),
  ];
  const list = parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}` : parts[0];
  return where.dryRun
    ? `dry run: would remove ${list}; nothing was changed`
    : `reset: removed ${list} (${where.runtime}, ${where.rootDir})`;
}
