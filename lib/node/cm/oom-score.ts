// Whether the runtime may give containers a negative oom_score_adj here. Lowering it needs
// CAP_SYS_RESOURCE; where the kernel refuses (sandboxed hosts), Docker's start of such a container
// fails outright, so the kubelet clamps to the lowest value it may set and says so once.
import { readFile, writeFile } from "node:fs/promises";

/** The lowest oom_score_adj containers can get: -1000, or this process's own where lowering is refused. */
export async function oomScoreAdjFloor(
  procFile = "/proc/self/oom_score_adj",
): Promise<{ floor: number; why?: string }> {
  const current = Number((await readFile(procFile, "utf8").catch(() => "0")).trim()) || 0;
  if (current <= -1000) return { floor: -1000 };
  try {
    await writeFile(procFile, String(current - 1));
    await writeFile(procFile, String(current)); // raising back is always allowed
    return { floor: -1000 };
  } catch (error) {
    return { floor: current, why: `writing ${current - 1} to ${procFile}: ${(error as Error).message}` };
  }
}
