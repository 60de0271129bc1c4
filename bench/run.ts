// `npm run bench`: runs every bench/*.bench.ts (or those whose names contain an argument) one after
// another and prints one table of what each reported, one row per line of its output.
// Usage: bun bench/run.ts [store server …]
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const dir = import.meta.dir;
const filters = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => filters.length === 0 || filters.some((word) => f.includes(word)))
  .sort();
if (benches.length === 0) {
  console.error(`bench/run.ts: no bench/*.bench.ts matches ${filters.join(", ")}`);
  process.exit(2);
}

const rows: string[][] = [];
let failed = 0;
for (const file of benches) {
  const name = file.replace(/\.bench\.ts$/, "");
  console.error(`bench: ${name} …`);
  const start = performance.now();
  const result = spawnSync(process.execPath, [join(dir, file)], {
    cwd: join(dir, ".."),
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const seconds = ((performance.now() - start) / 1000).toFixed(1);
  const lines = (result.stdout ?? "").split("\n").filter((line) => line.trim());
  if (result.status !== 0) {
    failed++;
    lines.push(`FAILED: exit ${result.status ?? result.signal} (its stderr is above)`);
  }
  lines.forEach((line, i) => rows.push([i === 0 ? `${name} (${seconds} s)` : "", line.replace(/\|/g, "\\|")]));
}

console.log("| bench | result |");
console.log("| --- | --- |");
for (const [name, line] of rows) console.log(`| ${name} | ${line} |`);
process.exitCode = failed ? 1 : 0;
