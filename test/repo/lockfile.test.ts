// The lock file installs on every platform: `npm ci` refuses a lock that lacks an optional
// dependency of a locked package ("Missing: @deno/darwin-arm64@ from lock file"), even one for
// another OS. npm drops such entries when the registry lacks that exact version, so the pins in
// package.json must name versions whose platform packages all exist.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
}

const root = join(import.meta.dir, "../..");
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
};

/** Where npm looks up `name` for the package at `path`: its own node_modules, then each parent's. */
function resolve(path: string, name: string): LockEntry | undefined {
  for (let dir = path; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf("/node_modules/")))) {
    const entry = lock.packages[`${dir ? `${dir}/` : ""}node_modules/${name}`];
    if (entry || !dir) return entry;
  }
}

test("the lock file lists every optional dependency of every locked package, for all platforms", () => {
  expect(lock.lockfileVersion).toBeGreaterThanOrEqual(2);
  const missing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
      const found = resolve(path, name);
      if (!found) missing.push(`${name}@${range} (wanted by ${path || "the root"})`);
    }
  }
  expect(missing).toEqual([]);
});
