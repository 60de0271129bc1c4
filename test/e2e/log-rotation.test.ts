// Container log rotation, end to end: on containerd the kubelet's log manager renames, compresses and
// bounds a fast writer's log files and /containerLogs follows across each rotation; on Docker the same
// settings become the json-file driver's max-size and max-file.
import { afterAll, beforeAll, expect } from "bun:test";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Kubelet, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes } from "./harness-runtimes.ts";
import { docker, removeDir, tempDir } from "./harness.ts";

const MAX_SIZE = 2 ** 20;
const MAX_FILES = 4;
const INTERVAL_MS = 3000;
/** A rotated file: `0.log.<YYYYMMDD-hhmmss>`, gzipped or not. */
const ROTATED = /^0\.log\.\d{8}-\d{6}(\.gz)?$/;

describeOnRuntimes("container log rotation", (services, rt) => {
  const manifests = tempDir("logrot-manifests");
  const rootDir = tempDir("logrot-root");
  let kubelet: Kubelet;

  beforeAll(async () => {
    // Numbered lines of 100 bytes, 100 at a time then a pause: under 170 KB/s, so one 3 s interval's growth is at
    // most half of the 1Mi size: the Go kubelet's scheme (the file renamed last stays plain until the next rotation)
    // keeps the directory within size × files + one interval's growth only then.
    writeFileSync(
      join(manifests, "writer.yaml"),
      `{ apiVersion: v1, kind: Pod, metadata: { name: e2e-logrot }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: app, image: "${services.busybox}", command: ["sh", "-c", "i=0; pad=$(printf '%090d' 0); while true; do j=0; while [ $j -lt 100 ]; do i=$((i+1)); j=$((j+1)); printf '%08d %s\\\\n' $i $pad; done; usleep 60000; done"] }] } }\n`,
    );
    kubelet = await startKubelet([
      ...rt.runFlags(manifests, rootDir),
      "--container_log_max_size",
      "1Mi",
      "--container_log_max_files",
      String(MAX_FILES),
      "--container_log_monitor_interval",
      "3s",
    ]);
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods("e2e-logrot");
    removeDir(manifests);
    removeDir(rootDir);
  });

  if (rt.kind === "docker") {
    test("the container's json-file options carry containerLogMaxSize and containerLogMaxFiles", async () => {
      const app = await kubelet.waitFor("the writer running", () => rt.running("e2e-logrot", "app"), 60_000);
      expect(JSON.parse(docker(services, "inspect", "-f", "{{json .HostConfig.LogConfig}}", app.id))).toEqual({
        Type: "json-file",
        Config: { "max-size": "1m", "max-file": String(MAX_FILES) },
      });
    });
    return;
  }

  test("a fast writer's log directory stays within the bound, older files compressed, and /containerLogs follows across rotations", async () => {
    const app = await kubelet.waitFor("the writer running", () => rt.running("e2e-logrot", "app"), 60_000);
    const logPath = (await rt.runtime.inspectContainer(app.id)).logPath!;
    const dir = dirname(logPath);
    const follow = await kubelet.admin("/containerLogs/default/e2e-logrot/app?follow=true");
    const reader = follow.body!.getReader();
    let followed = "";
    let mostBytes = 0;
    let fastestBytesPerMs = 0;
    let previous: { at: number; ino: number; size: number } | undefined;
    const rotations = new Set<string>();
    /** When each rotation was first seen: the monitor's actual period (its interval, later under load) between them. */
    const seenAt: number[] = [];
    const sample = () => {
      const names = readdirSync(dir);
      const sizes = names.map((n) => statSync(join(dir, n), { throwIfNoEntry: false })?.size ?? 0);
      mostBytes = Math.max(
        mostBytes,
        sizes.reduce((a, b) => a + b, 0),
      );
      for (const n of names) {
        const name = n.replace(/\.gz$/, "");
        if (ROTATED.test(n) && !rotations.has(name)) {
          rotations.add(name);
          seenAt.push(Date.now());
        }
      }
      const current = statSync(logPath, { throwIfNoEntry: false });
      const now = Date.now();
      // The writer's speed, from the current file's growth between two samples of the same file.
      if (current && previous && previous.ino === current.ino && now > previous.at)
        fastestBytesPerMs = Math.max(fastestBytesPerMs, (current.size - previous.size) / (now - previous.at));
      previous = current && { at: now, ino: current.ino, size: current.size };
      return names;
    };
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        followed += new TextDecoder().decode(value);
        if (rotations.size >= 4) return;
      }
    })();
    let names: string[] = [];
    await kubelet.waitFor(
      "four rotations, a compressed file among them",
      async () => {
        // A compression in progress leaves a .tmp, then the .gz, beside its source for a moment: files the directory
        // does not keep. A rotation in progress has renamed 0.log and not yet had the runtime reopen it: no 0.log for
        // that moment (upstream's rename, then ReopenContainerLog), so the directory is judged between rotations.
        const listed = sample();
        names = listed.filter((n) => !n.endsWith(".tmp") && !listed.includes(`${n}.gz`));
        return rotations.size >= 4 && names.some((n) => n.endsWith(".gz")) && names.includes("0.log");
      },
      100_000,
    );
    await reading;
    await reader.cancel();

    const period = Math.max(INTERVAL_MS, ...seenAt.slice(1).map((t, i) => t - seenAt[i]!));
    console.log(
      `log directory: at most ${mostBytes} bytes, writer up to ${Math.round(fastestBytesPerMs * 1000)} B/s over a ${period} ms period, ${followed.length} bytes followed; files: ${names.join(" ")}`,
    );
    // The current file, the newest rotated one still plain, the older ones gzipped; no more than MAX_FILES.
    expect(names.length).toBeLessThanOrEqual(MAX_FILES);
    expect(names).toContain("0.log");
    expect(names.some((n) => /^0\.log\.\d{8}-\d{6}\.gz$/.test(n))).toBe(true);
    expect(names.some((n) => /^0\.log\.\d{8}-\d{6}$/.test(n))).toBe(true);
    const growthPerInterval = fastestBytesPerMs * period;
    expect(mostBytes).toBeLessThanOrEqual(MAX_SIZE * MAX_FILES + growthPerInterval);

    // Every line once and in order, across the rotations the follower lived through.
    const numbers = followed
      .trim()
      .split("\n")
      .map((line) => Number(line.slice(0, 8)));
    expect(numbers.length).toBeGreaterThan((3 * MAX_SIZE) / 100);
    const gaps = numbers.filter((n, i) => i > 0 && n !== numbers[i - 1]! + 1);
    expect(gaps).toEqual([]);
  }, 150_000);
});
