// The `fieldSelector` and `labelSelector` of a list or watch, parsed and matched as the API server does: field
// selectors `a=b`, `a==b`, `a!=b` over the fields a resource supports (any other is a 400 naming it), label
// selectors with =, ==, !=, in, notin, key and !key.
import { httpError } from "../server-support.ts";

/** A parsed selector: true when the object matches. */
export type Selector<T> = (object: T) => boolean;

/**
 * The field selector `text` over `fields` (field name → the object's value); undefined when none is given.
 * An unknown field is refused with upstream's `field label not supported: <name>`.
 */
export function fieldSelector<T>(
  text: string | undefined,
  fields: Record<string, (object: T) => string | undefined>,
): Selector<T> | undefined {
  if (!text) return undefined;
  const terms = text.split(",").map((term) => {
    const match = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!match) throw httpError(400, `invalid field selector: "${term}": give field=value or field!=value`);
    const [, field, op, value] = match as unknown as [string, string, string, string];
    const read = fields[field];
    if (!read) throw httpError(400, `field label not supported: ${field}`);
    return (object: T) => ((read(object) ?? "") === value) === (op !== "!=");
  });
  return (object) => terms.every((term) => term(object));
}

/** The label selector `text`; undefined when none is given. */
export function labelSelector<T extends { metadata?: { labels?: Record<string, string> } }>(
  text: string | undefined,
): Selector<T> | undefined {
  if (!text?.trim()) return undefined;
  const terms: Array<(labels: Record<string, string>) => boolean> = [];
  // Commas inside `in (a,b)` do not separate terms.
  for (const term of text.match(/[^,(]+(\([^)]*\))?/g) ?? []) {
    const set = /^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$/.exec(term);
    if (set) {
      const [, key, op, list] = set as unknown as [string, string, string, string];
      const values = new Set(list.split(",").map((v) => v.trim()));
      terms.push((labels) => (key in labels && values.has(labels[key]!)) === (op === "in"));
      continue;
    }
    const compare = /^\s*([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)\s*$/.exec(term);
    if (compare) {
      const [, key, op, value] = compare as unknown as [string, string, string, string];
      terms.push((labels) => (op === "!=" ? labels[key] !== value : labels[key] === value));
      continue;
    }
    const exists = /^\s*(!?)\s*([\w./-]+)\s*$/.exec(term);
    if (!exists) throw httpError(400, `unable to parse requirement: invalid label selector "${term.trim()}"`);
    const [, not, key] = exists as unknown as [string, string, string];
    terms.push((labels) => key in labels !== (not === "!"));
  }
  return (object) => terms.every((term) => term(object.metadata?.labels ?? {}));
}

/** The objects matching every selector given. */
export function select<T>(objects: T[], ...selectors: Array<Selector<T> | undefined>): T[] {
  const given = selectors.filter((s): s is Selector<T> => s !== undefined);
  return given.length ? objects.filter((o) => given.every((s) => s(o))) : objects;
}
