// --auth_token_file in kube-apiserver's static token format: `token,user,uid,"group1,group2"` per line, or a bare
// token (the 2014 format), which stays accepted as user "kubelet-token-<line>" in group "system:authenticated".
import { KubeletError } from "../../api/types.ts";
import type { UserInfo } from "../authorizer.ts";

/** The group every authenticated caller is in, as the API server adds it. */
export const AUTHENTICATED = "system:authenticated";

/** One token and who it stands for. */
export interface StaticToken {
  token: string;
  user: UserInfo;
}

/** The fields of one CSV line (RFC 4180 quoting: `"a,b"` is one field, `""` inside quotes is one quote). */
function csvFields(line: string): string[] | undefined {
  const fields: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") fields.push(field), (field = "");
    else field += ch;
  }
  if (quoted) return undefined;
  fields.push(field);
  return fields;
}

/** The tokens of a token file's text; `file` names it in errors. */
export function parseTokenFile(text: string, file: string): StaticToken[] {
  const tokens: StaticToken[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    const where = `--auth_token_file "${file}" line ${index + 1}`;
    const fields = csvFields(line)?.map((f) => f.trim());
    if (!fields) throw new KubeletError("InvalidConfig", `${where}: an unterminated quote`);
    const [token, name, uid, groups] = fields as [string, ...string[]];
    if (!token) throw new KubeletError("InvalidConfig", `${where}: the token (first column) is empty`);
    if (seen.has(token)) throw new KubeletError("InvalidConfig", `${where}: the same token appears on an earlier line`);
    seen.add(token);
    if (fields.length === 1) {
      tokens.push({ token, user: { name: `kubelet-token-${index + 1}`, groups: [AUTHENTICATED] } });
      return;
    }
    if (fields.length < 3 || !name)
      throw new KubeletError(
        "InvalidConfig",
        `${where}: expected token,user,uid[,"group1,group2"] (kube-apiserver's format) or a bare token, got ${fields.length} columns`,
      );
    const listed = (groups ?? "")
      .split(",")
      .map((g) => g.trim())
      .filter(Boolean);
    tokens.push({ token, user: { name, ...(uid ? { uid } : {}), groups: withAuthenticated(listed) } });
  });
  return tokens;
}

/** The groups with system:authenticated added once, as the API server's authenticator does. */
export function withAuthenticated(groups: string[]): string[] {
  return groups.includes(AUTHENTICATED) ? groups : [...groups, AUTHENTICATED];
}
