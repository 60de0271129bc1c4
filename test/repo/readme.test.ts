// The README and docs/ hold together: every relative link and anchor resolves, the generated
// configuration tables are the ones the code's tables give, and the README stays a landing page.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { GENERATED_DOC, readmeConfigSection, readmeKeysSection, regenerate } from "../../lib/config/readme.ts";

const root = join(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");

/** The documents a reader follows links through: the README, docs/, CONTRIBUTING.md, bench/README.md. */
const DOCUMENTS = [
  "README.md",
  "CONTRIBUTING.md",
  "bench/README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** The text a reader sees as prose: fenced and indented code blocks and inline code left out. */
function prose(markdown: string): string {
  let fenced = false;
  const lines = markdown.split("\n").filter((line) => {
    if (line.startsWith("```")) fenced = !fenced;
    return !fenced && !line.startsWith("```") && !line.startsWith("    ");
  });
  return lines.join("\n").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for each heading of a document, `-1`, `-2` … for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** Every relative link of a document that does not resolve, as `file: target (why)`. */
function brokenLinks(path: string, markdown = read(path)): string[] {
  const broken: string[] = [];
  for (const [, target] of prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [file, anchor] = target.split("#") as [string, string | undefined];
    const resolved = file === "" ? path : relative(root, join(root, dirname(path), file));
    if (!existsSync(join(root, resolved))) {
      broken.push(`${path}: ${target} (no file ${resolved})`);
    } else if (anchor !== undefined && statSync(join(root, resolved)).isFile() && resolved.endsWith(".md")) {
      if (!anchors(read(resolved)).has(anchor))
        broken.push(`${path}: ${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  return broken;
}

describe("the documentation's links", () => {
  test("every relative link of the README, docs/, CONTRIBUTING.md and bench/README.md names a file that exists and a heading it has", () => {
    expect(DOCUMENTS.flatMap((path) => brokenLinks(path))).toEqual([]);
  });

  test("a heading's anchor is GitHub's: lower case, punctuation and code marks dropped, spaces as hyphens, repeats numbered", () => {
    const found = anchors(
      "# `kubelet plan`\n## The info server's routes\n## Tests\n```\n# not a heading\n```\n## Tests\n",
    );
    expect([...found]).toEqual(["kubelet-plan", "the-info-servers-routes", "tests", "tests-1"]);
  });

  test("a link to a missing file or heading is reported with its document; URLs and code are not links", () => {
    const markdown =
      "[ok](../README.md#the-cli) [gone](missing.md) [typo](../README.md#the-clii) [here](#nope)\n" +
      "[web](https://example.com/x.md) `[code](nope.md)`\n\n    [indented](nope.md)\n";
    expect(brokenLinks("docs/x.md", markdown)).toEqual([
      "docs/x.md: missing.md (no file docs/missing.md)",
      "docs/x.md: ../README.md#the-clii (no heading #the-clii in README.md)",
      "docs/x.md: #nope (no file docs/x.md)",
    ]);
  });
});

describe("the generated configuration tables", () => {
  test(`${GENERATED_DOC} lists every KubeletConfiguration field as the code treats it (bun scripts/readme-config.ts)`, () => {
    expect(read(GENERATED_DOC)).toContain(readmeConfigSection());
  });

  test(`${GENERATED_DOC} lists every config file key with its default, as the code has them (bun scripts/readme-config.ts)`, () => {
    expect(read(GENERATED_DOC)).toContain(readmeKeysSection());
  });

  test("regenerating a document without the markers fails naming them", () => {
    expect(() => regenerate("# no tables here\n")).toThrow("lacks <!-- kubelet-configuration:start");
  });
});

describe("the README", () => {
  test("is at most 15 KB: a landing page, the rest in docs/", () => {
    expect(Buffer.byteLength(read("README.md"))).toBeLessThanOrEqual(15 * 1024);
  });

  test("keeps its two commands: install and run the example pods, install what the tests need and run them (npm test)", () => {
    const readme = read("README.md");
    expect(readme).toContain("    sudo bash scripts/install-from-source.sh && sudo kubelet runonce -c testdata/pods\n");
    expect(readme).toContain("    sudo npm ci && sudo npm test\n");
    expect(existsSync(join(root, "scripts/install-from-source.sh"))).toBe(true);
    expect(existsSync(join(root, "testdata/pods"))).toBe(true);
    expect(JSON.parse(read("package.json")).scripts.test).toBe("bash scripts/test.sh");
  });
});
