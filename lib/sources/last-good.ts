// "Keep the last good pod set when a read fails", for every source: a text (a file, a URL's body, an
// etcd value) with a document that does not parse keeps the pods (and ConfigMaps and Secrets) of the
// last text that did, and its rejections say so; mid-edit saves and typos never stop running pods.
import { createHash } from "node:crypto";
import type { ManifestResult } from "../api/manifest.ts";
import { KEEPING } from "./source.ts";

/** What the last text that parsed gave, and that text's digest. */
export interface LastGood extends ManifestResult {
  /**
   * SHA-256 of the text's bytes: a text is only ever compared with the next, so a digest is kept, not a copy
   * (a copy per manifest file and etcd key, held for as long as the kubelet runs).
   */
  digest: string;
}

/** The digest of a text's bytes (sources read bytes, so that strict UTF-8 decoding can name bad bytes). */
const digestOf = (text: string | Uint8Array) => createHash("sha256").update(text).digest("base64");

/** Reads `text` with `parse`; `last` is the previous return's `last` (undefined at first). */
export function readKeepingLastGood<Text extends string | Uint8Array>(
  text: Text,
  last: LastGood | undefined,
  parse: (text: Text) => ManifestResult,
): { snapshot: ManifestResult; last: LastGood | undefined } {
  const digest = digestOf(text);
  if (last?.digest === digest) return { snapshot: last, last };
  const parsed = parse(text);
  const broken = parsed.rejected.some((r) => r.issues.some((i) => i.path === "<document>"));
  if (!broken) return { snapshot: parsed, last: { digest, ...parsed } };
  if (!last) return { snapshot: parsed, last };
  const rejected = parsed.rejected.map((r) => ({
    ...r,
    issues: r.issues.map((i) => ({ ...i, detail: `${i.detail}; ${KEEPING} of its pods` })),
  }));
  return { snapshot: { pods: last.pods, configs: last.configs, rejected }, last };
}
