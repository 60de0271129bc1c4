// The continue token of a chunked list, byte for byte as k8s.io/apiserver's storage.EncodeContinue and
// DecodeContinue write and read it: unpadded base64url of {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key>"},
// the key relative to the list's prefix, so a token kube-apiserver or another node issued reads the same here.

/** The only encoded version upstream knows. */
export const CONTINUE_VERSION = "meta.k8s.io/v1";

/** A decoded token: where the next page starts (inclusive) and the revision the first page was read at. */
export interface ContinueToken {
  /** The key the next page starts at, relative to the list's prefix (the last key sent, then "\u0000"). */
  start: string;
  /** The snapshot's revision; negative (-1) asks for the current state (the "inconsistent" continuation). */
  revision: number;
}

/** Why a token was refused, in DecodeContinue's words (the caller adds "invalid continue token: "). */
export interface ContinueTokenError {
  code: "InvalidContinue";
  message: string;
}

const GENERIC = "continue key is not valid";

function invalidToken(message: string): Error & ContinueTokenError {
  return Object.assign(new Error(message), { code: "InvalidContinue" as const });
}

/**
 * storage.EncodeContinue: the token of a list read at `revision` that resumes at `start` (upstream passes the last
 * key sent followed by "\u0000", the first key after it).
 */
export function encodeContinue(start: string, revision: number): string {
  const json = JSON.stringify({ v: CONTINUE_VERSION, rv: revision, start });
  return Buffer.from(json, "utf8").toString("base64url");
}

/** Go's base64.RawURLEncoding.DecodeString, with its error for the first byte it cannot read. */
function rawUrlBase64(text: string): string {
  const bad = /[^A-Za-z0-9_-]/.exec(text);
  if (bad) throw invalidToken(`${GENERIC}: illegal base64 data at input byte ${bad.index}`);
  if (text.length % 4 === 1) throw invalidToken(`${GENERIC}: illegal base64 data at input byte ${text.length - 1}`);
  return Buffer.from(text, "base64url").toString("utf8");
}

/** Go's path.Clean for an absolute path: no empty, "." or ".." elements, no trailing slash. */
function cleanPath(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}

/** storage.DecodeContinue: the token's start key and revision; throws a ContinueTokenError in upstream's words. */
export function decodeContinue(token: string): ContinueToken {
  const json = rawUrlBase64(token);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw invalidToken(`${GENERIC}: ${(error as Error).message}`);
  }
  const { v, rv, start } = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if ((rv !== undefined && !Number.isSafeInteger(rv)) || (start !== undefined && typeof start !== "string"))
    throw invalidToken(`${GENERIC}: the token's "rv" must be an integer and "start" a string`);
  if (v !== CONTINUE_VERSION)
    throw invalidToken(`${GENERIC}: server does not recognize this encoded version ${String(v ?? "")}`);
  if (!rv) throw invalidToken(`${GENERIC}: incorrect encoded start resourceVersion (version ${CONTINUE_VERSION})`);
  if (!start) throw invalidToken(`${GENERIC}: encoded start key empty (version ${CONTINUE_VERSION})`);
  // As upstream: a start key that path.Clean would change could range outside the list's prefix.
  const key = start.startsWith("/") ? start : `/${start}`;
  if (cleanPath(key) !== key) throw invalidToken(`${GENERIC}: ${start}`);
  return { start: key.slice(1), revision: rv as number };
}
