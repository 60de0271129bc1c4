// Label and field selectors as k8s.io/apimachinery parses them (labels.Parse, fields.ParseSelector): the full
// label grammar (=, ==, !=, in, notin, exists, !exists, gt, lt) and field terms (=, ==, !=) over the fields a
// resource makes selectable. Bad input is a 400 naming the term, as kube-apiserver answers it. Every resource's
// list filters with these, through fieldSelector/labelSelector/select below or the parsed selectors directly.
import { badRequest } from "./api-status.ts";

/** One parsed label requirement (labels.Requirement). */
export interface LabelRequirement {
  key: string;
  operator: "=" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";
  values: string[];
}

/** A parsed selector: an empty one matches everything. */
export interface Selector<T> {
  requirements: T[];
  matches(values: Readonly<Record<string, string>> | undefined): boolean;
}

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, text: string): void {
  const name = key.includes("/") ? key.slice(key.indexOf("/") + 1) : key;
  if (!KEY.test(key) || name.length > 63)
    throw badRequest(
      `unable to parse requirement: key: Invalid value: "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (in label selector "${text}")`,
    );
}

function checkValue(value: string, text: string): void {
  if (!VALUE.test(value) || value.length > 63)
    throw badRequest(
      `unable to parse requirement: values[0]: Invalid value: "${value}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (in label selector "${text}")`,
    );
}

/** Splits on commas outside parentheses. */
function terms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(current);
      current = "";
    } else current += ch;
  }
  out.push(current);
  return out.map((t) => t.trim());
}

/** labels.Parse: the label selector grammar. */
export function parseLabelSelector(text: string): Selector<LabelRequirement> {
  const requirements: LabelRequirement[] = [];
  if (text.trim() !== "")
    for (const term of terms(text)) {
      let match: RegExpExecArray | null;
      if (term === "")
        throw badRequest(`unable to parse requirement: found '', expected: identifier (in label selector "${text}")`);
      if ((match = /^!\s*(\S+)$/.exec(term))) {
        checkKey(match[1]!, text);
        requirements.push({ key: match[1]!, operator: "!", values: [] });
      } else if ((match = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term))) {
        checkKey(match[1]!, text);
        const values = match[3]!.split(",").map((v) => v.trim());
        for (const v of values) checkValue(v, text);
        requirements.push({ key: match[1]!, operator: match[2] as "in" | "notin", values });
      } else if ((match = /^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(\S*)$/.exec(term))) {
        const [, key, op, value] = match as unknown as [string, string, string, string];
        checkKey(key, text);
        if (op === ">" || op === "<") {
          if (!/^-?\d+$/.test(value))
            throw badRequest(
              `unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer (in label selector "${text}")`,
            );
          requirements.push({ key, operator: op === ">" ? "gt" : "lt", values: [value] });
        } else {
          checkValue(value, text);
          requirements.push({ key, operator: op === "!=" ? "!=" : "=", values: [value] });
        }
      } else if (/^\S+$/.test(term) && !/[=!<>()]/.test(term)) {
        checkKey(term, text);
        requirements.push({ key: term, operator: "exists", values: [] });
      } else {
        throw badRequest(
          `unable to parse requirement: "${term}" is not a label requirement (in label selector "${text}")`,
        );
      }
    }
  return {
    requirements,
    matches: (labels) => requirements.every((r) => labelMatches(r, labels ?? {})),
  };
}

function labelMatches(r: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.operator) {
    case "=":
    case "in":
      return has && r.values.includes(value!);
    case "!=":
    case "notin":
      return !has || !r.values.includes(value!);
    case "exists":
      return has;
    case "!":
      return !has;
    case "gt":
    case "lt": {
      if (!has || !/^-?\d+$/.test(value!)) return false;
      return r.operator === "gt" ? Number(value) > Number(r.values[0]) : Number(value) < Number(r.values[0]);
    }
  }
}

/** One field term (fields.Requirement). */
export interface FieldRequirement {
  field: string;
  operator: "=" | "!=";
  value: string;
}

/** fields.ParseSelector's unescaping: `\,` `\=` `\\`. */
function splitEscaped(text: string, separator: string): string[] {
  const out: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\\" && i + 1 < text.length) {
      current += ch + text[++i];
    } else if (ch === separator) {
      out.push(current);
      current = "";
    } else current += ch;
  }
  out.push(current);
  return out;
}

const unescape = (text: string) => text.replace(/\\(.)/g, "$1");

/** fields.ParseSelector, then each field checked against the resource's selectable fields. */
export function parseFieldSelector(text: string, selectable: readonly string[]): Selector<FieldRequirement> {
  const requirements: FieldRequirement[] = [];
  if (text.trim() !== "")
    for (const term of splitEscaped(text, ",")) {
      const match = /^((?:[^=!\\]|\\.)*?)\s*(==|=|!=)\s*((?:[^\\]|\\.)*)$/.exec(term.trim());
      if (!match) throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
      const field = match[1]!.trim();
      if (!selectable.includes(field)) throw badRequest(`field label not supported: ${field}`);
      requirements.push({ field, operator: match[2] === "!=" ? "!=" : "=", value: unescape(match[3]!) });
    }
  return {
    requirements,
    matches: (fields) => requirements.every((r) => ((fields ?? {})[r.field] === r.value) === (r.operator === "=")),
  };
}

/** A filter over one resource's objects: true when the object matches. */
export type ObjectFilter<T> = (object: T) => boolean;

/**
 * The `fieldSelector` query parameter over `fields` (field name → the object's value); undefined when none is
 * given. A field not in `fields` is refused as parseFieldSelector refuses it.
 */
export function fieldSelector<T>(
  text: string | undefined,
  fields: Record<string, (object: T) => string | undefined>,
): ObjectFilter<T> | undefined {
  if (!text?.trim()) return undefined;
  const parsed = parseFieldSelector(text, Object.keys(fields));
  return (object) =>
    parsed.matches(Object.fromEntries(parsed.requirements.map((r) => [r.field, fields[r.field]!(object) ?? ""])));
}

/** The `labelSelector` query parameter over the objects' metadata.labels; undefined when none is given. */
export function labelSelector<T extends { metadata?: { labels?: Record<string, string> } }>(
  text: string | undefined,
): ObjectFilter<T> | undefined {
  if (!text?.trim()) return undefined;
  const parsed = parseLabelSelector(text);
  return (object) => parsed.matches(object.metadata?.labels);
}

/** The objects matching every filter given. */
export function select<T>(objects: T[], ...filters: Array<ObjectFilter<T> | undefined>): T[] {
  const given = filters.filter((f): f is ObjectFilter<T> => f !== undefined);
  return given.length ? objects.filter((o) => given.every((f) => f(o))) : objects;
}
