// `npm run bench`: runs every bench/*.bench.ts (or those whose names contain an argument) one after
// another and prints one table of what each reported, one row per line of its output. A full run
// (no argument) also writes bench/results.md: the table, the machine it ran on, and the soak's plot.
// Usage: bun bench/run.ts [store server …]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { join } from "node:path";

const dir = import.meta.dir;
const filters = process.argv.slice(2);
// Run alone, never in a full run: 1,000 hollow nodes take both cores for many minutes, so nothing beside them would
// measure anything; its figures are a section of their own in results.md, below the marker.
const RUN_ALONE = ["fleet-scale.bench.ts", "fleet-serve.bench.ts"];
const benches = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => (filters.length === 0 ? !RUN_ALONE.includes(f) : filters.some((word) => f.includes(word))))
  .sort();
if (benches.length === 0) {
  console.error(`bench/run.ts: no bench/*.bench.ts matches ${filters.join(", ")}`);
  process.exit(2);
}

/**
 * Runs one bench in a process group of its own and ends the whole group when it exits: a kubelet a
 * bench left behind would stop the next bench's pods as pods it does not know.
 */
function runGroup(file: string): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(dir, file)], {
      cwd: join(dir, ".."),
      detached: true,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.on("exit", () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // the group is already empty
      }
    });
    child.on("close", (status) => resolve({ status, stdout }));
  });
}

const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const rows: string[][] = [];
let failed = 0;
for (const file of benches) {
  const name = file.replace(/\.bench\.ts$/, "");
  console.error(`bench: ${name} …`);
  const start = performance.now();
  const result = await runGroup(file);
  const seconds = ((performance.now() - start) / 1000).toFixed(1);
  const lines = (result.stdout ?? "").split("\n").filter((line) => line.trim());
  if (result.status !== 0) {
    failed++;
    lines.push(`FAILED: exit ${result.status} (its stderr is above)`);
  }
  lines.forEach((line, i) => rows.push([i === 0 ? `${name} (${seconds} s)` : "", line.replace(/\|/g, "\\|")]));
}

const table = ["| bench | result |", "| --- | --- |", ...rows.map(([name, line]) => `| ${name} | ${line} |`)].join(
  "\n",
);
console.log(table);
if (filters.length === 0) {
  const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", cwd: dir }).stdout.trim();
  // Sections written elsewhere (npm run mutate, the CRI comparison) follow this marker and are kept.
  const marker = "<!-- sections below are not written by npm run bench -->";
  const previous = existsSync(join(dir, "results.md")) ? readFileSync(join(dir, "results.md"), "utf8") : "";
  const kept = previous.includes(marker) ? previous.slice(previous.indexOf(marker)) : "";
  writeFileSync(
    join(dir, "results.md"),
    `# Benchmark results

Written by \`npm run bench\` (bench/run.ts) at ${new Date().toISOString()}, commit ${commit}. Every figure
comes from this one run; ratios compare the kubelet with a baseline taken in the same run on the same daemon.

Machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()},
bun ${Bun.version}; load average at the start ${load}. The machine is shared with other engineers' test runs, so
absolute figures are noisy: read the ratios.

![RSS and CPU of the kubelet during the soak](soak.svg)

${table}
${kept ? `\n${kept}` : ""}`,
  );
}
process.exitCode = failed ? 1 : 0;
