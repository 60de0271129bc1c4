// A list's continue token as k8s.io/apiserver's storage/continue.go writes and reads it: base64url (no padding) of
// {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key after the prefix>"}, so a token from kube-apiserver's client
// libraries' point of view is the same opaque string, and upstream's error wording comes back for a bad one.

/** The key prefix and revision a token resumes from. */
export interface ContinueFrom {
  /** The full key to start at (inclusive): the prefix and the token's start. */
  fromKey: string;
  /** The list's revision; -1 (as upstream writes for an inconsistent remainder) means "the newest". */
  rv: number;
}

/** A token upstream's DecodeContinue refuses; the route answers 400 `invalid continue token: <message>`. */
export class ContinueTokenError extends Error {
  readonly code = "InvalidContinueToken";
}

const GENERIC = "continue key is not valid";

/** etcd3's errors.go: the 410 for a continue token whose revision is gone (compacted, or a snapshot no longer kept). */
export const INCONSISTENT_CONTINUE =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without " +
  "the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
  "Continuing with the provided token results in an inconsistent list - objects that were created, modified, or " +
  "deleted between the time the first chunk was returned and now may show up in the list.";

/** encoding/json escapes these in strings (HTML-safe), so the token's bytes match a Go server's. */
const GO_ESCAPES: Record<string, string> = { "<": "\\u003c", ">": "\\u003e", "&": "\\u0026" };

/** storage.EncodeContinue: `key` must start with `keyPrefix`. */
export function encodeContinue(key: string, keyPrefix: string, rv: number): string {
  if (!key.startsWith(keyPrefix) || key === keyPrefix)
    throw new Error(`unable to encode next field: the key and key prefix do not match ${keyPrefix} ${key}`);
  const json = JSON.stringify({ v: "meta.k8s.io/v1", rv, start: key.slice(keyPrefix.length) }).replace(
    /[<>&\u2028\u2029]/g,
    (c) => GO_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16)}`,
  );
  return Buffer.from(json, "utf8").toString("base64url");
}

/** base64.RawURLEncoding.DecodeString's strictness: the URL alphabet, no padding, no dangling 6 bits. */
function rawUrlDecode(text: string): string {
  const bad = text.search(/[^A-Za-z0-9_-]/);
  if (bad >= 0) throw new ContinueTokenError(`${GENERIC}: illegal base64 data at input byte ${bad}`);
  if (text.length % 4 === 1)
    throw new ContinueTokenError(`${GENERIC}: illegal base64 data at input byte ${text.length - 1}`);
  return Buffer.from(text, "base64url").toString("utf8");
}

/** Whether path.Clean leaves `key` as it is (no `.`/`..` segments, no doubled or trailing slashes). */
function isClean(key: string): boolean {
  if (key === "/") return true;
  if (key.endsWith("/")) return false;
  return key
    .slice(1)
    .split("/")
    .every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

/** storage.DecodeContinue: the key to start at and the revision, or a ContinueTokenError in upstream's words. */
export function decodeContinue(token: string, keyPrefix: string): ContinueFrom {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawUrlDecode(token));
  } catch (error) {
    if (error instanceof ContinueTokenError) throw error;
    throw new ContinueTokenError(`${GENERIC}: ${(error as Error).message}`);
  }
  const { v, rv, start } = (parsed ?? {}) as { v?: unknown; rv?: unknown; start?: unknown };
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new ContinueTokenError(
      `${GENERIC}: json: cannot unmarshal ${typeof parsed} into Go value of type continueToken`,
    );
  if (v !== "meta.k8s.io/v1")
    throw new ContinueTokenError(
      `${GENERIC}: server does not recognize this encoded version ${typeof v === "string" ? v : ""}`,
    );
  if (rv !== undefined && !Number.isSafeInteger(rv))
    throw new ContinueTokenError(
      `${GENERIC}: json: cannot unmarshal ${JSON.stringify(rv)} into Go struct field continueToken.rv of type int64`,
    );
  if (!rv) throw new ContinueTokenError(`${GENERIC}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)`);
  if (typeof start !== "string" || start === "")
    throw new ContinueTokenError(`${GENERIC}: encoded start key empty (version meta.k8s.io/v1)`);
  // Upstream's defence against a token ranging outside its prefix: the start key must already be a clean path.
  const key = start.startsWith("/") ? start : `/${start}`;
  if (!isClean(key)) throw new ContinueTokenError(`${GENERIC}: ${start}`);
  return { fromKey: keyPrefix + key.slice(1), rv: rv as number };
}
