// The e2e harness itself: the runtime matrix's switch, and no kubelet outliving the test process.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { matrixRuntimes } from "./harness-runtimes.ts";

describe("e2e harness", () => {
  test("KUBELET_TEST_RUNTIME picks runtimes, unset runs all three, anything else is refused with the fix", () => {
    expect(matrixRuntimes(undefined)).toEqual(["docker", "remote", "remote-1.7"]);
    expect(matrixRuntimes("")).toEqual(["docker", "remote", "remote-1.7"]);
    expect(matrixRuntimes("docker")).toEqual(["docker"]);
    expect(matrixRuntimes("remote")).toEqual(["remote"]);
    expect(matrixRuntimes("remote-1.7, docker")).toEqual(["docker", "remote-1.7"]);
    expect(() => matrixRuntimes("containerd")).toThrow(
      'KUBELET_TEST_RUNTIME="containerd": "containerd" is none of docker, remote (containerd 1.6), remote-1.7 (containerd 1.7)',
    );
  });

  test("a kubelet still running when the test process exits is killed with it", () => {
    // A process that spawns a long-lived child through the harness and exits without stopping it.
    const script = `import { KubeletProcess } from "${import.meta.dir}/harness-kubelet.ts";
      const k = new KubeletProcess(["600"], ["sleep"]);
      console.log(k.child.pid);
      process.exit(0);`;
    const result = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 30_000 });
    const pid = Number(result.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // SIGKILLed in the parent's exit handler, before spawnSync returned (a zombie until init reaps it).
    const state = alive() ? readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2] : "gone";
    if (state !== "gone" && state !== "Z") process.kill(pid, "SIGKILL");
    expect(state).toMatch(/^(gone|Z)$/);
  });
});
