// The compiled binary's CLI: validate over the manifest table, print-config precedence, exit codes,
// and the same sources under deno.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KUBELET_BINARY } from "../../lib/testing/services.ts";
import { runBinary, tempDir } from "./harness.ts";

const root = join(import.meta.dir, "../..");
const cases = JSON.parse(readFileSync(join(root, "testdata/manifests/cases.json"), "utf8")) as Array<{
  file: string;
  valid: boolean;
  issues: string[];
  allowPrivileged?: boolean;
  strict?: boolean;
}>;

async function inParallel<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!();
      }
    }),
  );
  return results;
}

describe("the compiled kubelet binary", () => {
  test("exists (npm test builds it first)", () => {
    expect(existsSync(KUBELET_BINARY)).toBe(true);
  });

  test("prints its version with the git commit", () => {
    const { code, stdout } = runBinary(["--version"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^kubelet v\d+\.\d+\.\d+ \(commit ([0-9a-f]{7,}|unknown), bun /);
  });

  test("validates every manifest of the table with the right verdict and issues", async () => {
    const results = await inParallel(
      cases.map((c) => async () => {
        const child = Bun.spawn(
          [
            KUBELET_BINARY,
            "validate",
            join(root, "testdata/manifests", c.file),
            ...(c.allowPrivileged ? ["--allow_privileged"] : []),
            // The table's verdicts are run's (unknown fields warn) except where a case says strict.
            `--strict=${c.strict === true}`,
          ],
          { stdout: "pipe" },
        );
        const stdout = await new Response(child.stdout).text();
        return { c, code: await child.exited, stdout };
      }),
      8,
    );
    for (const { c, code, stdout } of results) {
      expect({ file: c.file, code }).toEqual({ file: c.file, code: c.valid ? 0 : 1 });
      for (const issue of c.issues)
        expect({ file: c.file, issue, found: stdout.includes(issue) }).toEqual({ file: c.file, issue, found: true });
    }
  }, 60_000);

  test("validates a whole directory, printing one line per pod and a summary", () => {
    const { code, stdout } = runBinary(["validate", join(root, "testdata/pods")]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^ok {3}.*web\.yaml {2}default\/web$/m);
    expect(stdout).toContain("3 pods valid, 0 invalid");
  });

  test("reads a manifest from stdin with -", () => {
    const { code, stdout } = runBinary(["validate", "-"], {
      input: readFileSync(join(root, "testdata/manifests/invalid/missing-image.yaml"), "utf8"),
    });
    expect(code).toBe(1);
    expect(stdout).toContain("-[0] default/noimg: spec.containers[0].image: Required value");
  });

  test("gives tools JSON with -o json", () => {
    const { stdout } = runBinary([
      "validate",
      "-o",
      "json",
      join(root, "testdata/manifests/invalid/dup-container.yaml"),
    ]);
    const report = JSON.parse(stdout);
    expect(report.invalid).toBe(1);
    expect(report.pods[0].issues[0]).toMatchObject({ path: "spec.containers[1].name", type: "Duplicate value" });
  });

  test("exits 1 for a path that does not exist and 2 for validate without paths", () => {
    expect(runBinary(["validate", "/no/such/file.yaml"]).code).toBe(1);
    expect(runBinary(["validate"]).code).toBe(2);
  });

  test("shows defaults < config file < flags with --show-origin", () => {
    const { code, stdout } = runBinary([
      "print-config",
      "--config_file",
      join(root, "testdata/config/kubelet.yaml"),
      "--port",
      "4000",
      "--show-origin",
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain("port: 4000  # flag");
    expect(stdout).toContain("sync_frequency: 30s  # file");
    expect(stdout).toContain("http_check_frequency: 20s  # default");
  });

  test("exits 2 with the usage for an unknown flag, a bad value or exclusive flags", () => {
    for (const args of [
      ["run", "--bogus"],
      ["print-config", "--port", "x"],
      ["run", "--etcd_servers", "a", "--etcd_config", "b"],
    ]) {
      const { code, stderr } = runBinary(args);
      expect({ args, code }).toEqual({ args, code: 2 });
      expect(stderr).toContain("Usage: kubelet");
    }
  });

  test("a config with three problems exits 2 naming all three, one line each, before the runtime is contacted", () => {
    const dir = tempDir("cli-bad-config");
    const file = join(dir, "kubelet.yaml");
    writeFileSync(
      file,
      "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nstaticPodPth: /etc/kubelet\n",
    );
    const flags = ["--config_file", file, "--port", "x", "--eviction_hard", "memory.avail<1Gi"];
    for (const command of ["run", "print-config"]) {
      const { code, stderr } = runBinary([
        command,
        ...flags,
        "--root_dir",
        join(dir, "root"),
        "--docker_endpoint",
        `unix://${join(dir, "no-docker.sock")}`,
      ]);
      expect({ command, code }).toEqual({ command, code: 2 });
      expect(stderr.split("\n").filter((line) => line.startsWith("kubelet: "))).toEqual([
        `kubelet: --config_file "${file}": unknown field "staticPodPth" (did you mean staticPodPath?): settings are KubeletConfiguration fields (kubelet.config.k8s.io/v1beta1) or flag names such as sync_frequency`,
        'kubelet: invalid value "x" for --port: expected a non-negative integer',
        'kubelet: invalid value for --eviction_hard: unsupported eviction signal "memory.avail" (supported: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available)',
      ]);
      expect(stderr).not.toContain("no-docker.sock");
      expect(existsSync(join(dir, "root"))).toBe(false);
    }
  });

  test("runs the same sources under deno", { timeout: 120_000 }, () => {
    const deno = join(root, "node_modules/.bin/deno");
    const result = spawnSync(
      deno,
      ["run", "-A", "--no-lock", join(root, "bin/kubelet.ts"), "validate", join(root, "testdata/pods")],
      { encoding: "utf8", cwd: root, timeout: 120_000 },
    );
    expect(result.stderr).not.toContain("error:");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("3 pods valid");
  });
});
