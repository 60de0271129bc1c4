// The compiled binary finds the node's config file without being told, on each runtime of the matrix:
// `plan` reads its sources and `reset` its runtime and root_dir from the file $KUBELET_CONFIG_FILE names
// (standing in for /etc/kubelet/config.yaml, which tests must not write), and each says which file it read.
import { afterAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KUBELET_BINARY } from "../../lib/testing/services.ts";
import { describeOnRuntimes, removeDir, tempDir, test, writePodManifest } from "./harness.ts";

/** Runs the binary with KUBELET_CONFIG_FILE set to `configFile` ("" = none), no other configuration. */
function kubelet(configFile: string, ...args: string[]) {
  const result = spawnSync(KUBELET_BINARY, args, {
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, KUBELET_CONFIG_FILE: configFile },
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** `--root_dir /x --port 0` as config file lines: `root_dir: "/x"`. */
function configLines(flags: string[]): string {
  let text = "";
  for (let i = 0; i < flags.length; i += 2)
    text += `${flags[i]!.replace(/^--/, "")}: ${JSON.stringify(flags[i + 1])}\n`;
  return text;
}

describeOnRuntimes("every command finds the node's config file", (services, rt) => {
  const dir = tempDir("cli-config-file");
  const rootDir = join(dir, "root");
  const manifests = join(dir, "manifests");
  const configFile = join(dir, "config.yaml");
  spawnSync("mkdir", ["-p", manifests]);
  writePodManifest(
    manifests,
    "e2e-config-file",
    `  containers: [{ name: app, image: "${services.busybox}", command: [sleep, "600"] }]\n`,
  );
  writeFileSync(
    configFile,
    `config: ${JSON.stringify(manifests)}\n` +
      configLines([
        ...rt.flags(rootDir),
        "--network_container_image",
        services.pause,
        "--hostname_override",
        "e2e-config-file-node",
      ]),
  );
  const notice = `kubelet: using the config file ${configFile} (from $KUBELET_CONFIG_FILE)\n`;
  afterAll(() => removeDir(dir));

  test("plan reads the sources of the config file and says which file it read", () => {
    const plan = kubelet(configFile, "plan");
    expect(plan.stderr).toBe(notice);
    expect(plan.stdout).toContain("pod default/e2e-config-file");
    expect(plan.stdout).toContain("Plan: 1 pods to create");
    expect(plan.code).toBe(2);
  });

  test("without a config file plan says it needs sources and that no config file was read", () => {
    const plan = kubelet("", "plan");
    expect(plan.stderr).toContain(
      "kubelet: plan needs --config, --manifest_url or --etcd_servers/--etcd_config (none given, and no config file was read",
    );
    expect(plan.code).toBe(1);
  });

  test("reset reaches the runtime and the root_dir of the config file, with no flag repeated", () => {
    const reset = kubelet(configFile, "reset");
    expect(reset.stderr).toBe(notice);
    expect(reset.stdout).toContain(`nothing to reset: no pods of this kubelet on the `);
    expect(reset.stdout).toContain(`no state under ${rootDir}`);
    expect(reset.code).toBe(0);
  });
});
