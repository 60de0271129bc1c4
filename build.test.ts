import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compile } from "./build.ts";

test("the executable holds each part loaded by import() in a chunk of its own, and the build leaves only the executable", () => {
  const out = mkdtempSync(join(tmpdir(), "kubelet-build-"));
  try {
    const binary = join(out, "kubelet");
    compile(binary, undefined, "0.0.1", "test");
    expect(readdirSync(out)).toEqual(["kubelet"]);
    // The info server (imported by `run` only) is a chunk of its own inside the executable: `runonce` and
    // `--version` do not load its bytecode.
    expect(readFileSync(binary).includes("/$bunfs/root/info-server-")).toBe(true);
    const version = Bun.spawnSync([binary, "--version"]);
    expect(version.stdout.toString()).toStartWith("kubelet v0.0.1 (commit test,");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
