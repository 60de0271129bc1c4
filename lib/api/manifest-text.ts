// Checks on manifest bytes before any YAML parsing: the size limit, UTF-8, and flow-collection
// nesting (the yaml parser recurses per `[`/`{`, so 10,000 of them overflow the stack).
import type { FieldIssue } from "./types.ts";

/** The largest manifest document the kubelet reads from any source (the URL source's historic limit). */
export const DEFAULT_MAX_MANIFEST_BYTES = 10 * 2 ** 20;

/** Deepest nesting of maps and lists accepted; a Pod needs about 10, a List of Pods 12. */
export const MAX_MANIFEST_DEPTH = 100;

/** Manifest text, or the issue that stops it from being parsed at all. */
export type DecodedText = { text: string } | { issue: FieldIssue };

/**
 * Size-checks and decodes manifest bytes (or an already decoded string) strictly as UTF-8, and
 * refuses flow collections nested deeper than MAX_MANIFEST_DEPTH.
 */
export function decodeManifestText(input: string | Uint8Array, maxBytes: number): DecodedText {
  const size = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (size > maxBytes) return { issue: tooLarge(size, maxBytes) };
  let text: string;
  if (typeof input === "string") text = input;
  else {
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      const lenient = new TextDecoder("utf-8").decode(input);
      const { line, col } = lineCol(lenient, Math.max(0, lenient.indexOf("\uFFFD")));
      return {
        issue: unparsable(
          line,
          col,
          "invalid UTF-8 byte sequence: manifests must be UTF-8 text (convert the file, e.g. iconv -t UTF-8)",
        ),
      };
    }
  }
  const deep = flowDepthOverflow(text, MAX_MANIFEST_DEPTH);
  if (deep !== undefined) {
    const { line, col } = lineCol(text, deep);
    return { issue: tooDeep(line, col) };
  }
  return { text };
}

/** The issue for a manifest over the size limit, in Kubernetes' "Too long" wording. */
export function tooLarge(size: number | undefined, maxBytes: number): FieldIssue {
  return {
    path: "<document>",
    type: "Too long",
    detail: `may not be more than ${maxBytes} bytes${size === undefined ? "" : ` (it has ${size})`}: split it into several manifests or raise --max_manifest_bytes`,
    severity: "error",
  };
}

/** The issue for nesting deeper than MAX_MANIFEST_DEPTH. */
export function tooDeep(line: number, col: number): FieldIssue {
  return unparsable(
    line,
    col,
    `nested more than ${MAX_MANIFEST_DEPTH} levels deep: a pod manifest needs about 10; remove the extra nesting`,
  );
}

/** The issue for a document that cannot be parsed, with its 1-based line and column. */
export function unparsable(line: number, col: number, reason: string): FieldIssue {
  return {
    path: "<document>",
    type: "Invalid value",
    detail: `cannot parse YAML/JSON at line ${line}, column ${col}: ${reason}`,
    severity: "error",
  };
}

/** A YAML parse error as the parser reports it: a code, the offsets it spans, a message. */
export interface YamlError {
  code: string;
  pos: [number, number];
  message: string;
}

/**
 * Where the first of a document's YAML errors really is, and why, in an operator's words. The parser
 * puts an indentation error at the start of its line (column 1, in the indentation), and a key indented
 * deeper than its siblings at the value before it (a line early): both move to the text that is wrong.
 */
export function yamlErrorPlace(text: string, errors: YamlError[]): { offset: number; reason: string } {
  const deeper = errors.find((e) => e.code === "MULTILINE_IMPLICIT_KEY");
  const newline = deeper ? text.lastIndexOf("\n", deeper.pos[1] - 1) : -1;
  if (deeper && newline >= deeper.pos[0])
    return {
      offset: firstNonBlank(text, newline + 1),
      reason: "this key is indented deeper than the keys above it: align it with them",
    };
  const first = errors[0]!;
  return {
    offset: firstNonBlank(text, first.pos[0]),
    reason: first.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, ""),
  };
}

/** The offset of the first character at or after `offset` on its line that is not a space or a tab. */
function firstNonBlank(text: string, offset: number): number {
  let i = offset;
  while (text[i] === " " || text[i] === "\t") i++;
  return text[i] === "\n" || i >= text.length ? offset : i;
}

/** 1-based line and column of a string offset. */
export function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, col: offset - start + 1 };
}

/**
 * Offset of the first `[` or `{` that opens a flow collection deeper than `limit`, or undefined.
 * Quoted strings and comments are skipped; a quote only opens a string where YAML allows one
 * (after a space or an indicator), so `it's` in a plain scalar does not derail the scan.
 */
function flowDepthOverflow(text: string, limit: number): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    const prev = i === 0 ? "\n" : text[i - 1]!;
    if (ch === "[" || ch === "{") {
      if (++depth > limit) return i;
    } else if (ch === "]" || ch === "}") {
      if (depth > 0) depth--;
    } else if (ch === "#" && /\s/.test(prev)) {
      const end = text.indexOf("\n", i);
      i = end === -1 ? text.length : end;
    } else if ((ch === '"' || ch === "'") && /[\s[{,:-]/.test(prev)) {
      i = closingQuote(text, i);
    }
  }
  return undefined;
}

function closingQuote(text: string, open: number): number {
  const quote = text[open];
  for (let i = open + 1; i < text.length; i++) {
    if (quote === '"' && text[i] === "\\") i++;
    else if (text[i] === quote) {
      if (quote === "'" && text[i + 1] === "'") i++;
      else return i;
    }
  }
  return text.length;
}
