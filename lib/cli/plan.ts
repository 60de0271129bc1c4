// `kubelet plan`: prints what a sync would do to the node — per pod, with reasons — and changes
// nothing. Exit codes follow `terraform plan -detailed-exitcode`: 0 no changes, 2 changes, 1 errors.
import type { KubeletConfig } from "../config/config-types.ts";
import { formatIssue, type RejectedPod } from "../api/types.ts";
import type { Logger } from "../log.ts";
import type { NodePlan, PlannedAction } from "../sync/node-plan.ts";

export interface PlanCommandOptions {
  format: "text" | "json";
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  log: Logger;
}

export const PLAN_EXIT = { noChanges: 0, error: 1, changes: 2 } as const;

/** Runs the plan and prints it; resolves to the exit code. */
export async function planCommand(config: KubeletConfig, options: PlanCommandOptions): Promise<number> {
  const { planOnce } = await import("../kubelet.ts");
  let result: { plan: NodePlan; rejected: RejectedPod[] };
  try {
    result = await planOnce(config, { log: options.log });
  } catch (error) {
    options.err.write(`kubelet: plan: ${(error as Error).message}\n`);
    return PLAN_EXIT.error;
  }
  const { plan, rejected } = result;
  const code = rejected.length ? PLAN_EXIT.error : plan.changes ? PLAN_EXIT.changes : PLAN_EXIT.noChanges;
  if (options.format === "json") {
    options.out.write(`${JSON.stringify({ ...plan, rejected }, null, 2)}\n`);
    return code;
  }
  options.out.write(formatPlan(plan, rejected));
  return code;
}

const SYMBOL: Record<PlannedAction["action"], string> = {
  "create-pod": "+",
  "recreate-pod": "-/+",
  "pull-image": "↓",
  "start-init-container": "+",
  "start-container": "+",
  "restart-container": "↻",
  "replace-container": "-/+",
  "resize-container": "~",
  "remove-container": "-",
  "remove-pod": "-",
  wait: "!",
};

/** The text form: a block per pod, a summary line; exactly `no changes` when a sync would do nothing. */
export function formatPlan(plan: NodePlan, rejected: RejectedPod[] = []): string {
  let text = "";
  for (const r of rejected)
    text += `invalid ${r.kind ?? "pod"} ${r.pod ?? `document ${r.document ?? 0}`} in ${r.origin}: ${r.issues
      .filter((i) => i.severity === "error")
      .map(formatIssue)
      .join("; ")}\n`;
  if (!plan.changes && plan.pods.length === 0) return `${text}no changes\n`;
  for (const pod of plan.pods) {
    text += `pod ${pod.pod}${pod.origin ? ` (${pod.origin})` : ""}\n`;
    for (const a of pod.actions) {
      const subject = a.container
        ? `${a.action} ${a.container}${a.image && a.action !== "remove-container" ? ` (${a.image})` : ""}`
        : a.image
          ? `${a.action} ${a.image}`
          : a.action;
      text += `  ${SYMBOL[a.action].padEnd(3)} ${subject}: ${a.reason}\n`;
    }
  }
  const whole: PlannedAction["action"][] = ["create-pod", "recreate-pod", "remove-pod"];
  // A pod counts once: created, recreated or removed as a whole, or else changed container by container.
  const count = (kinds: PlannedAction["action"][]) =>
    plan.pods.filter(
      (p) =>
        p.actions.some((a) => kinds.includes(a.action)) &&
        (kinds.some((k) => whole.includes(k)) || !p.actions.some((a) => whole.includes(a.action))),
    ).length;
  text += `Plan: ${count(["create-pod"])} pods to create, ${count(["recreate-pod"])} to recreate, ${count([
    "replace-container",
    "start-container",
    "start-init-container",
    "restart-container",
    "remove-container",
  ])} to change, ${count(["remove-pod"])} to remove; ${plan.pulls.length} images to pull.\n`;
  return text;
}
