// The CRI's unified map on the Docker Engine, whose API has no such field: the cgroup v2 files
// (memory.oom.group, memory.high) written into the container's own cgroup, found from
// /proc/<pid>/cgroup, right after it starts — whatever the cgroup driver named it.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KubeletError } from "../../api/types.ts";

/** Where /proc and the cgroup v2 mount are (a stand-in tree in tests). */
export interface UnifiedRoots {
  proc: string;
  cgroup: string;
}

const HOST: UnifiedRoots = { proc: "/proc", cgroup: "/sys/fs/cgroup" };

/** Writes each file of `unified` into the cgroup v2 of process `pid`; an error names the file and the container. */
export async function writeUnified(
  pid: number,
  unified: Record<string, string>,
  what: string,
  roots: UnifiedRoots = HOST,
): Promise<void> {
  const text = await readFile(join(roots.proc, String(pid), "cgroup"), "utf8").catch(() => "");
  // cgroup v2 has one line, "0::<path>"; without it the node is not on cgroup v2 and none of these files exist.
  const path = /^0::(\/.*)$/m.exec(text)?.[1];
  if (path === undefined)
    throw new KubeletError(
      "RuntimeError",
      `cannot apply ${Object.keys(unified).join(", ")} to ${what}: process ${pid} has no cgroup v2 path in /proc/${pid}/cgroup`,
    );
  for (const [file, value] of Object.entries(unified)) {
    const target = join(roots.cgroup, path, file);
    await writeFile(target, value).catch((error: Error) => {
      throw new KubeletError("RuntimeError", `cannot write ${value} to ${target} for ${what}: ${error.message}`);
    });
  }
}
