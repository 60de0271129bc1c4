// "Keep the last good pod set when a read fails", for every source: a text (a file, a URL's body, an
// etcd value) with a document that does not parse keeps the pods (and ConfigMaps and Secrets) of the
// last text that did, and its rejections say so; mid-edit saves and typos never stop running pods.
import type { ManifestResult } from "../api/manifest.ts";
import { KEEPING } from "./source.ts";

/** The last text that parsed, with what it gave. */
export interface LastGood extends ManifestResult {
  text: string | Uint8Array;
}

/** Byte-for-byte the same text (sources read bytes, so that strict UTF-8 decoding can name bad bytes). */
function sameText(a: string | Uint8Array, b: string | Uint8Array): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  return Buffer.compare(a, b) === 0;
}

/** Reads `text` with `parse`; `last` is the previous return's `last` (undefined at first). */
export function readKeepingLastGood<Text extends string | Uint8Array>(
  text: Text,
  last: LastGood | undefined,
  parse: (text: Text) => ManifestResult,
): { snapshot: ManifestResult; last: LastGood | undefined } {
  if (last && sameText(last.text, text)) return { snapshot: last, last };
  const parsed = parse(text);
  const broken = parsed.rejected.some((r) => r.issues.some((i) => i.path === "<document>"));
  if (!broken) return { snapshot: parsed, last: { text, ...parsed } };
  if (!last) return { snapshot: parsed, last };
  const rejected = parsed.rejected.map((r) => ({
    ...r,
    issues: r.issues.map((i) => ({ ...i, detail: `${i.detail}; ${KEEPING} of its pods` })),
  }));
  return { snapshot: { pods: last.pods, configs: last.configs, rejected }, last };
}
