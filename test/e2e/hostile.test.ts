// Hostile manifests against the compiled binary: the whole testdata/hostile corpus dropped into a
// running kubelet's --config beside a good pod, and through `kubelet validate`.
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hostileName, writeHostileCorpus, type HostileCase } from "../../lib/testing/hostile.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, docker, podContainers, removeDir, removePods, runBinary, tempDir } from "./harness.ts";

/** Peak resident memory of a process, MB (VmHWM: the high-water mark, not the current RSS). */
function peakRssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+) kB/m);
  return Number(line![1]) / 1024;
}

describeWithServices("hostile manifests", (services) => {
  const manifests = tempDir("hostile-manifests");
  const corpusDir = tempDir("hostile-corpus");
  const rootDir = tempDir("hostile-root");
  let kubelet: Kubelet;
  let cases: HostileCase[] = [];
  const good = () =>
    podContainers(services, "e2e-hostile-good").find(
      (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
    );

  beforeAll(async () => {
    cases = writeHostileCorpus(corpusDir);
    writeFileSync(
      join(manifests, "good.yaml"),
      `apiVersion: v1
kind: Pod
metadata: {name: e2e-hostile-good}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: ${services.busybox}, command: [sleep, "3600"]}
`,
    );
    kubelet = await startKubelet(["run", "-c", manifests, ...baseFlags(services, rootDir)]);
  });

  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, "e2e-hostile-good");
    for (const dir of [manifests, corpusDir, rootDir]) removeDir(dir);
  });

  test("the corpus beside a good pod: every file refused by name, the good pod untouched, peak RSS under 200 MB, the server up", async () => {
    const before = await waitFor("the good pod", good, 60_000);
    for (const c of cases)
      writeFileSync(join(manifests, hostileName(c)), readFileSync(join(corpusDir, hostileName(c))));
    // Each file is named in a refusal the kubelet logs, with the corpus' expected error.
    const messages = () =>
      kubelet.output
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => (JSON.parse(line) as { msg: string }).msg);
    for (const c of cases) {
      const file = join(manifests, hostileName(c));
      await waitFor(`the refusal of ${hostileName(c)}`, () =>
        messages().some((msg) => msg.includes(file) && msg.includes(c.error)),
      );
    }
    expect(kubelet.output).not.toMatch(/call stack|TypeError|RangeError|ReferenceError|\n\s+at /);
    const after = good();
    expect(after?.id).toBe(before.id);
    expect(after?.labels["io.kubernetes.container.restartCount"]).toBe("0");
    const names = docker(services, "ps", "-a", "--format", "{{.Names}}");
    expect(names).not.toMatch(/hostpath|victim|proto|bomb|deep|huge/);
    expect(peakRssMb(kubelet.child.pid!)).toBeLessThan(200);
    expect((await kubelet.api("/healthz")).status).toBe(200);
  }, 180_000);

  test("`kubelet validate` names every corpus file with its error and exits 1, without a stack trace", () => {
    const result = runBinary(["validate", corpusDir]);
    expect(result.code).toBe(1);
    for (const c of cases) {
      const file = join(corpusDir, hostileName(c));
      expect(result.stdout.split("\n").some((line) => line.includes(file) && line.includes(c.error))).toBe(true);
    }
    expect(result.stdout + result.stderr).not.toMatch(/call stack|TypeError|RangeError|\n\s+at /);
  });

  test("`kubelet validate --allow-sensitive-host-paths` accepts a hostPath at / with a warning", () => {
    const result = runBinary(["validate", "--allow-sensitive-host-paths", join(corpusDir, "hostpath-root.yaml")]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("warn  ");
    expect(result.stdout).toContain('spec.volumes[0].hostPath.path: Forbidden: "/": mounts a sensitive host path');
  });
});
