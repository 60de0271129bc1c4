// `promtool check metrics` (Debian's prometheus package) over an exposition, less the lint problems upstream's own
// metrics have by name: the Go kubelet keeps the same exceptions (test/instrumentation's lint exception list).
import { spawnSync } from "node:child_process";

/**
 * Series the Go kubelet names against promtool's rules and keeps so (pkg/kubelet/metrics/metrics.go): counters
 * ending in `_count` rather than `_total`. Named as upstream names them, they get the same exception here.
 */
export const UPSTREAM_LINT_EXCEPTIONS = [
  "kubelet_evented_pleg_connection_error_count",
  "kubelet_evented_pleg_connection_success_count",
];

/** Whether promtool is on PATH. */
export const hasPromtool = (): boolean => spawnSync("promtool", ["--version"]).error === undefined;

/** promtool's problems with `text`, one a line, those of the upstream exceptions left out; [] when it is clean. */
export function promtoolProblems(text: string, exceptions: string[] = UPSTREAM_LINT_EXCEPTIONS): string[] {
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (check.error) throw new Error(`cannot run promtool: ${check.error.message}`);
  const problems = `${check.stdout}${check.stderr}`
    .split("\n")
    .filter((line) => line.trim() && !exceptions.some((name) => line.startsWith(`${name} `)));
  if (check.status !== 0 && check.status !== 3) problems.push(`promtool exited ${check.status}`);
  return problems;
}
