// `npm run build`: compiles bin/kubelet.ts into one executable for this machine, dist/kubelet.
// `npm run release` (`bun build.ts --release`): cross-compiles every Linux target into
// dist/release/ with SHA256SUMS and install.sh beside them: all a web server needs to host.
//
//   bun build.ts [--target bun-linux-arm64]            one binary (dist/kubelet, or dist/kubelet-<target>)
//   bun build.ts --release [--version 1.2.3] [--out DIR] [--base-url URL] [--targets linux-x64,linux-arm64]
//
// --version overrides package.json's version; --base-url is baked into that release's install.sh
// as its default download location (the URL the release will be served from).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import pkg from "./package.json" with { type: "json" };

/** Release assets: `kubelet-<name>` built for bun's `bun-<name>` target. The installer picks one by uname and libc. */
const RELEASE_TARGETS = [
  "linux-x64",
  "linux-x64-baseline", // x86-64 CPUs without AVX2, which the default x64 build needs
  "linux-x64-musl",
  "linux-arm64",
  "linux-arm64-musl",
];

// Measured by bench/startup.bench.ts: --bytecode (ESM, for bin/kubelet.ts's top-level await) starts
// `--version` 3.5-6x and `validate` about 2x faster for 6.5 MiB more; --minify saves 1.25 MiB; the
// source map (1.7 MiB) keeps stack traces readable.
// Left out (bench/startup.bench.ts leaves out the same), as modules loaded only on paths the kubelet never takes:
// ssh2 (docker-modem's ssh:// Docker hosts, which lib/container/docker/docker.ts refuses; 0.3 MiB of code, 2 MiB of binary
// with its bytecode) and consola's prompt (an interactive question on a terminal, which nothing here asks; 40 KiB), in
// its ESM and CJS builds (lib/log.ts requires the CJS one for text logs).
export const LEFT_OUT = [
  "--external",
  "ssh2",
  "--external",
  "*/chunks/prompt.mjs",
  "--external",
  "*/chunks/prompt.cjs",
];
// --splitting: each module the code imports with `import()` (the servers, Docker, etcd, fleet, the CLI's other commands)
// is a chunk of its own inside the executable, whose bytecode is loaded when that import runs, not at every start:
// `--version` and a `runonce` on the CRI load only their own part of the bundle (bench/results.md, branch cold44).
const COMPILE_FLAGS = [
  "--compile",
  "--splitting",
  "--minify",
  "--sourcemap",
  "--bytecode",
  "--format=esm",
  ...LEFT_OUT,
];

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  if (index < 0) return undefined;
  const value = args[index + 1];
  if (value === undefined || value.startsWith("--")) fail(`${name} needs a value`);
  return value;
}

function fail(message: string): never {
  console.error(`build.ts: ${message}`);
  process.exit(2);
}

function gitCommit(): string {
  const git = spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" });
  return git.status === 0 ? git.stdout.trim() : "unknown";
}

/** Compiles bin/kubelet.ts for one bun target (the host when undefined) with version and commit baked in. */
export function compile(outfile: string, target: string | undefined, version: string, commit: string): void {
  // The executable embeds its chunks and source maps; bun also writes each chunk's map beside it, so it is
  // built in a directory of its own and only the executable is moved out.
  const work = mkdtempSync(join(dirname(outfile), ".build-"));
  try {
    compileInto(join(work, basename(outfile)), target, version, commit);
    renameSync(join(work, basename(outfile)), outfile);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const mib = (statSync(outfile).size / 2 ** 20).toFixed(1);
  console.error(`built ${outfile} (${mib} MiB, v${version}, commit ${commit})`);
}

function compileInto(outfile: string, target: string | undefined, version: string, commit: string): void {
  const build = spawnSync(
    process.execPath,
    [
      "build",
      ...COMPILE_FLAGS,
      "bin/kubelet.ts",
      "--outfile",
      outfile,
      "--define",
      `KUBELET_COMMIT=${JSON.stringify(commit)}`,
      "--define",
      `KUBELET_VERSION=${JSON.stringify(version)}`,
      ...(target ? ["--target", target] : []),
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  if (build.status !== 0) fail(`bun build --compile ${target ?? "(host)"} failed with status ${build.status}`);
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Writes a release directory: the binaries, SHA256SUMS (sha256sum's format) and install.sh. */
function release(args: string[], version: string, commit: string): void {
  const out = option(args, "--out") ?? "dist/release";
  const targets = option(args, "--targets")?.split(",") ?? RELEASE_TARGETS;
  const unknown = targets.filter((t) => !RELEASE_TARGETS.includes(t));
  if (unknown.length) fail(`unknown --targets ${unknown.join(",")}: use ${RELEASE_TARGETS.join(",")}`);
  const baseUrl = option(args, "--base-url") ?? "";
  if (/['\\\s]/.test(baseUrl)) fail(`--base-url "${baseUrl}" must not contain quotes, backslashes or spaces`);

  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const sums: string[] = [];
  for (const target of targets) {
    const name = `kubelet-${target}`;
    compile(join(out, name), `bun-${target}`, version, commit);
    sums.push(`${sha256(join(out, name))}  ${name}\n`);
  }
  writeFileSync(join(out, "SHA256SUMS"), sums.join(""));

  const installer = readFileSync("install.sh", "utf8");
  const marker = /^KUBELET_RELEASE_URL=''$/m;
  if (!marker.test(installer)) fail("install.sh lost its KUBELET_RELEASE_URL='' line, which the release fills in");
  writeFileSync(join(out, "install.sh"), installer.replace(marker, `KUBELET_RELEASE_URL='${baseUrl}'`), {
    mode: 0o755,
  });
  console.error(`release v${version} in ${out}/: ${targets.length} binaries, SHA256SUMS, install.sh`);
  console.error(installHint(out, baseUrl));
}

/** How to publish a release directory and install from it: with --base-url unless the release was built for its URL. */
function installHint(out: string, baseUrl: string): string {
  return baseUrl
    ? `copy ${out}/ to ${baseUrl}/, then on a node: curl -fsSL ${baseUrl}/install.sh | sh (as root; from another account: | sudo sh)`
    : `serve ${out}/ (busybox httpd -f -p 8000 -h ${out}, or any web server), then on a node: curl -fsSL http://HOST:8000/install.sh | sh -s -- --base-url http://HOST:8000 (as root; from another account: | sudo sh -s -- …)`;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const version = option(args, "--version") ?? pkg.version;
  if (!/^\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$/.test(version)) fail(`--version "${version}" is not a semantic version`);
  const commit = gitCommit();
  mkdirSync("dist", { recursive: true });
  if (args.includes("--release")) {
    release(args, version, commit);
  } else {
    const target = option(args, "--target");
    compile(target ? `dist/kubelet-${target.replace(/^bun-/, "")}` : "dist/kubelet", target, version, commit);
  }
}
