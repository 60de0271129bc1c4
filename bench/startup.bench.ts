// Binary size and start-up: compiles bin/kubelet.ts with each set of bun flags worth trying, then
// times `kubelet --version` and `kubelet validate testdata/pods` (median wall time and peak RSS of
// RUNS runs each) against plain `bun build --compile` in the same run; `bun` and `deno` running the
// source are measured the same way. Usage: bun bench/startup.bench.ts
import { cpus } from "node:os";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LEFT_OUT } from "../build.ts";

declare const Bun: {
  spawnSync(
    cmd: string[],
    options?: { cwd?: string; stdout?: "ignore" | "pipe"; stderr?: "ignore" | "pipe" },
  ): {
    exitCode: number;
    stderr: Uint8Array;
    resourceUsage?: { maxRSS: number };
  };
};

const RUNS = Number(process.env.RUNS ?? 11);
const root = join(import.meta.dir, "..");
const bun = join(root, "node_modules/.bin/bun");
const deno = join(root, "node_modules/.bin/deno");
const out = mkdtempSync(join(tmpdir(), "kubelet-startup-"));

const variants: Array<{ name: string; flags: string[] }> = [
  { name: "--compile (baseline)", flags: [] },
  { name: "--minify", flags: ["--minify"] },
  { name: "--minify --sourcemap", flags: ["--minify", "--sourcemap"] },
  {
    name: "--minify --sourcemap --bytecode (release)",
    flags: ["--minify", "--sourcemap", "--bytecode", "--format", "esm"],
  },
];

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** One run: wall time (ms) and peak RSS (MB). */
function runOnce(command: string[]): { ms: number; rssMb: number } {
  const start = performance.now();
  const result = Bun.spawnSync(command, { cwd: root, stdout: "ignore", stderr: "pipe" });
  const ms = performance.now() - start;
  if (result.exitCode !== 0)
    throw new Error(`${command.join(" ")} exited ${result.exitCode}: ${new TextDecoder().decode(result.stderr)}`);
  return { ms, rssMb: (result.resourceUsage?.maxRSS ?? 0) / 1e6 };
}

interface Subject {
  name: string;
  command: string[];
  size?: number;
  samples: Record<"version" | "validate", Array<{ ms: number; rssMb: number }>>;
}
// Modules on paths the kubelet never takes: build.ts leaves them out, and every variant must.
const externals = LEFT_OUT;
const subjects: Subject[] = variants.map((variant, i) => {
  const file = join(out, `kubelet-${i}`);
  const command = [bun, "build", "--compile", ...variant.flags, ...externals, "bin/kubelet.ts", "--outfile", file];
  const build = Bun.spawnSync(command, {
    cwd: root,
    stdout: "ignore",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`${variant.name}: ${new TextDecoder().decode(build.stderr)}`);
  return { name: variant.name, command: [file], size: statSync(file).size, samples: { version: [], validate: [] } };
});
// Issue 26's yardstick: what the release flags cost a program with no code at all.
const emptyProgram = join(out, "empty.ts");
writeFileSync(emptyProgram, "export {};\n");
const release = variants.at(-1)!;
const emptyBuild = Bun.spawnSync(
  [bun, "build", "--compile", ...release.flags, emptyProgram, "--outfile", join(out, "empty")],
  { cwd: root, stdout: "ignore", stderr: "pipe" },
);
if (emptyBuild.exitCode !== 0) throw new Error(`empty program: ${new TextDecoder().decode(emptyBuild.stderr)}`);
const emptySize = statSync(join(out, "empty")).size;
subjects.push(
  { name: "bun bin/kubelet.ts (source)", command: [bun, "bin/kubelet.ts"], samples: { version: [], validate: [] } },
  {
    name: "deno run -A bin/kubelet.ts (source)",
    command: [deno, "run", "-A", "bin/kubelet.ts"],
    samples: { version: [], validate: [] },
  },
);

// Round-robin, after one warm-up round, so every subject sees the same machine load.
for (let round = 0; round <= RUNS; round++) {
  for (const subject of subjects) {
    const version = runOnce([...subject.command, "--version"]);
    const validate = runOnce([...subject.command, "validate", "testdata/pods"]);
    if (round === 0) continue;
    subject.samples.version.push(version);
    subject.samples.validate.push(validate);
  }
}
rmSync(out, { recursive: true, force: true });

const base = subjects[0]!;
const cell = (subject: Subject, what: "version" | "validate") => {
  const ms = median(subject.samples[what].map((s) => s.ms));
  const baseMs = median(base.samples[what].map((s) => s.ms));
  return `${ms.toFixed(0)} ms (${(ms / baseMs).toFixed(2)}×), ${median(subject.samples[what].map((s) => s.rssMb)).toFixed(0)} MB`;
};
const sizeCell = (subject: Subject) => {
  if (subject.size === undefined) return "";
  const delta = (subject.size - base.size!) / 2 ** 20;
  return `${(subject.size / 2 ** 20).toFixed(1)} MiB (${delta >= 0 ? "+" : ""}${delta.toFixed(2)})`;
};

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; median of ${RUNS} runs; peak RSS`);
console.log(["build", "size (vs baseline)", "--version", "validate testdata/pods"].join(" | "));
for (const subject of subjects)
  console.log([subject.name, sizeCell(subject), cell(subject, "version"), cell(subject, "validate")].join(" | "));
const releaseSize = subjects[variants.length - 1]!.size!;
console.log(
  `release build ${(releaseSize / 2 ** 20).toFixed(1)} MiB; an empty program with its flags ${(emptySize / 2 ** 20).toFixed(1)} MiB: +${((releaseSize - emptySize) / 2 ** 20).toFixed(2)} MiB`,
);
