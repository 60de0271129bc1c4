import { afterAll, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminTokenPath, ensureAdminToken } from "./admin-token.ts";

const dir = mkdtempSync(join(tmpdir(), "admin-token-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the admin token is created 0600 under the root dir and read back unchanged on the next start", async () => {
  const path = adminTokenPath({ adminTokenFile: "", rootDir: join(dir, "root") });
  expect(path).toBe(join(dir, "root", "admin-token"));
  const first = await ensureAdminToken(path);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(first.token).toMatch(/^[\w-]{43}$/);
  expect(readFileSync(path, "utf8").trim()).toBe(first.token);
  expect(first.user).toEqual({ name: "kubelet-admin", groups: ["system:masters", "system:authenticated"] });
  expect((await ensureAdminToken(path)).token).toBe(first.token);
});

test("an admin token others may read is refused, naming the file and its mode", async () => {
  const path = join(dir, "open-token");
  writeFileSync(path, "abc\n");
  chmodSync(path, 0o644);
  await expect(ensureAdminToken(path)).rejects.toThrow(`admin token "${path}" is readable by others (mode 644)`);
});

test("--admin_token_file names another place", () => {
  expect(adminTokenPath({ adminTokenFile: "/etc/kubelet/admin", rootDir: "/var/lib/kubelet" })).toBe(
    "/etc/kubelet/admin",
  );
});
