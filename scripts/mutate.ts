// npm run mutate: mutation testing of the pure core with StrykerJS and its command runner. Each
// group's files are mutated and judged by the unit tests that cover them (so a mutant costs one short
// `bun test`); the reports are added up into a score per file and overall, and every surviving mutant
// is listed in reports/mutation/survivors.txt, to be killed by a test or noted as equivalent in
// bench/results.md. `npm run mutate -- plan` runs one group. Not part of npm test: it takes minutes.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";

const groups: Record<string, { mutate: string[]; tests: string[] }> = {
  // lib/api is three groups so that a mutant runs only the fast tests of its file: the property test
  // (manifest.property.test.ts, 6–25 s a run) stays in npm test and out of every group here.
  validation: {
    mutate: ["lib/api/validation.ts"],
    tests: ["lib/api/validation.test.ts", "lib/api/validation-rules.test.ts", "lib/api/hostile.test.ts"],
  },
  manifest: {
    mutate: ["lib/api/manifest.ts"],
    tests: [
      "lib/api/manifest.test.ts",
      "lib/api/validation.test.ts",
      "lib/api/validation-rules.test.ts",
      "lib/api/hostile.test.ts",
      "lib/api/pod-uid.test.ts",
    ],
  },
  api: {
    mutate: ["lib/api/expand.ts", "lib/api/quantity.ts", "lib/api/pod-uid.ts"],
    tests: [
      "lib/api/expand.test.ts",
      "lib/api/quantity.test.ts",
      "lib/api/pod-uid.test.ts",
      "lib/api/downward.test.ts",
      "lib/api/qos.test.ts",
      "lib/api/validation-rules.test.ts",
    ],
  },
  store: { mutate: ["lib/sources/store.ts"], tests: ["lib/sources/store.test.ts", "lib/sources/store-edits.test.ts"] },
  spelling: { mutate: ["lib/spelling.ts"], tests: ["lib/spelling.test.ts"] },
  plan: {
    mutate: [
      "lib/sync/pod-plan.ts",
      "lib/sync/pod-status.ts",
      "lib/sync/pod-workers.ts",
      "lib/node/flowcontrol/backoff.ts",
    ],
    tests: [
      "lib/sync/pod-plan.test.ts",
      "lib/sync/pod-workers.test.ts",
      "lib/sync/pod-status.test.ts",
      "lib/node/flowcontrol/backoff.test.ts",
      "lib/node/flowcontrol/backoff-delays.test.ts",
    ],
  },
  container: {
    mutate: ["lib/container/container-config.ts", "lib/container/docker/docker-shim.ts"],
    tests: [
      "lib/container/docker/docker-shim.test.ts",
      "lib/container/container-config-env.test.ts",
      "lib/container/container-config.test.ts",
      "lib/container/security-context.test.ts",
      "lib/container/docker/docker-containers.test.ts",
      "lib/sync/container-lifecycle.test.ts",
      "lib/sync/pod-executor.test.ts",
      "lib/sync/node-plan.test.ts",
    ],
  },
};

/** Stryker's configuration for one group. */
const strykerConfig = (name: string) => ({
  testRunner: "command",
  commandRunner: { command: `node_modules/.bin/bun test --bail ${groups[name]!.tests.join(" ")}` },
  mutate: groups[name]!.mutate,
  // tsconfig.json stays out of the sandbox: Stryker rewrites it through the TypeScript JS API, which
  // TypeScript 7 no longer has, and bun test does not need it. biome.json: a second root confuses biome.
  ignorePatterns: ["dist", "bench", "test", "reports", ".stryker-tmp", "tsconfig.json", "biome.json"],
  coverageAnalysis: "off",
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 2),
  timeoutMS: 10_000,
  reporters: ["progress", "json"],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  tempDirName: `.stryker-tmp/${name}`, // one per group, so that groups can run side by side
  cleanTempDir: true,
});

interface Mutant {
  status: string;
  mutatorName: string;
  replacement?: string;
  location: { start: { line: number; column: number } };
}
interface Report {
  files: Record<string, { source: string; mutants: Mutant[] }>;
}

const only = process.argv.slice(2);
for (const name of only)
  if (!groups[name]) throw new Error(`no mutation group "${name}": choose from ${Object.keys(groups)}`);
const names = only.length ? only : Object.keys(groups);
mkdirSync("reports/mutation", { recursive: true });
const rows: Array<{ file: string; detected: number; valid: number; survived: number; timeout: number }> = [];
const survivors: string[] = [];
for (const name of names) {
  console.log(`\n== mutating group ${name} ==`);
  const config = `reports/mutation/stryker.${name}.json`;
  writeFileSync(config, JSON.stringify(strykerConfig(name), null, 2));
  // nice: the machine is shared, and mutation runs are long.
  const run = spawnSync("nice", ["-n", "19", "node_modules/.bin/stryker", "run", config], { stdio: "inherit" });
  if (run.status !== 0) throw new Error(`stryker failed for group ${name} (exit ${run.status})`);
  const report = JSON.parse(readFileSync(`reports/mutation/${name}.json`, "utf8")) as Report;
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    const count = (...statuses: string[]) => mutants.filter((m) => statuses.includes(m.status)).length;
    const valid = count("Killed", "Timeout", "Survived", "NoCoverage");
    rows.push({
      file,
      detected: count("Killed", "Timeout"),
      valid,
      survived: count("Survived", "NoCoverage"),
      timeout: count("Timeout"),
    });
    const lines = source.split("\n");
    for (const m of mutants.filter((m) => m.status === "Survived" || m.status === "NoCoverage"))
      survivors.push(
        `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} → ${JSON.stringify(m.replacement ?? "")}\n    ${lines[m.location.start.line - 1]?.trim()}`,
      );
  }
}
const pct = (a: number, b: number) => (b ? ((100 * a) / b).toFixed(1) : "n/a");
console.log("\nfile                                   killed/valid  score  survived  (timeouts count as killed)");
for (const r of rows)
  console.log(
    `${r.file.padEnd(38)} ${`${r.detected}/${r.valid}`.padStart(12)} ${pct(r.detected, r.valid).padStart(6)}% ${String(r.survived).padStart(8)}`,
  );
const detected = rows.reduce((n, r) => n + r.detected, 0);
const valid = rows.reduce((n, r) => n + r.valid, 0);
console.log(`${"total".padEnd(38)} ${`${detected}/${valid}`.padStart(12)} ${pct(detected, valid).padStart(6)}%`);
writeFileSync("reports/mutation/survivors.txt", survivors.join("\n") + "\n");
console.log(`\nmutation score ${pct(detected, valid)}% — surviving mutants listed in reports/mutation/survivors.txt`);
