// One container's stop on the Runtime port, timed, and whether its PID 1 ignored SIGTERM (it took the whole
// grace period and was killed, exit code 137): what a pod's stop and `kubelet reset` say of a slow stop.
import type { Clock } from "../clock.ts";
import type { Runtime } from "./runtime.ts";

/** What one stop took and why. */
export interface StopOutcome {
  /** Seconds the runtime's stop took. */
  seconds: number;
  /** The container waited out its grace period and was killed (SIGKILL, exit code 137). */
  ignoredSigterm: boolean;
}

/** The exit code of a process killed by SIGKILL (128 + 9). */
const KILLED = 137;

/**
 * Stops a container within `graceSeconds` and tells whether it ignored SIGTERM. The runtimes round the grace
 * period to whole seconds (Docker rounds, CRI rounds up), so a stop within a second of it counts as the whole.
 */
export async function stopContainerTimed(
  runtime: Pick<Runtime, "stopContainer" | "inspectContainer">,
  clock: Pick<Clock, "now">,
  id: string,
  graceSeconds: number,
): Promise<StopOutcome> {
  const began = clock.now();
  await runtime.stopContainer(id, graceSeconds);
  const seconds = (clock.now() - began) / 1000;
  // Only a stop that lasted the grace period is looked at again: a quick stop costs no extra runtime call.
  if (graceSeconds < 1 || seconds < graceSeconds - 1) return { seconds, ignoredSigterm: false };
  const exitCode = await runtime.inspectContainer(id).then(
    (c) => (c.state === "CONTAINER_RUNNING" ? undefined : c.exitCode),
    () => undefined,
  );
  return { seconds, ignoredSigterm: exitCode === KILLED };
}

/** `container nginx ignored SIGTERM; killed after 30s`. */
export function ignoredSigtermMessage(container: string, graceSeconds: number): string {
  return `container ${container} ignored SIGTERM; killed after ${Math.round(graceSeconds)}s`;
}
