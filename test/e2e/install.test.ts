// The release and its installer, end to end and offline: `bun build.ts --release` writes two
// release directories (v0.1.0 and v0.2.0-test), a Bun server on 127.0.0.1 hosts them, and
// `curl -fsSL …/install.sh | sh -s -- …` installs, re-runs, upgrades, refuses and uninstalls.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { freePort, removeDir, tempDir } from "./harness.ts";

declare const Bun: {
  serve(options: { hostname: string; port: number; fetch(request: Request): Response | Promise<Response> }): {
    port: number;
    stop(closeActive?: boolean): void;
  };
  file(path: string): Blob;
};

const root = join(import.meta.dir, "../..");
const work = tempDir("install");
const releases = { a: join(work, "release-a"), b: join(work, "release-b"), c: join(work, "release-c") };
/** Stand-in releases (shell scripts for binaries): d's glibc builds do not run and its musl builds do; e's none run. */
const standIns = { d: join(work, "release-d"), e: join(work, "release-e") };
/** What `bun build.ts --release --base-url <url>/c` printed. */
let builtForItsUrl = "";
/** What `bun build.ts --release` (no --base-url) printed. */
let builtWithoutUrl = "";
const fakeBin = join(work, "fake-bin");
const callLog = join(work, "calls.log");
const requests: string[] = [];
let server: { port: number; stop(closeActive?: boolean): void };
let url = "";

/** Builds a release directory with build.ts itself (the code `npm run release` runs); returns what it printed. */
function buildRelease(out: string, version: string, targets?: string, baseUrl?: string): string {
  const build = spawnSync(
    join(root, "node_modules/.bin/bun"),
    [
      "build.ts",
      "--release",
      "--out",
      out,
      "--version",
      version,
      ...(targets ? ["--targets", targets] : []),
      ...(baseUrl ? ["--base-url", baseUrl] : []),
    ],
    { cwd: root, encoding: "utf8" },
  );
  if (build.status !== 0) throw new Error(`bun build.ts --release failed: ${build.stderr}`);
  return build.stderr;
}

/** This machine's release targets (the installer picks among them by libc and CPU). */
const HOST_TARGETS =
  process.arch === "arm64" ? "linux-arm64,linux-arm64-musl" : "linux-x64,linux-x64-baseline,linux-x64-musl";

/**
 * /a/, /b/ and /c/ serve the three releases (c built for its own URL); /corrupt/ serves release a with
 * every binary's last byte flipped.
 */
async function serveReleases(request: Request): Promise<Response> {
  const path = new URL(request.url).pathname;
  requests.push(path);
  const [, name, file] = path.split("/");
  const dirs: Record<string, string> = { ...releases, ...standIns };
  const dir = dirs[name!] ?? releases.a;
  if (!file || !["a", "b", "c", "d", "e", "corrupt"].includes(name!) || !existsSync(join(dir, file)))
    return new Response("not found", { status: 404 });
  if (name !== "corrupt" || !file.startsWith("kubelet-")) return new Response(Bun.file(join(dir, file)));
  const bytes = new Uint8Array(await Bun.file(join(dir, file)).arrayBuffer());
  bytes[bytes.length - 1]! ^= 0xff;
  return new Response(bytes);
}

/**
 * `curl -fsSL <url>/install.sh | sh -s -- <args>` (`wget -qO-` where PATH has no curl), with the
 * fake systemctl first on PATH; the `sh` that runs install.sh is the first on that PATH.
 */
function install(
  release: string,
  args: string[],
  env: Record<string, string> = {},
  asUser?: number,
): Promise<{ code: number; out: string }> {
  const quoted = args.map((a) => `'${a}'`).join(" ");
  const fetch = `$(command -v curl >/dev/null && echo curl -fsSL || echo wget -qO-) ${url}/${release}/install.sh`;
  const pipeline = `${fetch} | sh -s -- ${quoted}`;
  const command =
    asUser === undefined
      ? ["/bin/sh", "-c", pipeline]
      : ["setpriv", `--reuid=${asUser}`, `--regid=${asUser}`, "--clear-groups", "/bin/sh", "-c", pipeline];
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), {
      env: {
        ...process.env,
        PATH: `${fakeBin}:${process.env.PATH}`,
        DOCKER_HOST: `unix://${join(work, "no-docker.sock")}`,
        KUBELET_BASE_URL: `${url}/${release}`,
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("exit", (code) => resolve({ code: code ?? -1, out }));
  });
}

/** A home directory under `work` for a user who is not root: nobody when the tests run as root (uid set), else the current user. */
function userHome(name: string): { uid: number | undefined; home: string } {
  const uid = process.getuid?.() === 0 ? 65534 : undefined;
  const home = join(work, name);
  mkdirSync(home, { mode: 0o777 });
  chmodSync(work, 0o755);
  if (uid !== undefined) spawnSync("chown", [`${uid}:${uid}`, home]);
  return { uid, home };
}

/**
 * A kubelet stand-in that runs: `--version` says v9.9.9, `print-config` prints a root_dir and echoes its
 * arguments as comments (so a test reads what install.sh asked for), and it knows --admin_token_file.
 */
const RUNNING_STAND_IN = `#!/bin/sh
case "$1" in
--version) echo "kubelet v9.9.9 (commit stand-in, bun 0)" ;;
print-config)
  shift
  echo "root_dir: /srv/stand-in-root"
  for arg in "$@"; do echo "# arg: $arg"; done
  ;;
*) exit 1 ;;
esac
`;
/** A build that does not run here, as a binary for another C library fails (musl's loader on a glibc system). */
const FAILING_STAND_IN = `#!/bin/sh\necho "Error loading shared library libstdc++.so.6: No such file or directory" >&2\nexit 127\n`;

/** A release directory of stand-ins: each C library's builds run or not; install.sh and SHA256SUMS as a release's. */
function writeStandInRelease(dir: string, runs: { glibc: boolean; musl: boolean }): void {
  mkdirSync(dir, { recursive: true });
  const names = ["linux-x64", "linux-x64-baseline", "linux-x64-musl", "linux-arm64", "linux-arm64-musl"];
  const sums: string[] = [];
  for (const name of names) {
    const file = join(dir, `kubelet-${name}`);
    writeFileSync(file, (name.endsWith("-musl") ? runs.musl : runs.glibc) ? RUNNING_STAND_IN : FAILING_STAND_IN);
    chmodSync(file, 0o755);
    sums.push(`${sha256(file)}  kubelet-${name}`);
  }
  writeFileSync(join(dir, "SHA256SUMS"), `${sums.join("\n")}\n`);
  writeFileSync(join(dir, "install.sh"), readFileSync(join(releases.a, "install.sh")));
}

/**
 * A stand-in root for the installer's C library probes (KUBELET_PROBE_ROOT): a bin/sh whose ELF interpreter is
 * `interp` (only its first bytes: the probe reads the PT_INTERP string), an os-release, and the libraries listed.
 */
function standInRoot(name: string, interp: string, options: { os?: string; libs?: string[] } = {}): string {
  const dir = join(work, name);
  mkdirSync(join(dir, "bin"), { recursive: true });
  mkdirSync(join(dir, "etc"), { recursive: true });
  const header = Buffer.alloc(64);
  header.write("\x7fELF", 0, "latin1");
  writeFileSync(join(dir, "bin/sh"), Buffer.concat([header, Buffer.from(`${interp}\0`), Buffer.alloc(512)]));
  writeFileSync(join(dir, "etc/os-release"), `ID=${options.os ?? "debian"}\n`);
  for (const lib of options.libs ?? []) {
    mkdirSync(join(dir, "usr/lib"), { recursive: true });
    writeFileSync(join(dir, "usr/lib", lib), "");
  }
  return dir;
}

/** The glibc asset install.sh picks on this machine: x64 (AVX2), x64-baseline, or arm64. */
function hostGlibcAsset(): string {
  if (process.arch === "arm64") return "kubelet-linux-arm64";
  return /^flags.* avx2/m.test(readFileSync("/proc/cpuinfo", "utf8"))
    ? "kubelet-linux-x64"
    : "kubelet-linux-x64-baseline";
}
const hostMuslAsset = process.arch === "arm64" ? "kubelet-linux-arm64-musl" : "kubelet-linux-x64-musl";
const muslLoader = process.arch === "arm64" ? "/lib/ld-musl-aarch64.so.1" : "/lib/ld-musl-x86_64.so.1";
const glibcLoader = process.arch === "arm64" ? "/lib/ld-linux-aarch64.so.1" : "/lib64/ld-linux-x86-64.so.2";

/** The machine's names for musl and gcc: x86_64 or aarch64. */
const machine = process.arch === "arm64" ? "aarch64" : "x86_64";

/**
 * A musl root: Debian's musl as /lib/ld-musl-<machine>.so.1, libstdc++.so.6 and libgcc_s.so.1 linked against musl
 * from Debian's gcc archives (with testdata/musl/glibc-symbols.c for the five glibc symbols they use), a static
 * busybox as /bin/sh and its tools, /dev/null and /tmp. Returns why it cannot be built here, or the root.
 */
function assembleMuslRoot(dir: string): { root: string } | { missing: string } {
  const gccDir = spawnSync("sh", ["-c", `ls -d /usr/lib/gcc/${machine}-linux-gnu/*/ | tail -n 1`], {
    encoding: "utf8",
  }).stdout.trim();
  const busybox = spawnSync("sh", ["-c", "command -v busybox"], { encoding: "utf8" }).stdout.trim();
  const musl = `/lib/${machine}-linux-musl/libc.so`;
  const needs: Array<[string, boolean]> = [
    ["musl (Debian's musl package)", existsSync(musl)],
    ["musl-gcc (musl-tools, musl-dev)", spawnSync("sh", ["-c", "command -v musl-gcc"]).status === 0],
    ["Debian's libstdc++.a (g++)", gccDir !== "" && existsSync(join(gccDir, "libstdc++.a"))],
    [
      "a static busybox (busybox-static)",
      busybox !== "" && /statically linked/.test(spawnSync("file", ["-L", busybox], { encoding: "utf8" }).stdout),
    ],
  ];
  const missing = needs.filter(([, ok]) => !ok).map(([what]) => what);
  if (missing.length) return { missing: missing.join(", ") };
  for (const sub of ["bin", "lib", "usr/lib", "dev", "tmp", "etc"]) mkdirSync(join(dir, sub), { recursive: true });
  const build = join(dir, "..", "musl-runtime-build");
  mkdirSync(build, { recursive: true });
  const cc = (args: string[]) => {
    const result = spawnSync("musl-gcc", args, { cwd: build, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`musl-gcc ${args.join(" ")}: ${result.stderr}`);
  };
  cc(["-O2", "-fPIC", "-c", join(root, "testdata/musl/glibc-symbols.c"), "-o", "glibc-symbols.o"]);
  const whole = (archive: string) => ["-Wl,--whole-archive", join(gccDir, archive), "-Wl,--no-whole-archive"];
  cc([
    "-shared",
    "-o",
    "libgcc_s.so.1",
    "-Wl,-soname,libgcc_s.so.1",
    ...whole("libgcc_eh.a"),
    "glibc-symbols.o",
    join(gccDir, "libgcc.a"),
  ]);
  cc([
    "-shared",
    "-o",
    "libstdc++.so.6",
    "-Wl,-soname,libstdc++.so.6",
    ...whole("libstdc++.a"),
    "glibc-symbols.o",
    "-L.",
    "-l:libgcc_s.so.1",
  ]);
  for (const lib of ["libgcc_s.so.1", "libstdc++.so.6"])
    writeFileSync(join(dir, "usr/lib", lib), readFileSync(join(build, lib)));
  writeFileSync(join(dir, `lib/ld-musl-${machine}.so.1`), readFileSync(musl));
  chmodSync(join(dir, `lib/ld-musl-${machine}.so.1`), 0o755);
  writeFileSync(join(dir, "bin/busybox"), readFileSync(busybox));
  chmodSync(join(dir, "bin/busybox"), 0o755);
  expect(spawnSync("chroot", [dir, "/bin/busybox", "--install", "-s", "/bin"]).status).toBe(0);
  expect(spawnSync("mknod", ["-m", "666", join(dir, "dev/null"), "c", "1", "3"]).status).toBe(0);
  chmodSync(join(dir, "tmp"), 0o1777);
  return { root: dir };
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const versionOf = (bin: string) => spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout.trim();

beforeAll(() => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: serveReleases });
  url = `http://127.0.0.1:${server.port}`;
  builtWithoutUrl = buildRelease(releases.a, "0.1.0");
  // The upgrade and the release built for its URL need only this architecture's binaries.
  buildRelease(releases.b, "0.2.0-test", HOST_TARGETS);
  builtForItsUrl = buildRelease(releases.c, "0.3.0-test", HOST_TARGETS, `${url}/c`);
  writeStandInRelease(standIns.d, { glibc: false, musl: true });
  writeStandInRelease(standIns.e, { glibc: false, musl: false });
  mkdirSync(fakeBin);
  // A stand-in systemctl that records each call and keeps enabled/active state in files, so no test
  // can ever touch the machine's own systemd.
  writeFileSync(
    join(fakeBin, "systemctl"),
    `#!/bin/sh
echo "$*" >> '${callLog}'
state='${work}/systemd-state'
mkdir -p "$state"
case "$1" in
is-enabled) [ -f "$state/enabled" ] ;;
is-active) [ -f "$state/active" ] ;;
enable) touch "$state/enabled" ;;
start | restart) touch "$state/active" ;;
disable) rm -f "$state/enabled"; [ "$2" = --now ] && rm -f "$state/active" ;;
esac
`,
  );
  chmodSync(join(fakeBin, "systemctl"), 0o755);
}, 240_000);

afterAll(() => {
  server?.stop(true);
  removeDir(work);
});

describe("the release directory (bun build.ts --release)", () => {
  test("holds a binary per Linux target, SHA256SUMS over them and install.sh", () => {
    expect(readdirSync(releases.a).sort()).toEqual([
      "SHA256SUMS",
      "install.sh",
      "kubelet-linux-arm64",
      "kubelet-linux-arm64-musl",
      "kubelet-linux-x64",
      "kubelet-linux-x64-baseline",
      "kubelet-linux-x64-musl",
    ]);
    const sums = readFileSync(join(releases.a, "SHA256SUMS"), "utf8").trim().split("\n");
    expect(sums).toHaveLength(5);
    for (const line of sums) {
      const [hash, name] = line.split("  ");
      expect(sha256(join(releases.a, name!))).toBe(hash!);
    }
  });

  test("embeds the release version and the git commit (kubelet --version)", () => {
    const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).stdout.trim();
    const host = process.arch === "arm64" ? "arm64" : "x64";
    expect(versionOf(join(releases.b, `kubelet-linux-${host}`))).toStartWith(
      `kubelet v0.2.0-test (commit ${commit}, bun `,
    );
  });

  test("install.sh is POSIX sh that shellcheck passes", () => {
    const shellcheck = spawnSync("shellcheck", ["--shell=sh", join(releases.a, "install.sh")], { encoding: "utf8" });
    if (shellcheck.error && process.env.CI !== "true") return console.warn("shellcheck is not installed: skipped");
    expect(shellcheck.stdout + shellcheck.stderr).toBe("");
    expect(shellcheck.status).toBe(0);
  });
});

describe("curl -fsSL …/install.sh | sh -s -- --prefix DIR --no-systemd", () => {
  const prefix = join(work, "prefix");
  const bin = join(prefix, "bin/kubelet");
  const config = join(prefix, "etc/kubelet/config.yaml");

  test("installs a binary that runs, the manifests directory and a commented config file", async () => {
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd"]);
    expect(out).toContain(`kubelet v0.1.0 installed at ${bin}`);
    expect(code).toBe(0);
    expect(out.trim().split("\n").at(-1)).toBe(
      `==> start it (no systemd unit runs it): ${bin} run --config_file ${config} (${prefix}/bin is not on PATH: export PATH="${prefix}/bin:$PATH" to call it kubelet)`,
    );
    expect(versionOf(bin)).toStartWith("kubelet v0.1.0 ");
    expect(statSync(join(prefix, "etc/kubelet/manifests")).isDirectory()).toBe(true);
    const text = readFileSync(config, "utf8");
    expect(text).toContain(`\nconfig: ${join(prefix, "etc/kubelet/manifests")}\n`);
    expect(text).toContain("\n# sync_frequency: 10s\n");
    expect(spawnSync(bin, ["print-config", "--config_file", config], { encoding: "utf8" }).status).toBe(0);
  });

  test("a second run changes nothing, says so, and downloads only SHA256SUMS", async () => {
    const before = statSync(bin);
    requests.length = 0;
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd"]);
    expect(code).toBe(0);
    expect(out).toContain("nothing to do: kubelet v0.1.0 is installed");
    expect(out.trim().split("\n").at(-1)).toStartWith(
      `==> start it (no systemd unit runs it): ${bin} run --config_file`,
    );
    expect(requests.filter((p) => p.includes("kubelet-linux"))).toEqual([]);
    expect(statSync(bin).ino).toBe(before.ino);
    expect(statSync(bin).mtimeMs).toBe(before.mtimeMs);
  });

  test("refuses a binary that does not match SHA256SUMS and keeps the installed one", async () => {
    const before = sha256(bin);
    const { code, out } = await install("corrupt", ["--prefix", prefix, "--no-systemd", "--version", "0.2.0-test"]);
    expect(code).toBe(1);
    expect(out).toMatch(/install\.sh: checksum mismatch for http:\/\/127\.0\.0\.1:\d+\/corrupt\/kubelet-linux-/);
    expect(out).toContain(`v0.1.0 at ${bin} is untouched`);
    expect(sha256(bin)).toBe(before);
    expect(readdirSync(join(prefix, "bin"))).toEqual(["kubelet"]);
  });

  test("--dry-run prints each step and changes nothing", async () => {
    const before = sha256(bin);
    const { code, out } = await install("b", ["--prefix", prefix, "--no-systemd", "--dry-run"]);
    expect(code).toBe(0);
    expect(out).toContain(`dry run: would upgrade ${bin} from v0.1.0`);
    expect(out).toContain("nothing was changed");
    expect(sha256(bin)).toBe(before);
    const fresh = join(work, "dry-prefix");
    const first = await install("a", ["--prefix", fresh, "--dry-run"]);
    expect(first.out).toContain(`dry run: would install ${url}/a/kubelet-linux-`);
    expect(first.out).toContain(`dry run: would write ${join(fresh, "etc/kubelet/config.yaml")}`);
    expect(first.out).toContain("dry run: would write /etc/systemd/system/kubelet.service");
    expect(first.code).toBe(0);
    expect(existsSync(fresh)).toBe(false);
  });

  test("an upgrade to another release replaces the binary in place and keeps the operator's config", async () => {
    writeFileSync(config, "config: /srv/pods\nsync_frequency: 1m\n");
    const { code, out } = await install("b", ["--prefix", prefix, "--no-systemd"]);
    expect(out).toContain(`kubelet v0.2.0-test installed at ${bin} (was v0.1.0)`);
    expect(out).toContain(`keeping ${config}`);
    expect(code).toBe(0);
    expect(versionOf(bin)).toStartWith("kubelet v0.2.0-test ");
    expect(readFileSync(config, "utf8")).toBe("config: /srv/pods\nsync_frequency: 1m\n");
  });

  test("--version refuses a release directory that holds another version", async () => {
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd", "--version", "0.3.0"]);
    expect(out).toContain("holds kubelet v0.1.0, not the requested v0.3.0: nothing was installed");
    expect(code).toBe(1);
    expect(versionOf(bin)).toStartWith("kubelet v0.2.0-test ");
  });

  test("--uninstall removes the binary and keeps config and manifests", async () => {
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd", "--uninstall"]);
    expect(code).toBe(0);
    expect(out).toContain(`remove ${bin}`);
    expect(existsSync(bin)).toBe(false);
    expect(existsSync(config)).toBe(true);
    expect(existsSync(join(prefix, "etc/kubelet/manifests"))).toBe(true);
    const again = await install("a", ["--prefix", prefix, "--no-systemd", "--uninstall"]);
    expect(again.out).toContain("nothing to remove");
  });
});

describe("the release directory's URL (--base-url) and the installer's last line", () => {
  test("a release built with --base-url installs from there with no --base-url given, and build.ts says so", async () => {
    expect(builtForItsUrl).toContain(
      `copy ${releases.c}/ to ${url}/c/, then on a node: curl -fsSL ${url}/c/install.sh | sh (as root; from another account: | sudo sh)\n`,
    );
    requests.length = 0;
    const prefix = join(work, "published-prefix");
    const { code, out } = await install("c", ["--prefix", prefix, "--no-systemd"], { KUBELET_BASE_URL: "" });
    expect(out).toContain(`kubelet v0.3.0-test installed at ${prefix}/bin/kubelet`);
    expect(code).toBe(0);
    expect(requests).toContain("/c/SHA256SUMS");
  });

  test("build.ts without --base-url says to serve the directory and give its URL as --base-url", () => {
    expect(builtWithoutUrl).toContain(
      `serve ${releases.a}/ (busybox httpd -f -p 8000 -h ${releases.a}, or any web server), then on a node: curl -fsSL http://HOST:8000/install.sh | sh -s -- --base-url http://HOST:8000 (as root; from another account: | sudo sh -s -- …)\n`,
    );
  });

  test("a --base-url that does not answer, or is no release directory, fails in one line naming --base-url", async () => {
    const closed = `http://127.0.0.1:${await freePort()}/kubelet`;
    const prefix = join(work, "unreachable");
    const refused = await install("a", ["--prefix", prefix, "--no-systemd", "--base-url", closed]);
    const [line, ...more] = refused.out.trim().split("\n");
    expect(more).toEqual([]);
    expect(line).toStartWith(
      `install.sh: cannot download ${closed}/SHA256SUMS (curl: (7) Failed to connect to 127.0.0.1`,
    );
    expect(line).toEndWith(
      "): check --base-url (KUBELET_BASE_URL): it must be the URL of a release directory (kubelet-linux-*, SHA256SUMS) that a web server serves",
    );
    expect(refused.code).toBe(1);
    const missing = await install("a", ["--prefix", prefix, "--no-systemd", "--base-url", `${url}/nothing-here`]);
    expect(missing.out.trim()).toStartWith(
      `install.sh: cannot download ${url}/nothing-here/SHA256SUMS (curl: (22) The requested URL returned error: 404): check --base-url`,
    );
    expect(missing.code).toBe(1);
    expect(existsSync(prefix)).toBe(false);
  });

  test("with no --base-url and no URL built in, the project's releases are tried and the failure says to give --base-url", async () => {
    // A curl that cannot resolve the project's host (the tests stay on loopback) and is the real one otherwise.
    const tools = join(work, "offline-bin");
    mkdirSync(tools);
    const curl = spawnSync("sh", ["-c", "command -v curl"], { encoding: "utf8" }).stdout.trim();
    writeFileSync(
      join(tools, "curl"),
      `#!/bin/sh\ncase "$*" in *github.com*) echo 'curl: (6) Could not resolve host: github.com' >&2; exit 6 ;; esac\nexec '${curl}' "$@"\n`,
    );
    chmodSync(join(tools, "curl"), 0o755);
    const { code, out } = await install("a", ["--prefix", join(work, "offline"), "--no-systemd"], {
      KUBELET_BASE_URL: "",
      PATH: `${tools}:${fakeBin}:${process.env.PATH}`,
    });
    expect(out).toContain(
      "install.sh: cannot download https://github.com/kubelet-project/kubelet/releases/latest/download/SHA256SUMS (curl: (6) Could not resolve host: github.com): no --base-url was given, so the project's releases were tried; give the URL of your release directory (npm run release writes it to dist/release/) with --base-url URL",
    );
    expect(code).toBe(1);
  });

  test("the last line names the binary's directory as missing from PATH only when it is", async () => {
    const prefix = join(work, "on-path");
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd"], {
      PATH: `${prefix}/bin:${fakeBin}:${process.env.PATH}`,
    });
    expect(code).toBe(0);
    expect(out.trim().split("\n").at(-1)).toBe(
      `==> start it (no systemd unit runs it): ${prefix}/bin/kubelet run --config_file ${prefix}/etc/kubelet/config.yaml`,
    );
  });
});

describe("the systemd unit, other shells, users and machines", () => {
  test("writes kubelet.service: after Docker, restart always, run --config_file without the optimizing JIT; --uninstall removes it", async () => {
    const prefix = join(work, "unit-prefix");
    const unitDir = join(work, "units");
    const env = { KUBELET_UNIT_DIR: unitDir };
    const { code, out } = await install("a", ["--prefix", prefix], env);
    expect(code).toBe(0);
    const unit = readFileSync(join(unitDir, "kubelet.service"), "utf8");
    const lines = unit.split("\n");
    for (const line of [
      "After=docker.service network-online.target",
      "Wants=docker.service network-online.target",
      `ExecStart=${prefix}/bin/kubelet run --config_file ${prefix}/etc/kubelet/config.yaml`,
      "Environment=BUN_JSC_useDFGJIT=0",
      "Restart=always",
      "StandardError=journal",
      "WantedBy=multi-user.target",
    ])
      expect(lines).toContain(line);
    if (!existsSync("/run/systemd/system")) expect(out).toContain("systemd is not running here");
    const again = await install("a", ["--prefix", prefix], env);
    expect(again.out).toContain("nothing to do");
    const removed = await install("a", ["--prefix", prefix, "--uninstall"], env);
    expect(removed.code).toBe(0);
    expect(existsSync(join(unitDir, "kubelet.service"))).toBe(false);
    expect(existsSync(join(prefix, "bin/kubelet"))).toBe(false);
  });

  test("where systemd runs: enables and starts the service, leaves it alone on a re-run, restarts it on upgrade", async () => {
    const prefix = join(work, "systemd-prefix");
    const running = join(work, "run-systemd-system");
    mkdirSync(running);
    const env = { KUBELET_UNIT_DIR: join(work, "systemd-units"), KUBELET_SYSTEMD_RUNTIME_DIR: running };
    let lastLine = "";
    const calls = async (release: string, args: string[] = []) => {
      writeFileSync(callLog, "");
      const { code, out } = await install(release, ["--prefix", prefix, ...args], env);
      expect(code, out).toBe(0);
      lastLine = out.trim().split("\n").at(-1)!;
      return readFileSync(callLog, "utf8").trim().split("\n").filter(Boolean);
    };
    expect(await calls("a")).toEqual([
      "daemon-reload",
      "is-enabled --quiet kubelet.service",
      "enable --quiet kubelet.service",
      "is-active --quiet kubelet.service",
      "start kubelet.service",
    ]);
    expect(lastLine).toStartWith(
      `==> kubelet.service runs it (journalctl -u kubelet -f); to run it without systemd instead: ${prefix}/bin/kubelet run --config_file ${prefix}/etc/kubelet/config.yaml`,
    );
    expect(await calls("a")).toEqual(["is-enabled --quiet kubelet.service", "is-active --quiet kubelet.service"]);
    expect(await calls("b")).toEqual([
      "is-enabled --quiet kubelet.service",
      "is-active --quiet kubelet.service",
      "restart kubelet.service",
    ]);
    expect(await calls("b", ["--uninstall"])).toEqual(["disable --now --quiet kubelet.service", "daemon-reload"]);
  });

  test("says what to install when Docker is not reachable", async () => {
    const { out } = await install("a", ["--prefix", join(work, "nodocker"), "--no-systemd", "--dry-run"]);
    expect(out).toContain(`Docker is not reachable at unix://${join(work, "no-docker.sock")}`);
    expect(out).toContain("apt-get install docker.io");
    expect(out).toContain("--install-docker");
  });

  test("--install-docker installs docker.io with apt-get when Docker does not answer (Debian/Ubuntu, root)", async () => {
    const debian =
      existsSync("/etc/os-release") && /^(ID|ID_LIKE)=.*(debian|ubuntu)/m.test(readFileSync("/etc/os-release", "utf8"));
    if (!debian || process.getuid?.() !== 0) return console.warn("needs root on Debian or Ubuntu: skipped");
    // Stand-ins: apt-get records its calls and "installs" a docker that answers from then on.
    const tools = join(work, "apt-bin");
    const installed = join(work, "docker-installed");
    mkdirSync(tools);
    writeFileSync(
      join(tools, "apt-get"),
      `#!/bin/sh\necho "apt-get $*" >> '${callLog}'\n[ "$1" = install ] && touch '${installed}'\nexit 0\n`,
    );
    writeFileSync(join(tools, "docker"), `#!/bin/sh\n[ -f '${installed}' ]\n`);
    for (const tool of ["apt-get", "docker"]) chmodSync(join(tools, tool), 0o755);
    writeFileSync(callLog, "");
    const { code, out } = await install(
      "a",
      ["--prefix", join(work, "docker-prefix"), "--no-systemd", "--install-docker"],
      {
        PATH: `${tools}:${fakeBin}:${process.env.PATH}`,
      },
    );
    expect(code).toBe(0);
    expect(out).toContain("install Docker Engine (apt-get install docker.io)");
    expect(out).not.toContain("Docker is not reachable");
    const calls = readFileSync(callLog, "utf8").trim().split("\n");
    expect(calls).toEqual([
      "apt-get update -q",
      "apt-get install -y -q --no-install-recommends docker.io ca-certificates",
    ]);
    const again = await install("a", ["--prefix", join(work, "docker-prefix"), "--no-systemd", "--install-docker"], {
      PATH: `${tools}:${fakeBin}:${process.env.PATH}`,
    });
    expect(again.out).toContain("nothing to do");
  });

  test("checks for Docker before installing anything: an --install-docker it cannot carry out changes nothing", async () => {
    // --install-docker needs root.
    const { uid, home } = userHome("docker-refused");
    const refused = await install("a", ["--prefix", join(home, ".local"), "--no-systemd", "--install-docker"], {}, uid);
    expect(refused.out).toMatch(
      /install\.sh: --install-docker (needs root|knows Debian and Ubuntu only).*nothing was changed/,
    );
    expect(refused.code).toBe(1);
    expect(existsSync(join(home, ".local/bin/kubelet"))).toBe(false);
  });

  test("--install-docker says how Docker will run before anything is installed: by systemd, or a default dockerd with its bridge network", async () => {
    const debian =
      existsSync("/etc/os-release") && /^(ID|ID_LIKE)=.*(debian|ubuntu)/m.test(readFileSync("/etc/os-release", "utf8"));
    if (!debian || process.getuid?.() !== 0) return console.warn("needs root on Debian or Ubuntu: skipped");
    const systemdDir = join(work, "run-systemd");
    mkdirSync(systemdDir, { recursive: true });
    const plan = async (systemd: string) => {
      const { out } = await install(
        "a",
        ["--prefix", join(work, "docker-plan"), "--no-systemd", "--install-docker", "--dry-run"],
        { KUBELET_SYSTEMD_RUNTIME_DIR: systemd },
      );
      const announced = out.indexOf(
        `no Docker Engine answers at unix://${join(work, "no-docker.sock")}: --install-docker installs Docker Engine (apt-get install docker.io), `,
      );
      expect(announced).toBeGreaterThanOrEqual(0);
      expect(announced).toBeLessThan(out.indexOf("dry run: would install"));
      return out;
    };
    expect(await plan(systemdDir)).toContain("started by systemd (systemctl enable --now docker.service)");
    expect(await plan(join(work, "no-systemd"))).toContain(
      "started as a background dockerd, since no systemd runs here, with Docker's default settings: the docker0 bridge network (172.17.0.0/16) with iptables NAT rules",
    );
  });

  test("installs without root into $HOME/.local with --no-systemd, and says why it needs root without it", async () => {
    const { uid, home } = userHome("home");
    const prefix = join(home, ".local");
    // A Docker socket only root may open, as /var/run/docker.sock is to a user outside the docker group.
    const socket = join(work, "root-docker.sock");
    const engine = createServer().listen(socket);
    await new Promise((resolve) => engine.once("listening", resolve));
    chmodSync(socket, 0o600);
    const dockerHost: Record<string, string> = uid === undefined ? {} : { DOCKER_HOST: `unix://${socket}` };
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd"], { HOME: home, ...dockerHost }, uid);
    engine.close();
    expect(out).toContain(`kubelet v0.1.0 installed at ${prefix}/bin/kubelet`);
    expect(code).toBe(0);
    if (uid !== undefined)
      expect(out).toContain(
        `install.sh: warning: Docker's socket ${socket} is not open to nobody: run the kubelet as root, or add nobody to the socket's group (usermod -aG docker nobody) and log in again`,
      );
    expect(statSync(join(prefix, "etc/kubelet/config.yaml")).uid).toBe(uid ?? process.getuid!());
    if (uid === undefined) return;
    const withUnit = await install("a", ["--prefix", join(home, "other")], { HOME: home }, uid);
    expect(withUnit.out.trim()).toBe(
      'install.sh: writing /etc/systemd/system/kubelet.service needs root: rerun with sudo, or add --no-systemd (with --prefix "$HOME/.local" to install as a user)',
    );
    expect(withUnit.code).toBe(1);
  });

  test("runs under busybox sh with only busybox's tools, downloading with wget", async () => {
    const busybox = spawnSync("sh", ["-c", "command -v busybox"], { encoding: "utf8" }).stdout.trim();
    if (!busybox && process.env.CI !== "true") return console.warn("busybox is not installed: skipped");
    const tools = join(work, "busybox-bin");
    mkdirSync(tools);
    expect(spawnSync(busybox, ["--install", "-s", tools]).status).toBe(0);
    rmSync(join(tools, "curl"), { force: true });
    const prefix = join(work, "busybox-prefix");
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd"], { PATH: tools });
    expect(out).toContain(`kubelet v0.1.0 installed at ${prefix}/bin/kubelet`);
    expect(out).toContain("Docker is not reachable"); // no docker CLI and no curl to ask the socket
    expect(code).toBe(0);
    expect(versionOf(join(prefix, "bin/kubelet"))).toStartWith("kubelet v0.1.0 ");
  });

  test("refuses a relative --prefix, which would end up in the unit's ExecStart, as a usage error", async () => {
    const { code, out } = await install("a", ["--prefix", "relative/dir", "--no-systemd"]);
    expect(out).toContain('install.sh: "relative/dir" is a relative path');
    expect(code).toBe(2);
  });

  test("refuses an unknown architecture with one clear line", async () => {
    const fakeUname = join(work, "mips-bin");
    mkdirSync(fakeUname, { recursive: true });
    writeFileSync(join(fakeUname, "uname"), '#!/bin/sh\n[ "$1" = -m ] && echo mips64 || echo Linux\n');
    chmodSync(join(fakeUname, "uname"), 0o755);
    const { code, out } = await install("a", ["--prefix", join(work, "mips"), "--no-systemd"], {
      PATH: `${fakeUname}:${fakeBin}:${process.env.PATH}`,
    });
    expect(code).toBe(1);
    expect(out.trim()).toBe(
      'install.sh: unsupported architecture "mips64": kubelet releases are built for x86_64 and aarch64 (Linux)',
    );
    expect(existsSync(join(work, "mips"))).toBe(false);
  });
});

describe("a secure-by-default install", () => {
  const asRoot = process.getuid?.() === 0;

  test("as root, config.yaml and the unit are 0600 root:root, with anonymous auth off and the read-only port 0", async () => {
    if (!asRoot) return console.warn("needs root (files owned by root): skipped");
    const prefix = join(work, "secure-prefix");
    const unitDir = join(work, "secure-units");
    const { code, out } = await install("a", ["--prefix", prefix], { KUBELET_UNIT_DIR: unitDir });
    expect(code, out).toBe(0);
    const config = join(prefix, "etc/kubelet/config.yaml");
    for (const file of [config, join(unitDir, "kubelet.service")]) {
      const stat = statSync(file);
      expect({ file, mode: (stat.mode & 0o777).toString(8), uid: stat.uid, gid: stat.gid }).toEqual({
        file,
        mode: "600",
        uid: 0,
        gid: 0,
      });
    }
    const text = readFileSync(config, "utf8");
    expect(text).toContain("\nanonymous_auth: false\n");
    expect(text).toContain("\nread_only_port: 0\n");
    // The kubelet reads them back as set.
    const effective = spawnSync(join(prefix, "bin/kubelet"), ["print-config", "--config_file", config], {
      encoding: "utf8",
    }).stdout;
    expect(effective).toContain("\nanonymous_auth: false\n");
    expect(effective).toContain("\nread_only_port: 0\n");
  });

  test("an existing config file or unit that others may read is made 0600, its content kept", async () => {
    const prefix = join(work, "loose-prefix");
    const unitDir = join(work, "loose-units");
    const env = { KUBELET_UNIT_DIR: unitDir };
    expect((await install("a", ["--prefix", prefix], env)).code).toBe(0);
    const config = join(prefix, "etc/kubelet/config.yaml");
    const unit = join(unitDir, "kubelet.service");
    writeFileSync(config, "config: /srv/pods\n");
    chmodSync(config, 0o644);
    chmodSync(unit, 0o644);
    const unitText = readFileSync(unit, "utf8");
    const { code, out } = await install("a", ["--prefix", prefix], env);
    expect(code, out).toBe(0);
    expect(out).toContain(`chmod 600 ${config} (was 644: the config file is for root only)`);
    expect(out).toContain(`chmod 600 ${unit} (was 644: the unit is for root only)`);
    expect((statSync(config).mode & 0o777).toString(8)).toBe("600");
    expect((statSync(unit).mode & 0o777).toString(8)).toBe("600");
    expect(readFileSync(config, "utf8")).toBe("config: /srv/pods\n");
    expect(readFileSync(unit, "utf8")).toBe(unitText);
  });

  test("a kubelet that generates an admin token gets config.yaml naming it, and the installer says where it is", async () => {
    const prefix = join(work, "token-prefix");
    const root = standInRoot("token-root", glibcLoader, { libs: ["libstdc++.so.6", "libgcc_s.so.1"] });
    const { code, out } = await install("d", ["--prefix", prefix, "--no-systemd"], { KUBELET_PROBE_ROOT: root });
    expect(code, out).toBe(0);
    const text = readFileSync(join(prefix, "etc/kubelet/config.yaml"), "utf8");
    for (const arg of [
      "--anonymous_auth=false",
      "--read_only_port=0",
      "--admin_token_file=/srv/stand-in-root/admin-token",
    ])
      expect(text).toContain(`# arg: ${arg}\n`);
    expect(out).toContain(
      "==> anonymous access is off: local administration uses the admin token the kubelet writes to /srv/stand-in-root/admin-token at its start (0600, root only; the kubelet's own commands read it)",
    );
  });
});

describe("the build for the C library the system runs on", () => {
  test("on this glibc machine with Debian's musl package installed (its /lib/ld-musl-*), the glibc build is installed", async () => {
    if (!existsSync(muslLoader)) {
      if (process.env.CI === "true") throw new Error(`${muslLoader} is missing: scripts/services.sh installs musl`);
      return console.warn("Debian's musl package is not installed: skipped");
    }
    const prefix = join(work, "glibc-with-musl");
    const { code, out } = await install("a", ["--prefix", prefix, "--no-systemd"]);
    expect(out).toContain(`==> install ${url}/a/${hostGlibcAsset()} as ${prefix}/bin/kubelet (glibc system)`);
    expect(code).toBe(0);
    expect(versionOf(join(prefix, "bin/kubelet"))).toStartWith("kubelet v0.1.0 ");
  });

  test("a system whose /bin/sh runs on musl gets the musl build, once libstdc++ and libgcc are there; without them, the command that installs them", async () => {
    const prefix = join(work, "musl-prefix");
    const bare = standInRoot("musl-bare", muslLoader, { os: "alpine" });
    const refused = await install("a", ["--prefix", prefix, "--no-systemd", "--dry-run"], { KUBELET_PROBE_ROOT: bare });
    expect(refused.out.trim()).toBe(
      `install.sh: ${hostMuslAsset} (this system runs on musl) needs libstdc++.so.6 libgcc_s.so.1 besides the C library, which this system lacks: apk add libstdc++ libgcc, then run this again; nothing was installed`,
    );
    expect(refused.code).toBe(1);
    const ready = standInRoot("musl-ready", muslLoader, { os: "alpine", libs: ["libstdc++.so.6", "libgcc_s.so.1"] });
    const planned = await install("a", ["--prefix", prefix, "--no-systemd", "--dry-run"], {
      KUBELET_PROBE_ROOT: ready,
    });
    expect(planned.out).toContain(
      `dry run: would install ${url}/a/${hostMuslAsset} as ${prefix}/bin/kubelet (musl system)`,
    );
    expect(planned.code).toBe(0);
  });

  test("a static /bin/sh is judged by the loaders present: glibc's wins over musl's", async () => {
    const root = standInRoot("static-sh", "");
    const glibc = join(root, glibcLoader);
    mkdirSync(join(glibc, ".."), { recursive: true });
    writeFileSync(glibc, "");
    mkdirSync(join(root, "lib"), { recursive: true });
    writeFileSync(join(root, muslLoader), "");
    const { out } = await install("a", ["--prefix", join(work, "static"), "--no-systemd", "--dry-run"], {
      KUBELET_PROBE_ROOT: root,
    });
    expect(out).toContain(`/a/${hostGlibcAsset()} as `);
  });

  test("when the system's build does not run, the other C library's build is installed; a re-run keeps it", async () => {
    const prefix = join(work, "fallback-prefix");
    const root = standInRoot("fallback-root", glibcLoader, { libs: ["libstdc++.so.6", "libgcc_s.so.1"] });
    const env = { KUBELET_PROBE_ROOT: root };
    const { code, out } = await install("d", ["--prefix", prefix, "--no-systemd"], env);
    expect(out).toContain(
      `==> ${hostGlibcAsset()} does not run on this machine (Error loading shared library libstdc++.so.6: No such file or directory); trying ${hostMuslAsset}`,
    );
    expect(out).toContain(`kubelet v9.9.9 installed at ${prefix}/bin/kubelet`);
    expect(code).toBe(0);
    expect(sha256(join(prefix, "bin/kubelet"))).toBe(sha256(join(standIns.d, hostMuslAsset)));
    const again = await install("d", ["--prefix", prefix, "--no-systemd"], env);
    expect(again.out).toContain("binary unchanged");
  });

  test("when neither build runs, nothing is installed and both failures are named", async () => {
    const prefix = join(work, "neither-prefix");
    const root = standInRoot("neither-root", glibcLoader, { libs: ["libstdc++.so.6", "libgcc_s.so.1"] });
    const { code, out } = await install("e", ["--prefix", prefix, "--no-systemd"], { KUBELET_PROBE_ROOT: root });
    expect(out).toContain(
      `install.sh: neither ${hostGlibcAsset()} (Error loading shared library libstdc++.so.6: No such file or directory) nor ${hostMuslAsset} (Error loading shared library libstdc++.so.6: No such file or directory) runs on this machine`,
    );
    expect(code).toBe(1);
    expect(readdirSync(join(prefix, "bin"))).toEqual([]);
  });
});

describe("the release's other builds, run where they can be", () => {
  test("the arm64 build prints its version under qemu-user with Debian's aarch64 glibc", () => {
    const qemu = spawnSync("sh", ["-c", "command -v qemu-aarch64"], { encoding: "utf8" }).stdout.trim();
    const sysroot = "/usr/aarch64-linux-gnu";
    if (!qemu || !existsSync(join(sysroot, "lib/ld-linux-aarch64.so.1"))) {
      if (process.env.CI === "true")
        throw new Error(
          "qemu-aarch64 or the aarch64 libc is missing: scripts/services.sh installs qemu-user and libc6-arm64-cross",
        );
      return console.warn("qemu-user or libc6-arm64-cross is not installed: skipped");
    }
    const run = spawnSync(qemu, ["-L", sysroot, join(releases.a, "kubelet-linux-arm64"), "--version"], {
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(run.stderr).toBe("");
    expect(run.stdout).toStartWith("kubelet v0.1.0 (commit ");
  }, 150_000);

  test("the x64 musl build loads under Debian's musl loader and stops only at libstdc++, the library install.sh asks for", () => {
    if (process.arch !== "x64") return console.warn("the x64 musl build runs on x64 only: skipped");
    if (!existsSync(muslLoader)) {
      if (process.env.CI === "true") throw new Error(`${muslLoader} is missing: scripts/services.sh installs musl`);
      return console.warn("Debian's musl package is not installed: skipped");
    }
    const run = spawnSync(join(releases.a, "kubelet-linux-x64-musl"), ["--version"], { encoding: "utf8" });
    expect(run.status).not.toBe(0);
    const first = run.stderr.split("\n")[0];
    expect(first).toBe(
      `Error loading shared library libstdc++.so.6: No such file or directory (needed by ${join(releases.a, "kubelet-linux-x64-musl")})`,
    );
    // The C library itself (libc.musl-x86_64.so.1) resolved: nothing else is missing.
    expect(run.stderr).not.toContain("Error loading shared library libc");
  });
  test("in a musl root (Debian's musl, a libstdc++ linked against it, busybox), install.sh picks the musl build and it runs", async () => {
    if (process.getuid?.() !== 0) return console.warn("needs root (chroot): skipped");
    const assembled = assembleMuslRoot(join(work, "musl-root"));
    if ("missing" in assembled) {
      if (process.env.CI === "true")
        throw new Error(
          `cannot assemble a musl root: ${assembled.missing} missing (scripts/services.sh installs them)`,
        );
      return console.warn(`cannot assemble a musl root (${assembled.missing} missing): skipped`);
    }
    const musl = assembled.root;
    // Asynchronous: the release server answering busybox's wget runs in this process.
    const chroot = spawnSync("sh", ["-c", "command -v chroot"], { encoding: "utf8" }).stdout.trim();
    const run = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = spawn(
        chroot,
        [musl, "/bin/sh", "-c", `wget -qO- ${url}/a/install.sh | sh -s -- --prefix /opt/kubelet --no-systemd`],
        { env: { PATH: "/bin", KUBELET_BASE_URL: `${url}/a`, DOCKER_HOST: "unix:///nothing.sock" } },
      );
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.on("exit", (status) => resolve({ status, stderr }));
    });
    expect(run.stderr).toContain(`==> install ${url}/a/${hostMuslAsset} as /opt/kubelet/bin/kubelet (musl system)`);
    expect(run.stderr).toContain("kubelet v0.1.0 installed at /opt/kubelet/bin/kubelet");
    expect(run.status).toBe(0);
    const version = spawnSync(chroot, [musl, "/opt/kubelet/bin/kubelet", "--version"], { encoding: "utf8" });
    expect(version.stdout).toStartWith("kubelet v0.1.0 (commit ");
    expect(readFileSync(join(musl, "opt/kubelet/etc/kubelet/config.yaml"), "utf8")).toContain(
      "\nanonymous_auth: false\n",
    );
  }, 120_000);
});

describeWithServices("scripts/install-from-source.sh (the README's first command, from a clone)", (services) => {
  test("builds a release of this checkout and installs it through install.sh, without a unit", () => {
    const prefix = join(work, "from-source");
    const result = spawnSync("bash", ["scripts/install-from-source.sh", "--prefix", prefix], {
      cwd: root,
      encoding: "utf8",
      // A Docker Engine that answers, so --install-docker (its default) has nothing to install.
      env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH}`, DOCKER_HOST: services.dockerHost },
    });
    expect(result.stderr).toContain(`==> install file://${root}/dist/release/kubelet-linux-`);
    expect(result.status).toBe(0);
    expect(versionOf(join(prefix, "bin/kubelet"))).toMatch(/^kubelet v\d+\.\d+\.\d+ \(commit [0-9a-f]+, bun /);
    expect(existsSync(join(prefix, "etc/kubelet/config.yaml"))).toBe(true);
    expect(result.stderr).not.toContain("kubelet.service"); // --no-systemd unless --systemd is given
  }, 120_000);
});
