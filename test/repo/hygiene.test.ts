// The repository's own checks, run in `npm test`: the code type-checks and is formatted as
// biome.json says (`npm run fmt` fixes the latter).
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const bin = (name: string) => join(root, "node_modules/.bin", name);

test("the code type-checks with no errors (tsc --noEmit)", () => {
  const result = spawnSync(bin("tsc"), ["--noEmit", "-p", root], { cwd: root, encoding: "utf8" });
  expect(result.stdout + result.stderr).toBe("");
  expect(result.status).toBe(0);
});

test("the code is formatted as biome.json says (npm run fmt)", () => {
  const result = spawnSync(bin("biome"), ["format", "--reporter=summary", "."], { cwd: root, encoding: "utf8" });
  expect(result.status === 0 ? "" : result.stdout + result.stderr).toBe("");
});
