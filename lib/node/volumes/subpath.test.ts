// subPath and subPathExpr on a real directory: expansion, the checks, and a symlink that escapes its volume.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expandSubPath, subPathHostPaths } from "./subpath.ts";

const dir = mkdtempSync(join(tmpdir(), "subpath-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const volumes = new Map([["data", { hostPath: dir }]]);
const env = new Map([
  ["POD_NAME", "web-0"],
  ["EMPTY", ""],
]);
const refusal = (mount: object) =>
  subPathHostPaths({ name: "app", volumeMounts: [{ name: "data", mountPath: "/d", ...mount }] }, env, volumes).then(
    () => undefined,
    (e: Error & { code: string }) => `${e.code}: ${e.message}`,
  );

test("subPathExpr expands the container's variables; one without a value is an error", () => {
  expect(expandSubPath("logs/$(POD_NAME)", env)).toBe("logs/web-0");
  expect(() => expandSubPath("$(EMPTY)/$(NOPE)", env)).toThrow("missing value for EMPTY, NOPE");
});

test("the expanded directory is created inside the volume and mounted from there", async () => {
  const paths = await subPathHostPaths(
    { name: "app", volumeMounts: [{ name: "data", mountPath: "/logs", subPathExpr: "logs/$(POD_NAME)" }] },
    env,
    volumes,
  );
  expect(paths.get("/logs")).toBe(join(dir, "logs/web-0"));
  expect(statSync(join(dir, "logs/web-0")).isDirectory()).toBe(true);
});

test("an absolute path, '..' after expansion and a symlink out of the volume are refused", async () => {
  expect(await refusal({ subPathExpr: "/$(POD_NAME)" })).toBe(
    "CreateContainerConfigError: error SubPath `/web-0` must not be an absolute path",
  );
  expect(await refusal({ subPath: "a/../../etc" })).toBe(
    "CreateContainerConfigError: unable to provision SubPath `a/../../etc`: must not contain '..'",
  );
  symlinkSync("/etc", join(dir, "escape"));
  expect(await refusal({ subPath: "escape" })).toMatch(/resolves outside its volume/);
});
