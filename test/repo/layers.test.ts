// The layer rule, enforced: it is read from the table in docs/architecture.md#layers (written once, there),
// and every import of every TypeScript file in lib/ must stay in its row or point to a row that row may import.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";

const root = join(import.meta.dir, "../..");
const DOC = "docs/architecture.md";

/** One row of the table: its name, the folders and files it holds, the rows it may import. */
interface Row {
  name: string;
  /** `lib/x/` (the folder and all below it), `lib/x/*.ts` (the folder's own files) or `lib/x.ts`. */
  entries: string[];
  mayImport: string[];
}

/** The rows of the first table under `## Layers`, lowest first; throws on a word its last column does not know. */
function readLayerTable(markdown: string): Row[] {
  const section = markdown.split(/^## Layers\n/m)[1]?.split(/^## /m)[0];
  if (section === undefined) throw new Error(`${DOC} has no "## Layers" section`);
  const lines = section.split("\n").filter((line) => line.startsWith("|"));
  const cells = lines.slice(2).map((line) =>
    line
      .split("|")
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
  const names = cells.map(([name]) => name!.replace(/`/g, ""));
  return cells.map(([, places = "", may = ""], index) => ({
    name: names[index]!,
    entries: [...places.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
    mayImport: may.split(",").flatMap((word) => {
      word = word.trim();
      if (word === "—") return [];
      if (word === "every row above") return names.slice(0, index);
      if (word === "every row") return names;
      if (word === "its folder's row" || names.includes(word)) return [word];
      throw new Error(`${DOC}#layers: row ${names[index]} may import "${word}", which names no row`);
    }),
  }));
}

/**
 * How closely an entry of the table names a file: the file itself (a test file: also the file it tests) most,
 * then the longest folder entry holding it (`lib/x/*.ts` only its own files); -1 when it does not.
 */
function closeness(entry: string, file: string): number {
  if (entry === file || entry === file.replace(/\.test\.ts$/, ".ts")) return Number.MAX_SAFE_INTEGER;
  if (entry.endsWith("/*.ts")) return dirname(file) === entry.slice(0, -"/*.ts".length) ? entry.length : -1;
  return entry.endsWith("/") && file.startsWith(entry) ? entry.length : -1;
}

/** The row a file of lib/ belongs to: the one with the closest entry. */
function rowOf(rows: Row[], file: string): Row | undefined {
  let best: { row: Row; rank: number } | undefined;
  for (const row of rows)
    for (const entry of row.entries) {
      const rank = closeness(entry, file);
      if (rank >= 0 && (!best || rank > best.rank)) best = { row, rank };
    }
  return best?.row;
}

/** The rows a file may import: its own and its row's list; a test file (the `*.test.ts` row) those of the tests row. */
function allowedFor(rows: Row[], file: string): { row: Row; allowed: Set<string> } | undefined {
  const row = rowOf(rows, file);
  if (!row) return undefined;
  const own = new Set([row.name, ...row.mayImport]);
  const tests = rows.find((r) => r.entries.some((entry) => entry.endsWith("*.test.ts")));
  if (!file.endsWith(".test.ts") || !tests) return { row, allowed: own };
  return {
    row,
    allowed: new Set(tests.mayImport.flatMap((name) => (name === "its folder's row" ? [...own] : [name]))),
  };
}

/** Each arrow from `file` to a file of lib/ that the rule forbids, as `file:line: a → b (specifier): why`. */
function forbiddenArrows(rows: Row[], file: string, text: string): string[] {
  const from = allowedFor(rows, file);
  if (!from) return [`${file}: in no row of ${DOC}#layers`];
  const found: string[] = [];
  for (const { line, specifier } of importsOf(text)) {
    if (!specifier.startsWith(".")) continue;
    const target = relative(root, join(root, dirname(file), specifier));
    if (!target.startsWith("lib/")) continue;
    const to = rowOf(rows, target);
    if (to && from.allowed.has(to.name)) continue;
    const may = [...from.allowed].filter((name) => name !== from.row.name);
    found.push(
      `${file}:${line}: ${from.row.name} → ${to?.name ?? "no row"} (${specifier}): ` +
        `${file.endsWith(".test.ts") ? "a test in " : ""}${from.row.name} may import ${may.join(", ") || "no other row"}`,
    );
  }
  return found;
}

const KEYWORDS_BEFORE_REGEX = new Set([
  "return",
  "typeof",
  "case",
  "do",
  "else",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "instanceof",
  "yield",
  "await",
]);

/**
 * Every import of a TypeScript text with its line: `import … from "x"`, `export … from "x"`, `import "x"`,
 * `import("x")` and `typeof import("x")`. Comments, strings, template texts and regular expressions are
 * skipped as a tokenizer skips them, so an import written inside a string is not one.
 */
function importsOf(text: string): Array<{ line: number; specifier: string }> {
  const tokens: Array<{ kind: "word" | "string" | "punct" | "other"; value: string; at: number }> = [];
  const templates: number[] = []; // open `${` braces of each template being read
  let i = 0;
  const readTemplate = () => {
    // i is just past a backtick or a substitution's closing brace
    while (i < text.length && text[i] !== "`") {
      if (text[i] === "\\") i += 2;
      else if (text[i] === "$" && text[i + 1] === "{") {
        templates.push(0);
        i += 2;
        return;
      } else i++;
    }
    i++;
    tokens.push({ kind: "other", value: "`", at: i });
  };
  while (i < text.length) {
    const c = text[i]!;
    const previous = tokens.at(-1);
    if (/\s/.test(c)) i++;
    else if (text.startsWith("//", i)) i = text.indexOf("\n", i) === -1 ? text.length : text.indexOf("\n", i);
    else if (text.startsWith("/*", i))
      i = text.indexOf("*/", i + 2) === -1 ? text.length : text.indexOf("*/", i + 2) + 2;
    else if (c === '"' || c === "'") {
      const at = i++;
      let value = "";
      for (; i < text.length && text[i] !== c; i++) {
        if (text[i] === "\\") i++;
        value += text[i];
      }
      i++;
      tokens.push({ kind: "string", value, at });
    } else if (c === "`") {
      i++;
      readTemplate();
    } else if (/[A-Za-z_$0-9]/.test(c)) {
      const at = i;
      while (i < text.length && /[\w$]/.test(text[i]!)) i++;
      tokens.push({ kind: "word", value: text.slice(at, i), at });
    } else if (
      c === "/" &&
      !(previous?.kind === "word" && !KEYWORDS_BEFORE_REGEX.has(previous.value)) &&
      previous?.kind !== "string" &&
      previous?.kind !== "other" &&
      !(previous?.kind === "punct" && /[)\]}]/.test(previous.value))
    ) {
      // a regular expression: up to the closing slash outside a character class, then its flags
      let inClass = false;
      for (i++; i < text.length && (inClass || text[i] !== "/"); i++) {
        if (text[i] === "\\") i++;
        else if (text[i] === "[") inClass = true;
        else if (text[i] === "]") inClass = false;
      }
      for (i++; /[a-z]/.test(text[i] ?? ""); i++);
      tokens.push({ kind: "other", value: "/re/", at: i });
    } else {
      if (c === "{" && templates.length) templates[templates.length - 1]!++;
      if (c === "}" && templates.length && templates.at(-1) === 0) {
        templates.pop();
        i++;
        readTemplate();
        continue;
      }
      if (c === "}" && templates.length) templates[templates.length - 1]!--;
      tokens.push({ kind: "punct", value: c, at: i++ });
    }
  }
  const lineAt = (at: number) => text.slice(0, at).split("\n").length;
  const found: Array<{ line: number; specifier: string }> = [];
  tokens.forEach((token, index) => {
    const next = tokens[index + 1];
    const afterParen = tokens[index + 2];
    if (token.kind !== "word" || !next) return;
    if ((token.value === "from" || token.value === "import") && next.kind === "string")
      found.push({ line: lineAt(next.at), specifier: next.value });
    else if (token.value === "import" && next.value === "(" && afterParen?.kind === "string")
      found.push({ line: lineAt(afterParen.at), specifier: afterParen.value });
  });
  return found;
}

/** Every .ts file under a folder of the repository, as a path from the root. */
function typescriptFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? typescriptFiles(`${folder}/${entry.name}`)
      : entry.name.endsWith(".ts")
        ? [`${folder}/${entry.name}`]
        : [],
  );
}

const rows = () => readLayerTable(readFileSync(join(root, DOC), "utf8"));
const LIB = typescriptFiles("lib");

describe("the layer rule of docs/architecture.md", () => {
  test("every import in lib/ stays in its row or points to a row its row may import", () => {
    const table = rows();
    expect(LIB.flatMap((file) => forbiddenArrows(table, file, readFileSync(join(root, file), "utf8")))).toEqual([]);
  });

  test("the table names a row for every TypeScript file in lib/, so a new folder or top-level file must be placed", () => {
    const table = rows();
    expect(LIB.filter((file) => !rowOf(table, file))).toEqual([]);
  });

  test("every folder of lib/ has a README.md of at most 8 lines that links to the rule instead of restating it", () => {
    const folders = [...new Set(LIB.map((file) => dirname(file)))].filter((folder) => folder !== "lib");
    const lacking = folders.filter((folder) => {
      const path = join(root, folder, "README.md");
      if (!existsSync(path)) return true;
      const text = readFileSync(path, "utf8");
      const links = [...text.matchAll(/\]\(([^)#]+)#layers\)/g)].map((m) => relative(root, join(root, folder, m[1]!)));
      return !links.includes(DOC) || text.trimEnd().split("\n").length > 8;
    });
    expect(lacking).toEqual([]);
  });

  test("every folder and file the table names exists", () => {
    const named = rows().flatMap((row) => row.entries.filter((entry) => !entry.includes("**")));
    expect(named.filter((entry) => !existsSync(join(root, entry.replace(/\*\.ts$/, ""))))).toEqual([]);
  });

  test("the rule as read forbids an arrow up, an arrow between adapters and lib/testing/ outside tests", () => {
    const table = rows();
    const arrows = (file: string, specifier: string) =>
      forbiddenArrows(table, file, `import type { X } from "${specifier}";`).length;
    expect({
      nodeToConfig: arrows("lib/node/cm/placement.ts", "../../config/config-types.ts"),
      containerToNode: arrows("lib/container/container-config.ts", "../node/network/hosts.ts"),
      memoryToDocker: arrows("lib/container/memory/memory-runtime.ts", "../docker/docker-shim.ts"),
      portToCri: arrows("lib/container/runtime.ts", "./cri/cri.ts"),
      syncToTesting: arrows("lib/sync/pod-plan.ts", "../testing/pods.ts"),
      apiToSources: arrows("lib/api/types.ts", "../sources/store.ts"),
    }).toEqual({
      nodeToConfig: 1,
      containerToNode: 1,
      memoryToDocker: 1,
      portToCri: 1,
      syncToTesting: 1,
      apiToSources: 1,
    });
    expect({
      configToNode: arrows("lib/config/config.ts", "../node/eviction/eviction-thresholds.ts"),
      syncToSources: arrows("lib/sync/sync-loop.ts", "../sources/store.ts"),
      criToPleg: arrows("lib/container/cri/cri.ts", "../pleg/generic.ts"),
      nodeManagers: arrows("lib/node/eviction/eviction.ts", "../stats/stats-analyzer.ts"),
      testToTesting: arrows("lib/sync/pod-plan.test.ts", "../testing/pods.ts"),
      testingToAll: arrows("lib/testing/pods.ts", "../kubelet.ts"),
      packages: arrows("lib/sync/pod-plan.ts", "node:path"),
    }).toEqual({
      configToNode: 0,
      syncToSources: 0,
      criToPleg: 0,
      nodeManagers: 0,
      testToTesting: 0,
      testingToAll: 0,
      packages: 0,
    });
  });

  test("a forbidden arrow is reported with its file, line, rows and what the row may import", () => {
    const table = rows();
    expect(forbiddenArrows(table, "lib/api/x.ts", '// one\nimport { a } from "../sync/pod-plan.ts";\n')).toEqual([
      "lib/api/x.ts:2: base → sync (../sync/pod-plan.ts): base may import no other row",
    ]);
  });

  test("a word in the table's last column that names no row is refused", () => {
    const table = "## Layers\n\n| layer | folders | may import |\n|---|---|---|\n| a | `lib/a/` | everything |\n";
    expect(() => readLayerTable(table)).toThrow('row a may import "everything", which names no row');
  });
});

describe("the import reader", () => {
  test("finds static, re-exported, side-effect, dynamic and type-position imports with their lines", () => {
    const source = [
      'import { a } from "./a.ts";',
      "import type {",
      "  B,",
      '} from "./b.ts";',
      'export { c } from "./c.ts";',
      'import "./d.ts";',
      'const e = await import("./e.ts");',
      'type F = typeof import("./f.ts");',
    ].join("\n");
    expect(importsOf(source)).toEqual([
      { line: 1, specifier: "./a.ts" },
      { line: 4, specifier: "./b.ts" },
      { line: 5, specifier: "./c.ts" },
      { line: 6, specifier: "./d.ts" },
      { line: 7, specifier: "./e.ts" },
      { line: 8, specifier: "./f.ts" },
    ]);
  });

  test("finds none in comments, strings, template texts or regular expressions, but one in a template's substitution", () => {
    const source = [
      '// import { a } from "./a.ts";',
      '/* export { b } from "./b.ts"; */',
      "const c = 'import(\"./c.ts\")';",
      'const d = `await import("./d.ts") ${await import("./e.ts")} import "./f.ts"`;',
      'const g = /from "\\.\\/g.ts"/;',
      'const h = x / 2; const i = `${{ j: 1 }.j}`; import("./k.ts");',
    ].join("\n");
    expect(importsOf(source)).toEqual([
      { line: 4, specifier: "./e.ts" },
      { line: 6, specifier: "./k.ts" },
    ]);
  });
});
