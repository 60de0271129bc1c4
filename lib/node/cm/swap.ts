// failSwapOn, as the Go kubelet's container manager checks it at start: with swap on (a device or
// file listed in /proc/swaps) the kubelet refuses to start unless failSwapOn is false. Pods get no
// swap either way: a container with a memory limit has its swap limit set to the same value.
import { readFile } from "node:fs/promises";
import { KubeletError } from "../../api/types.ts";

/** Where the kernel lists active swap; KUBELET_TEST_PROC_SWAPS names a stand-in (the e2e tests: no real swap is turned on). */
const procSwapsPath = () => process.env.KUBELET_TEST_PROC_SWAPS || "/proc/swaps";

/** The active swap areas /proc/swaps lists (its header line dropped), one line each. */
export function swapAreas(procSwaps: string): string[] {
  return procSwaps
    .split("\n")
    .slice(1)
    .map((line) => line.trim())
    .filter(Boolean);
}

/**
 * Throws SwapOn when swap is on and failSwapOn is true, with the Go kubelet's message, the setting to change and
 * what /proc/swaps lists. A /proc/swaps that cannot be read (no procfs) counts as no swap.
 */
export async function checkSwap(failSwapOn: boolean, path = procSwapsPath()): Promise<void> {
  if (!failSwapOn) return;
  const text = await readFile(path, "utf8").catch(() => "");
  const areas = swapAreas(text);
  if (areas.length)
    throw new KubeletError(
      "SwapOn",
      `running with swap on is not supported, please disable swap or set --fail_swap_on=false (failSwapOn: false in the config file). ${path} contained: [${areas.join(" ; ")}]`,
    );
}
