// Drives the compiled kubelet and the real dockerd for end-to-end tests.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KUBELET_BINARY, type TestServices } from "../../lib/testing/services.ts";
import { commonFlags, testCgroupRoot } from "./harness-runtimes.ts";

export * from "./harness-kubelet.ts";
export * from "./harness-runtimes.ts";

/** Runs the docker CLI against the test daemon; throws on failure. */
export function docker(services: TestServices, ...args: string[]): string {
  const result = spawnSync("docker", ["-H", services.dockerHost, ...args], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`docker ${args.join(" ")}: ${result.stderr}`);
  return result.stdout.trim();
}

export interface PodContainer {
  id: string;
  name: string;
  state: string;
  labels: Record<string, string>;
}

/** The kubelet's containers of a pod, running and dead, from the real daemon. */
export function podContainers(services: TestServices, pod: string, namespace = "default"): PodContainer[] {
  const out = docker(
    services,
    "ps",
    "-a",
    "--no-trunc",
    "--filter",
    `label=io.kubernetes.pod.name=${pod}`,
    "--filter",
    `label=io.kubernetes.pod.namespace=${namespace}`,
    "--format",
    "{{json .}}",
  );
  return out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const row = JSON.parse(line) as { ID: string; Names: string; State: string; Labels: string };
      const labels = Object.fromEntries(
        row.Labels.split(",")
          .filter(Boolean)
          .map((kv) => {
            const eq = kv.indexOf("=");
            return [kv.slice(0, eq), kv.slice(eq + 1)];
          }),
      );
      return { id: row.ID, name: row.Names, state: row.State, labels };
    });
}

/** Removes every container of the given pods (test clean-up). */
export function removePods(services: TestServices, ...pods: string[]): void {
  for (const pod of pods) {
    const ids = podContainers(services, pod).map((c) => c.id);
    if (ids.length) spawnSync("docker", ["-H", services.dockerHost, "rm", "-f", ...ids]);
  }
}

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `kubelet-${prefix}-`));
}

/** Removes a directory, unmounting first what the kubelet mounted in it (tmpfs of Secret and memory volumes). */
export function removeDir(dir: string): void {
  const mounts = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .filter((point) => point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) spawnSync("umount", [point]);
  rmSync(dir, { recursive: true, force: true });
  removeCgroupRoot(dir);
}

/** Writes `<dir>/<name>.yaml`: a Pod named `name`, grace period 1 s, with `spec` (indented YAML lines) under its spec. */
export function writePodManifest(dir: string, name: string, spec: string): void {
  writeFileSync(
    join(dir, `${name}.yaml`),
    `apiVersion: v1\nkind: Pod\nmetadata: { name: ${name} }\nspec:\n  terminationGracePeriodSeconds: 1\n${spec}`,
  );
}

/** A free TCP port on loopback. */
export { freePortNumber as freePort } from "../../lib/testing/ports.ts";

/** Flags every Docker-mode test kubelet gets: the test daemon, no bridge network, a private root dir. */
export function baseFlags(services: TestServices, rootDir: string): string[] {
  return ["--docker_endpoint", services.dockerHost, ...commonFlags(rootDir)];
}

/**
 * The image GC e2e tests' settings (Docker and containerd): a small image filesystem filled past 60 % is freed
 * towards 10 %, an image seen 15 s ago may go, and no eviction threshold gets in the way.
 */
export const IMAGE_GC_FLAGS = [
  "--image_gc_high_threshold",
  "60",
  "--image_gc_low_threshold",
  "10",
  "--minimum_image_ttl_duration",
  "15s",
  "--eviction_hard",
  "",
];

/** Image GC by age only (imageMaximumGCAge 4s): no threshold is ever met, an image unused for 4 s may go. */
export const IMAGE_MAX_AGE_FLAGS = [
  "--eviction_hard",
  "",
  "--image_gc_high_threshold",
  "100",
  "--minimum_image_ttl_duration",
  "1s",
  "--image_maximum_gc_age",
  "4s",
];

/** Removes a test's cgroup tree in every hierarchy (deepest first); cgroups still in use stay. */
export function removeCgroupRoot(rootDir: string): void {
  for (const controller of readdirSync("/sys/fs/cgroup")) {
    const top = join("/sys/fs/cgroup", controller, testCgroupRoot(rootDir));
    if (!existsSync(top)) continue;
    const dirs: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true }))
        if (entry.isDirectory()) walk(join(dir, entry.name));
      dirs.push(dir);
    };
    walk(top);
    for (const dir of dirs) spawnSync("rmdir", [dir]);
    spawnSync("rmdir", [join("/sys/fs/cgroup", controller, "kubelet-test")]);
  }
}

/** Runs the compiled binary (or `options.command`, e.g. deno running the source) to completion. */
export function runBinary(args: string[], options: { input?: string; timeoutMs?: number; command?: string[] } = {}) {
  const [file, ...prefix] = options.command ?? [KUBELET_BINARY];
  const result = spawnSync(file!, [...prefix, ...args], {
    encoding: "utf8",
    input: options.input,
    timeout: options.timeoutMs ?? 120_000,
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}
