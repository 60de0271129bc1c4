// The admin token: the credential local administration uses now that loopback opens nothing. Generated at start
// when absent (<root_dir>/admin-token unless --admin_token_file names another), mode 0600 so only root reads it;
// it authenticates as user kubelet-admin in group system:masters.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { KubeletError } from "../../api/types.ts";
import type { KubeletConfig } from "../../config/config-types.ts";
import { AUTHENTICATED, type StaticToken } from "./token-file.ts";

export const ADMIN_USER = { name: "kubelet-admin", groups: ["system:masters", AUTHENTICATED] };

/** Where the admin token lives for this configuration. */
export function adminTokenPath(config: Pick<KubeletConfig, "adminTokenFile" | "rootDir">): string {
  return config.adminTokenFile || join(config.rootDir, "admin-token");
}

/** Reads the admin token at `path`, creating it (0600) when absent; refuses one that others may read. */
export async function ensureAdminToken(path: string): Promise<StaticToken> {
  const existing = await stat(path).catch(() => undefined);
  if (!existing) {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const token = randomBytes(32).toString("base64url");
    // "wx": another kubelet that created it first wins; its token is read below.
    await writeFile(path, `${token}\n`, { mode: 0o600, flag: "wx" }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
    await chmod(path, 0o600);
  } else if ((existing.mode & 0o077) !== 0) {
    throw new KubeletError(
      "InvalidConfig",
      `admin token "${path}" is readable by others (mode ${(existing.mode & 0o777).toString(8)}): chmod 600 it, or delete it to have a new one generated`,
    );
  }
  const token = (await readFile(path, "utf8")).trim();
  if (!token)
    throw new KubeletError("InvalidConfig", `admin token "${path}" is empty: delete it to have one generated`);
  return { token, user: ADMIN_USER };
}
