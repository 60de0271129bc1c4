import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseYaml, readManifests, stringifyYaml } from "./manifest.ts";
import { formatIssue, type FieldIssue } from "./types.ts";
import { validatePod } from "./validation.ts";

const VALID = join(import.meta.dir, "../../testdata/manifests/valid");
/** The valid manifests of the table, as plain values to mutate. */
const seeds = readdirSync(VALID)
  .filter((f) => /\.(ya?ml|json)$/.test(f))
  .flatMap((f) => {
    try {
      return [parseYaml(readFileSync(join(VALID, f), "utf8"))];
    } catch {
      return []; // multi-document files: the text mutations below cover them
    }
  })
  .filter((v) => v !== null && typeof v === "object");

type Path = Array<string | number>;

function paths(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value !== null && typeof value === "object")
    for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

type Mutation = { at: number; kind: "replace" | "delete" | "wrap" | "stringify"; value: unknown };

function mutate(seed: unknown, mutations: Mutation[]): unknown {
  let root = structuredClone(seed);
  for (const m of mutations) {
    const all = paths(root);
    const path = all[m.at % all.length]!;
    if (path.length === 0) {
      root = m.kind === "replace" ? m.value : root;
      continue;
    }
    const parent = path.slice(0, -1).reduce((v: any, k) => v[k], root) as any;
    const key = path[path.length - 1]!;
    if (m.kind === "delete") Array.isArray(parent) ? parent.splice(key as number, 1) : delete parent[key];
    else if (m.kind === "wrap") parent[key] = [parent[key]];
    else if (m.kind === "stringify") parent[key] = String(parent[key]);
    else parent[key] = m.value;
  }
  return root;
}

const mutation = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom("replace", "delete", "wrap", "stringify"),
  value: fc.oneof(
    fc.anything({ maxDepth: 3 }),
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.constant(null),
    fc.constantFrom("__proto__", "constructor", "", "0", "true", "Always", "/", "/proc", "..", "80"),
  ),
}) as fc.Arbitrary<Mutation>;

/** Everything the kubelet concludes about a manifest text: rejections and each pod's issues. */
function verdict(text: string): FieldIssue[] {
  const { pods, rejected } = readManifests(text, { source: "file", origin: "fuzz.yaml" });
  return [
    ...rejected.flatMap((r) => r.issues),
    ...pods.flatMap((p) => validatePod(p, { allowPrivileged: false, allowSensitiveHostPaths: false })),
  ];
}

function wellFormed(issues: FieldIssue[]): void {
  for (const issue of issues) {
    expect(issue.path.length).toBeGreaterThan(0);
    expect(issue.type.length).toBeGreaterThan(0);
    expect(["error", "warning"]).toContain(issue.severity);
    expect(formatIssue(issue)).not.toMatch(/call stack|TypeError|RangeError|ReferenceError|undefined is not/);
  }
}

describe("the parser and validator under mutated manifests", () => {
  test("never throw, give every issue a field path, and reach the same verdict twice (3,000 mutants)", () => {
    fc.assert(
      fc.property(
        fc.nat({ max: seeds.length - 1 }),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        (seed, mutations, asYaml) => {
          const mutant = mutate(seeds[seed], mutations);
          // A mutant may be `undefined` itself, which neither serialiser turns into text.
          const text = (asYaml ? stringifyYaml(mutant) : JSON.stringify(mutant)) ?? "null";
          const first = verdict(text);
          wellFormed(first);
          expect(verdict(text).map(formatIssue)).toEqual(first.map(formatIssue));
        },
      ),
      // endOnFailure: shrinking a mutant of a whole pod takes minutes; the counterexample is printed as found.
      { numRuns: 3000, endOnFailure: true },
    );
  }, 120_000);

  test("damaged text never throws and every parse error gives a line and column (2,000 mutants)", () => {
    const texts = readdirSync(VALID)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .map((f) => readFileSync(join(VALID, f), "utf8"));
    fc.assert(
      fc.property(
        fc.nat({ max: texts.length - 1 }),
        fc.array(fc.record({ at: fc.nat(), cut: fc.nat({ max: 8 }), insert: fc.string({ maxLength: 6 }) }), {
          minLength: 1,
          maxLength: 5,
        }),
        (index, edits) => {
          let text = texts[index]!;
          for (const e of edits) {
            const at = e.at % (text.length + 1);
            text = text.slice(0, at) + e.insert + text.slice(at + e.cut);
          }
          const issues = verdict(text);
          wellFormed(issues);
          for (const issue of issues.filter((i) => i.path === "<document>" && i.detail?.startsWith("cannot parse")))
            expect(issue.detail).toMatch(/^cannot parse YAML\/JSON at line \d+, column \d+: /);
        },
      ),
      { numRuns: 2000, endOnFailure: true },
    );
  }, 120_000);
});
