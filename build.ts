// `npm run build`: compiles bin/kubelet.ts into one static executable, dist/kubelet, with the
// version's git commit baked in. `bun build.ts --target bun-linux-arm64` cross-compiles.
import { spawnSync } from "node:child_process";
import { mkdirSync, statSync } from "node:fs";

const args = process.argv.slice(2);
const targetIndex = args.indexOf("--target");
const target = targetIndex >= 0 ? args[targetIndex + 1] : undefined;
const outfile = target ? `dist/kubelet-${target.replace(/^bun-/, "")}` : "dist/kubelet";

const git = spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" });
const commit = git.status === 0 ? git.stdout.trim() : "unknown";

mkdirSync("dist", { recursive: true });
const build = spawnSync(
  process.execPath,
  [
    "build",
    "--compile",
    "--minify",
    "--sourcemap",
    "bin/kubelet.ts",
    "--outfile",
    outfile,
    "--define",
    `KUBELET_COMMIT=${JSON.stringify(commit)}`,
    ...(target ? ["--target", target] : []),
  ],
  { stdio: "inherit" },
);
if (build.status !== 0) process.exit(build.status ?? 1);
console.error(`built ${outfile} (${(statSync(outfile).size / 2 ** 20).toFixed(1)} MiB, commit ${commit})`);
