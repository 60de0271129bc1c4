import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describeOnContainerd } from "./testing/services.ts";

const root = resolve(import.meta.dir, "..");

/**
 * The lib/ modules a fresh process has evaluated after `kubelet <argv>` ran through main(), its exit code, and the
 * packages (node_modules/<name>/) it loaded.
 */
function modulesAfter(argv: string[]): { code: number; modules: string[]; packages: string[] } {
  const script = `
    const { main } = await import(${JSON.stringify(`${root}/lib/cli/cli.ts`)});
    const quiet = { write: () => true };
    const io = { stdout: quiet, stderr: quiet, readStdin: async () => "", exit() {} };
    const code = await main(${JSON.stringify(argv)}, io);
    const modules = Object.keys(require.cache).filter((k) => k.startsWith(${JSON.stringify(`${root}/lib/`)}));
    const packages = Object.keys(require.cache).filter((k) => k.includes("/node_modules/")).map((k) => {
      const parts = k.split("/node_modules/").pop().split("/");
      return parts[0].startsWith("@") ? parts[0] + "/" + parts[1] : parts[0];
    });
    console.log(JSON.stringify({ code, modules: modules.map((k) => k.slice(${root.length + 1})), packages: [...new Set(packages)] }));
    process.exit(0);`;
  const run = Bun.spawnSync([process.execPath, "-e", script], { cwd: root, stderr: "pipe" });
  const last = run.stdout.toString().trim().split("\n").pop() ?? "";
  if (!last.startsWith("{")) throw new Error(`no result from the process: ${run.stderr.toString()}`);
  return JSON.parse(last);
}

/** modulesAfter of a `runonce` of an empty manifest directory on the CRI at `endpoint`. */
function runonceModules(endpoint: string): ReturnType<typeof modulesAfter> {
  const dir = mkdtempSync(join(tmpdir(), "runonce-modules-"));
  mkdirSync(join(dir, "manifests"));
  try {
    return modulesAfter([
      "runonce",
      ...["-c", join(dir, "manifests"), "--root_dir", join(dir, "root"), "--pod_logs_dir", join(dir, "logs")],
      ...["--container_runtime", "remote", "--container_runtime_endpoint", endpoint, "--pod_network_mode", "none"],
      ...["--cgroup_root", "/kubelet-test/runonce-modules"],
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describeOnContainerd("runonce's module graph", (_services, endpoint) => {
  test("runonce on the CRI evaluates none of the servers' modules: no API routes, no info server, no auth", () => {
    const { code, modules } = runonceModules(endpoint);
    expect(code).toBe(0);
    // It did run: the CRI client answered and runonce's loop reported.
    expect(modules).toContain("lib/container/cri/cri-client.ts");
    expect(modules).toContain("lib/sync/runonce.ts");
    expect(modules.filter((m) => m.startsWith("lib/server/apiserver/"))).toEqual([]);
    expect(
      modules.filter((m) =>
        ["info-server.ts", "auth.ts", "listeners.ts", "serving-cert.ts"].some((f) => m === `lib/server/${f}`),
      ),
    ).toEqual([]);
    expect(modules).not.toContain("lib/fleet-mode.ts");
  });

  test("runonce on the CRI loads neither run's managers nor sync loop, nor Docker's, etcd's or the servers' packages", () => {
    const { code, modules, packages } = runonceModules(endpoint);
    expect(code).toBe(0);
    expect(modules).toContain("lib/sync/runonce.ts");
    // run's parts: the node managers (GC, eviction, stats, device plugins), the sync loop, the CPU/memory/topology
    // managers, the validate command's RBAC checker, the help and print-config's printers.
    const runOnly = [
      "lib/node-managers.ts",
      "lib/sync/sync-loop.ts",
      "lib/node/cm/resource-managers.ts",
      "lib/node/cm/devicemanager/manager.ts",
      "lib/node/stats/stats-analyzer.ts",
      "lib/node/eviction/eviction.ts",
      "lib/cli/validate.ts",
      "lib/server/rbac/policy-file.ts",
      "lib/cli/help.ts",
      "lib/config/print-config.ts",
    ];
    expect(modules.filter((m) => runOnly.includes(m))).toEqual([]);
    expect(modules.filter((m) => m.startsWith("lib/node/cm/cpumanager/"))).toEqual([]);
    // The Docker shim's own modules (the registry credentials it shares with the CRI's pulls are not its).
    expect(modules).not.toContain("lib/container/docker/docker.ts");
    const unused = ["dockerode", "docker-modem", "etcd3", "@grpc/grpc-js", "hono", "@hono/node-server", "protobufjs"];
    expect(packages.filter((p) => unused.includes(p))).toEqual([]);
  });
});
