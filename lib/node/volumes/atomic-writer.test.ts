import { describe, expect, test } from "bun:test";
import { lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAtomically, type VolumeFile } from "./atomic-writer.ts";

const files = (entries: Record<string, string | [string, number]>) =>
  new Map<string, VolumeFile>(
    Object.entries(entries).map(([path, value]) => [
      path,
      typeof value === "string"
        ? { data: Buffer.from(value), mode: 0o644 }
        : { data: Buffer.from(value[0]), mode: value[1] },
    ]),
  );

describe("atomic writer", () => {
  test("files live in a timestamped directory behind a ..data symlink; visible names link through ..data", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-atomic-"));
    expect(await writeAtomically(dir, files({ a: "1", "conf/b": ["2", 0o400] }))).toBe(true);
    const version = readlinkSync(join(dir, "..data"));
    expect(version).toMatch(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\./);
    expect(readlinkSync(join(dir, "a"))).toBe("..data/a");
    expect(readlinkSync(join(dir, "conf"))).toBe("..data/conf");
    expect(readFileSync(join(dir, "conf/b"), "utf8")).toBe("2");
    expect(statSync(join(dir, "conf/b")).mode & 0o777).toBe(0o400);
    expect(statSync(join(dir, "a")).mode & 0o777).toBe(0o644);
  });

  test("an unchanged payload touches nothing; a change swaps versions and removes the old one and stale names", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-atomic-"));
    await writeAtomically(dir, files({ a: "1", b: "2" }));
    const first = readlinkSync(join(dir, "..data"));
    expect(await writeAtomically(dir, files({ a: "1", b: "2" }))).toBe(false);
    expect(readlinkSync(join(dir, "..data"))).toBe(first);
    expect(await writeAtomically(dir, files({ a: "1", b: ["2", 0o600] }))).toBe(true);
    expect(await writeAtomically(dir, files({ a: "changed" }))).toBe(true);
    const now = readlinkSync(join(dir, "..data"));
    expect(now).not.toBe(first);
    expect(readFileSync(join(dir, "a"), "utf8")).toBe("changed");
    expect(readdirSync(dir).sort()).toEqual(["..data", "a", now].sort());
    expect(lstatSync(join(dir, "..data")).isSymbolicLink()).toBe(true);
  });
});
