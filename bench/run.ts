// `npm run bench`: every benchmark in bench/ (each a standalone script printing markdown), one
// after the other on the same machine and services, then bench/results.md with the machine noted.
// Usage: bash scripts/services.sh up && bun build.ts && bun bench/run.ts [--soak-seconds 600] [--only NAME]
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { join } from "node:path";
import { testServices } from "../lib/testing/services.ts";

const dir = import.meta.dir;
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const services = testServices();
if (!services) throw new Error("services are not running: bash scripts/services.sh up");

const scripts: Array<{ file: string; args: string[] }> = [
  ...readdirSync(dir)
    .filter((f) => f.endsWith(".bench.ts"))
    .sort()
    .map((file) => ({ file, args: [] })),
  { file: "soak.ts", args: ["--seconds", arg("--soak-seconds") ?? "600", "--svg", join(dir, "soak.svg")] },
].filter((s) => !arg("--only") || s.file.startsWith(arg("--only")!));

const bun = process.execPath;
const dockerVersion = spawnSync("docker", ["-H", services.dockerHost, "version", "--format", "{{.Server.Version}}"], {
  encoding: "utf8",
}).stdout.trim();
const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", cwd: dir }).stdout.trim();
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/**
 * Runs one script in a process group of its own and ends the whole group when the script exits:
 * a kubelet a benchmark left behind would otherwise stop the next benchmark's pods as unwanted.
 */
function runGroup(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(bun, args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d).slice(-100_000)));
    child.on("exit", () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // the group is already empty
      }
    });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

const sections: string[] = [];
let failed = 0;
for (const { file, args } of scripts) {
  const started = Date.now();
  process.stderr.write(`bench: ${file} ${args.join(" ")}\n`);
  const result = await runGroup([join(dir, file), ...args]);
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (result.status !== 0) failed++;
  sections.push(
    [
      `## ${file}${args.length ? ` ${args.join(" ")}` : ""}`,
      "",
      result.status === 0
        ? result.stdout.trim()
        : `FAILED (exit ${result.status}):\n\n    ${result.stderr.trim().split("\n").slice(-10).join("\n    ")}`,
      "",
      `_${seconds} s_`,
      "",
    ].join("\n"),
  );
}

const header = `# Benchmark results

Written by \`npm run bench\` (bench/run.ts) at ${new Date().toISOString()}, commit ${commit}. Every figure is
measured in this one run; ratios compare the kubelet with a baseline taken in the same run on the same daemon.

Machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()},
Docker Engine ${dockerVersion} (private dockerd, --bridge=none), bun ${Bun.version}. Load average at the start: ${load}.
The machine is shared with other engineers' test runs, so absolute figures are noisy; read the ratios.
`;
const soak = scripts.some((s) => s.file === "soak.ts")
  ? "\n![RSS and CPU of the kubelet during the soak](soak.svg)\n"
  : "";
// A partial run (--only) prints its sections; only the full run replaces bench/results.md.
if (arg("--only")) console.log(sections.join("\n"));
else writeFileSync(join(dir, "results.md"), `${header}${soak}\n${sections.join("\n")}`);
process.stderr.write(`bench: ${scripts.length - failed} ran, ${failed} failed\n`);
process.exitCode = failed ? 1 : 0;
